package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRecordEncoding: a record reads back as it was written, and no part of one reads as a
// record, nor one with a byte after it.
func TestRecordEncoding(t *testing.T) {
	records := []Record{
		{Seq: 1, OrgID: tOrg, UserID: "u-0", ResourceID: tR0},
		{Seq: 1 << 40, OrgID: tOrg, UserID: "a\x00b", ResourceID: tR1, Changed: true, Held: true, CreatedAt: 1767225600000, ExpiresAt: -1,
			Events: []Event{
				{OrgID: tOrg, ID: "e-1", UserID: "a\x00b", SvcID: tR1, Data: []byte(`{"id":"e-1"}`)},
				{OrgID: tOrg, ID: "e-2", Data: []byte(`{}`)},
			}},
		{Seq: 7, OrgID: tOrg, UserID: "u-0", ResourceID: tR0, Changed: true},
	}
	for _, want := range records {
		b := want.appendTo(nil)
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatalf("decode %+v: %v", want, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
		for n := range len(b) {
			if _, err := decodeRecord(b[:n]); err == nil {
				t.Errorf("the first %d of %d bytes of %+v decoded as a record", n, len(b), want)
			}
		}
		if _, err := decodeRecord(append(b, 0)); err == nil {
			t.Errorf("%+v with a byte after it decoded as a record", want)
		}
		b[0] = recordFormat + 1
		if _, err := decodeRecord(b); err == nil {
			t.Errorf("%+v of another format decoded as a record", want)
		}
	}
}

// TestReadFileEndsAtTheTurnBefore: a file's records are read while each is whole, of this
// format and next in sequence; the first that is not is where the file was last written up to.
func TestReadFileEndsAtTheTurnBefore(t *testing.T) {
	frame := func(payload []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		return append(binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli)), payload...)
	}
	rec := func(seq uint64) []byte {
		return appendFrame(nil, &Record{Seq: seq, OrgID: tOrg, UserID: "u-0", ResourceID: tR0, Changed: true})
	}
	otherFormat := rec(9)
	otherFormat[frameHead] = recordFormat + 1 // the payload's first byte
	otherFormat = frame(otherFormat[frameHead:])
	damaged := rec(6)
	damaged[len(damaged)-1] ^= 0xff
	tests := []struct {
		name string
		file [][]byte
		want []uint64
	}{
		{"records then zeros", [][]byte{rec(3), rec(4), make([]byte, 64)}, []uint64{3, 4}},
		{"records then an earlier turn's", [][]byte{rec(7), rec(8), rec(2), rec(3)}, []uint64{7, 8}},
		{"records then one of another format", [][]byte{rec(7), otherFormat, rec(10)}, []uint64{7}},
		{"records then JSON", [][]byte{rec(7), frame([]byte(`{"seq":1}`)), rec(10)}, []uint64{7}},
		{"records then one of the same number", [][]byte{rec(7), rec(7)}, []uint64{7}},
		{"a record cut short", [][]byte{rec(5), rec(6)[:20]}, []uint64{5}},
		{"a record that fails its checksum", [][]byte{rec(5), damaged}, []uint64{5}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := readFile(bufio.NewReader(bytes.NewReader(bytes.Join(tt.file, nil))))
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, r := range recs {
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzDecodeRecord: any bytes to the record decoder never panic; what decodes re-encodes to
// bytes that decode to the same record; and a record made of the input's bytes, field by
// field, decodes back as it was.
func FuzzDecodeRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := decodeRecord(data); err == nil {
			again, err := decodeRecord(r.appendTo(nil))
			if err != nil {
				t.Fatalf("%+v, decoded from %q, re-encoded does not decode: %v", r, data, err)
			}
			if diff := cmp.Diff(r, again, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%q decoded, re-encoded and decoded again (-first +again):\n%s", data, diff)
			}
		}
		want := recordOf(data)
		got, err := decodeRecord(want.appendTo(nil))
		if err != nil {
			t.Fatalf("%+v, encoded, does not decode: %v", want, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("encoded and decoded (-want +got):\n%s", diff)
		}
	})
}

// recordOf makes a record of data's bytes, field by field, so that every input the fuzzer
// tries is also a record of some shape to encode.
func recordOf(data []byte) Record {
	take := func(n int) []byte {
		n = min(n, len(data))
		b := data[:n]
		data = data[n:]
		return b
	}
	number := func() uint64 {
		var b [8]byte
		copy(b[:], take(8))
		return binary.BigEndian.Uint64(b[:])
	}
	small := func() int {
		if b := take(1); len(b) == 1 {
			return int(b[0])
		}
		return 0
	}
	text := func() string { return string(take(small() % 64)) }
	r := Record{Seq: number(), CreatedAt: int64(number()), ExpiresAt: int64(number())}
	flags := small()
	r.Changed, r.Held = flags&1 != 0, flags&2 != 0
	r.OrgID, r.UserID, r.ResourceID = text(), text(), text()
	for range small() % 4 {
		r.Events = append(r.Events, Event{OrgID: text(), ID: text(), UserID: text(), SvcID: text(), Data: []byte(text())})
	}
	return r
}
