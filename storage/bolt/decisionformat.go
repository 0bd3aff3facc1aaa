package bolt

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// A decision is stored in a compact binary form: every access check writes one, so its size
// is most of the decision log's pages to write and of its disk. The value takes a fraction of
// the bytes of its JSON: ids are already in the key, and UUIDs and the policy revision's
// hexadecimal digits are kept as the bytes they spell.
//
// The value is decisionFormat, then the time (milliseconds) and the duration (µs) as varints,
// a byte of flags, the request id, the API key id, the endpoint, the user id and the policy
// revision as packed strings, and the count of resource ids as a uvarint followed by each one
// as a packed string. Values written before this form are JSON objects and begin with '{':
// both are read.
//
// Since the decision log writes its batches as blocks (decisions.go), a value holds many
// decisions: decisionBlockFormat, their count as a uvarint, then for each, newest first, its id
// and its value in the compact form above, each as a uvarint length and the bytes. A value that
// begins otherwise holds one decision, whose id is the key's.
const (
	decisionFormat      = 0x01
	decisionBlockFormat = 0x02
)

// Flags of a decision's value.
const (
	flagAllowed    = 1 << iota
	flagNoResource // ResourceIDs is nil, not empty
)

// The forms of a packed string, in the low two bits of its header.
const (
	packedRaw  = iota // the string's bytes as they are
	packedUUID        // a UUID in canonical lower-case form: its 16 bytes
	packedHex         // lower-case hexadecimal digits, an even number of them: the bytes they spell
)

// appendBinary appends the record's value in the compact form. Its ID and OrgID are not in it:
// the key holds them.
func (r decisionRecord) appendBinary(b []byte) []byte {
	b = append(b, decisionFormat)
	b = binary.AppendVarint(b, r.Time)
	b = binary.AppendVarint(b, r.DurationMicros)
	var flags byte
	if r.Allowed {
		flags |= flagAllowed
	}
	if r.ResourceIDs == nil {
		flags |= flagNoResource
	}
	b = append(b, flags)
	for _, s := range [...]string{r.RequestID, r.APIKeyID, r.Endpoint, r.UserID, r.PolicyRevision} {
		b = appendPacked(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(r.ResourceIDs)))
	for _, id := range r.ResourceIDs {
		b = appendPacked(b, id)
	}
	return b
}

// appendPacked appends s as a header, uvarint(len(s)<<2 | form), and the bytes of its form. A
// string has exactly one packing, so a value that holds s holds appendPacked(nil, s).
func appendPacked(b []byte, s string) []byte {
	n := len(b)
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		b = binary.AppendUvarint(b, 36<<2|packedUUID)
		ok := true
		for _, part := range [...]string{s[0:8], s[9:13], s[14:18], s[19:23], s[24:36]} {
			if b, ok = appendHexBytes(b, part); !ok {
				break
			}
		}
		if ok {
			return b
		}
		b = b[:n]
	}
	if len(s) > 0 && len(s)%2 == 0 {
		var ok bool
		if b, ok = appendHexBytes(binary.AppendUvarint(b, uint64(len(s))<<2|packedHex), s); ok {
			return b
		}
		b = b[:n]
	}
	b = binary.AppendUvarint(b, uint64(len(s))<<2|packedRaw)
	return append(b, s...)
}

// appendHexBytes appends the bytes that s, an even number of lower-case hexadecimal digits,
// spells, and reports whether s is that: if not, what it appended is of no use.
func appendHexBytes(b []byte, s string) ([]byte, bool) {
	for i := 0; i+1 < len(s); i += 2 {
		hi, lo := nibbles[s[i]], nibbles[s[i+1]]
		if hi|lo > 0xf {
			return b, false
		}
		b = append(b, hi<<4|lo)
	}
	return b, len(s)%2 == 0
}

// nibbles maps each lower-case hexadecimal digit to its value and every other byte to 0xff.
var nibbles = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

var errDecisionValue = errors.New("not a decision value")

// readDecision decodes the value of the decision id of organization org, in either form.
func readDecision(org, id string, data []byte) (decisionRecord, error) {
	var r decisionRecord
	if len(data) > 0 && data[0] == '{' {
		if err := json.Unmarshal(data, &r); err != nil {
			return r, fmt.Errorf("decode decision %s: %w", id, err)
		}
		return r, nil
	}
	r.ID, r.OrgID = id, org
	d := decoder{b: data, ok: true}
	if d.byte() != decisionFormat {
		return r, fmt.Errorf("decode decision %s: %w", id, errDecisionValue)
	}
	r.Time = d.varint()
	r.DurationMicros = d.varint()
	flags := d.byte()
	r.Allowed = flags&flagAllowed != 0
	for _, s := range [...]*string{&r.RequestID, &r.APIKeyID, &r.Endpoint, &r.UserID, &r.PolicyRevision} {
		*s = d.packed()
	}
	n := d.uvarint()
	switch {
	case flags&flagNoResource != 0:
		if n != 0 {
			d.fail()
		}
	case n > uint64(len(d.b)): // each id takes a byte at least
		d.fail()
	default:
		r.ResourceIDs = make([]string, n)
		for i := range r.ResourceIDs {
			r.ResourceIDs[i] = d.packed()
		}
	}
	if !d.ok || len(d.b) != 0 || flags&^(flagAllowed|flagNoResource) != 0 {
		return decisionRecord{}, fmt.Errorf("decode decision %s: %w", id, errDecisionValue)
	}
	return r, nil
}

// decoder reads a decision's value from the front of b. Past the first problem, ok is false and
// every read yields a zero value.
type decoder struct {
	b  []byte
	ok bool
}

func (d *decoder) fail() {
	d.b, d.ok = nil, false
}

// take returns the next n bytes, or nil, failing, if fewer are left.
func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	data := d.b[:n]
	d.b = d.b[n:]
	return data
}

func (d *decoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) varint() int64 { return number(d, binary.Varint) }

func (d *decoder) uvarint() uint64 { return number(d, binary.Uvarint) }

// number reads a varint or uvarint, as read decodes it.
func number[T int64 | uint64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// packed reads a string appendPacked wrote.
func (d *decoder) packed() string {
	h := d.uvarint()
	size := h >> 2
	switch form := h & 3; {
	case !d.ok:
		return ""
	case form == packedRaw:
		return string(d.take(size))
	case form == packedUUID && size == 36:
		data := d.take(16)
		if data == nil {
			return ""
		}
		var u [36]byte
		hex.Encode(u[0:8], data[0:4])
		hex.Encode(u[9:13], data[4:6])
		hex.Encode(u[14:18], data[6:8])
		hex.Encode(u[19:23], data[8:10])
		hex.Encode(u[24:36], data[10:16])
		u[8], u[13], u[18], u[23] = '-', '-', '-', '-'
		return string(u[:])
	case form == packedHex && size > 0 && size%2 == 0:
		return hex.EncodeToString(d.take(size / 2))
	}
	d.fail()
	return ""
}

// decisionEntry is one decision of a stored value: its id, and its value in one of the forms
// readDecision reads.
type decisionEntry struct {
	id  string
	rec []byte
}

// appendBlock appends the value of a block of entries, which must be newest first.
func appendBlock(b []byte, entries []decisionEntry) []byte {
	n := 1 + binary.MaxVarintLen64
	for _, e := range entries {
		n += 2*binary.MaxVarintLen64 + len(e.id) + len(e.rec)
	}
	b = slices.Grow(b, n)
	b = append(b, decisionBlockFormat)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.id)))
		b = append(b, e.id...)
		b = binary.AppendUvarint(b, uint64(len(e.rec)))
		b = append(b, e.rec...)
	}
	return b
}

// readEntries appends to dst the decisions of the value v stored under the id keyID, newest
// first: a block's, or the one decision of any other value. A block whose first decision is not
// keyID's, or whose ids do not fall, is refused, so that a damaged block is never read as a
// part of the log it is not. The entries point into v.
func readEntries(keyID string, v []byte, dst []decisionEntry) ([]decisionEntry, error) {
	if len(v) == 0 || v[0] != decisionBlockFormat {
		return append(dst, decisionEntry{id: keyID, rec: v}), nil
	}
	d := decoder{b: v[1:], ok: true}
	n := d.uvarint()
	if n == 0 || n > uint64(len(d.b)) { // each entry takes two bytes at least
		d.fail()
	}
	first := len(dst)
	for i := uint64(0); d.ok && i < n; i++ {
		id := string(d.take(d.uvarint()))
		rec := d.take(d.uvarint())
		if !d.ok || len(rec) == 0 {
			d.fail()
			break
		}
		if i == 0 && id != keyID || i > 0 && id >= dst[len(dst)-1].id {
			d.fail()
			break
		}
		dst = append(dst, decisionEntry{id: id, rec: rec})
	}
	if !d.ok || len(d.b) != 0 {
		return dst[:first], fmt.Errorf("decode decisions up to %s: %w", keyID, errDecisionValue)
	}
	return dst, nil
}
