package api

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestDecodeCheckFast(t *testing.T) {
	const id = "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"
	tests := []struct {
		body string
		want accessRequest
		ok   bool
	}{
		{`{"user_id":"ada","svc_id":"` + id + `"}`, accessRequest{"ada", id}, true},
		{" {\n\t\"svc_id\" : \"" + id + "\" , \"user_id\":\"ada\" }\r\n", accessRequest{"ada", id}, true},
		{`{"user_id":"Zoë","svc_id":"` + strings.ToUpper(id) + `"}`, accessRequest{"Zoë", strings.ToUpper(id)}, true},
		// Everything else goes to the full decoder, which reports problems.
		{`{"user_id":"ada"}`, accessRequest{}, false},
		{`{}`, accessRequest{}, false},
		{`{"user_id":"","svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"user_id":"` + strings.Repeat("a", 257) + `","svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"user_id":"ada","svc_id":"nope"}`, accessRequest{}, false},
		{`{"user_id":"a\"da","svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"user_id":"ada","svc_id":"` + id + `","extra":1}`, accessRequest{}, false},
		{`{"user_id":"ada","user_id":"bob","svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"USER_ID":"ada","svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"user_id":7,"svc_id":"` + id + `"}`, accessRequest{}, false},
		{`{"user_id":"ada","svc_id":"` + id + `"} x`, accessRequest{}, false},
		{`{"user_id":"ada","svc_id":"` + id + `"`, accessRequest{}, false},
		{"{\"user_id\":\"a\xffa\",\"svc_id\":\"" + id + "\"}", accessRequest{}, false},
		{"{\"user_id\":\"a\tb\",\"svc_id\":\"" + id + "\"}", accessRequest{}, false},
		{``, accessRequest{}, false},
	}
	for _, tc := range tests {
		got, ok := decodeCheckFast([]byte(tc.body))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("decodeCheckFast(%q) = %+v, %v; want %+v, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzDecodeCheckFast: whatever the fast decoder accepts, the full decoder accepts too, with
// the same values; so taking the fast path never changes an answer.
func FuzzDecodeCheckFast(f *testing.F) {
	for _, s := range []string{
		`{"user_id":"ada","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`,
		` {"svc_id" : "0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01","user_id":"x"} `,
		`{"user_id":"a","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01","user_id":"b"}`,
		`{"user_id":"\u00e9","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`,
	} {
		f.Add([]byte(s))
	}
	v := newValidator()
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := decodeCheckFast(body)
		if !ok {
			return
		}
		var full accessRequest
		if err := decodeBody(v, body, &full); err != nil {
			t.Fatalf("fast path accepted %q, the full decoder refused it: %v", body, err)
		}
		if fast != full {
			t.Fatalf("fast path read %q as %+v, the full decoder as %+v", body, fast, full)
		}
	})
}

func TestDecodeCheckAllFast(t *testing.T) {
	const a, b = "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01", "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"
	many := `"` + strings.Repeat(a+`","`, 1000) + a + `"`
	tests := []struct {
		body string
		want accessAllRequest
		ok   bool
	}{
		{`{"user_id":"ada","tags":["` + a + `","` + b + `"]}`, accessAllRequest{"ada", []string{a, b}}, true},
		{` { "tags" : [ "` + a + `" ] , "user_id" : "ada" } `, accessAllRequest{"ada", []string{a}}, true},
		// Tags come back canonical, as the full path makes them.
		{`{"user_id":"ada","tags":["` + strings.ToUpper(a) + `","` + b + `"]}`, accessAllRequest{"ada", []string{a, b}}, true},
		// Much white space after few tags: the ids are copied out of the scanner's buffer
		// rather than sharing it.
		{`{"user_id":"ada","tags":["` + a + `",` + strings.Repeat(" ", 500) + `"` + strings.ToUpper(b) + `"` + strings.Repeat("\n", 500) + `]}`, accessAllRequest{"ada", []string{a, b}}, true},
		// Everything else goes to the full decoder, which reports problems.
		{`{"user_id":"ada","tags":[]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":[` + many + `]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["nope"]}`, accessAllRequest{}, false},
		// A hyphen where a digit belongs, a digit where a hyphen belongs, white space inside
		// the quotes, a digit out of range, and the thousandth-and-first tag cut short.
		{`{"user_id":"ada","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a0-"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["0b6f1a5206a51-4c59-9a43-3c1f4f2f6a01"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":[" 0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a0"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a0g"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":[` + many[:len(many)-10] + `]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["` + a + `"`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":"` + a + `"}`, accessAllRequest{}, false},
		{`{"user_id":["ada"],"tags":["` + a + `"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["` + a + `",]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["` + a + `" "` + b + `"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":["` + a + `"],"tags":["` + b + `"]}`, accessAllRequest{}, false},
		{`{"user_id":"ada","tags":[7]}`, accessAllRequest{}, false},
		{`{"user_id":"ada"}`, accessAllRequest{}, false},
		{`{"user_id":"ada","svc_id":"` + a + `"}`, accessAllRequest{}, false},
	}
	for _, tc := range tests {
		got, ok := decodeCheckAllFast([]byte(tc.body))
		if ok != tc.ok || (ok && (got.UserID != tc.want.UserID || strings.Join(got.Tags, ",") != strings.Join(tc.want.Tags, ","))) {
			t.Errorf("decodeCheckAllFast(%.80q) = %+v, %v; want %+v, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzDecodeCheckAllFast: whatever the fast decoder accepts, the full decoder accepts with the
// same values (tags in canonical form).
func FuzzDecodeCheckAllFast(f *testing.F) {
	for _, s := range []string{
		`{"user_id":"ada","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"]}`,
		` {"tags" : [ "0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01" , "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"],"user_id":"x"} `,
		`{"user_id":"a","tags":[]}`,
	} {
		f.Add([]byte(s))
	}
	v := newValidator()
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		fast, ok := decodeCheckAllFast(body)
		// The fast path puts tags in canonical form where they lie in body: whether it
		// accepted body or not, the full decoder must read body as it read the original.
		var before, after accessAllRequest
		errBefore, errAfter := decodeBody(v, orig, &before), decodeBody(v, body, &after)
		if fmt.Sprint(errBefore) != fmt.Sprint(errAfter) {
			t.Fatalf("after the fast path, the full decoder read %q as %v, the original as %v", body, errAfter, errBefore)
		}
		for i := range before.Tags {
			before.Tags[i] = canonicalID(before.Tags[i])
		}
		for i := range after.Tags {
			after.Tags[i] = canonicalID(after.Tags[i])
		}
		if before.UserID != after.UserID || !slices.Equal(before.Tags, after.Tags) {
			t.Fatalf("after the fast path, the full decoder read %q as %+v, the original as %+v", body, after, before)
		}
		if !ok {
			return
		}
		var full accessAllRequest
		if err := decodeBody(v, body, &full); err != nil {
			t.Fatalf("fast path accepted %q, the full decoder refused it: %v", body, err)
		}
		for i, tag := range full.Tags {
			full.Tags[i] = canonicalID(tag)
		}
		if fast.UserID != full.UserID || strings.Join(fast.Tags, "\x00") != strings.Join(full.Tags, "\x00") {
			t.Fatalf("fast path read %q as %+v, the full decoder as %+v", body, fast, full)
		}
	})
}

// TestScanUUIDsKeepsNothingOfTheBody: the tags share a string of their own, in a slice of
// their number, since a remembered decision keeps them (and whatever they point into) alive.
func TestScanUUIDsKeepsNothingOfTheBody(t *testing.T) {
	const id = "0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01"
	tests := []struct{ name, body string }{
		{"mostly tags", `{"user_id":"u","tags":["` + id + `", "` + id + `"]}`},
		{"mostly white space", `{"user_id":"u","tags":["` + id + `"` + strings.Repeat(" ", 10000) + `]}`},
		{"mostly user id", `{"user_id":"` + strings.Repeat("u", 100) + `","tags":["` + id + `"]}`},
	}
	for _, tt := range tests {
		body := []byte(tt.body)
		req, ok := decodeCheckAllFast(body)
		if !ok {
			t.Fatalf("%s: refused", tt.name)
		}
		if string(body) != tt.body {
			t.Errorf("%s: the body was changed to %q", tt.name, body)
		}
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(body))), uintptr(unsafe.Pointer(unsafe.SliceData(body)))+uintptr(len(body))
		for _, tag := range req.Tags {
			if tag != strings.ToLower(id) {
				t.Fatalf("%s: tag %q, want it in canonical form", tt.name, tag)
			}
			if p := uintptr(unsafe.Pointer(unsafe.StringData(tag))); p >= lo && p < hi {
				t.Errorf("%s: tag %q lies in the body's bytes", tt.name, tag)
			}
		}
		if cap(req.Tags) != len(req.Tags) {
			t.Errorf("%s: %d tags in a slice of capacity %d", tt.name, len(req.Tags), cap(req.Tags))
		}
	}
}

// lowerByTable is what lowerUUIDBytes must do, a byte at a time: each hexadecimal digit of
// either case in lower case, a hyphen kept and counted, and anything else refused.
func lowerByTable(src [36]byte) (dst [36]byte, ok bool, hyphens int) {
	for k, c := range src {
		switch {
		case c == '-':
			dst[k] = c
			hyphens++
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			dst[k] = c
		case c >= 'A' && c <= 'F':
			dst[k] = c + 'a' - 'A'
		default:
			return dst, false, 0
		}
	}
	return dst, true, hyphens
}

// TestLowerUUIDBytes tries every byte value at every position of a UUID against the byte-at-a-
// time rule: the word-at-a-time code must accept exactly the same and lower them the same way.
func TestLowerUUIDBytes(t *testing.T) {
	for _, base := range []string{"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01", "ABCDEFab-cdef-0123-4567-89ABCDEF0000", "------------------------------------"} {
		for pos := range 36 {
			for v := range 256 {
				var src, got [36]byte
				copy(src[:], base)
				src[pos] = byte(v)
				want, wantOK, wantHyphens := lowerByTable(src)
				ok, hyphens := lowerUUIDBytes(&got, &src)
				if ok != wantOK || (ok && (got != want || hyphens != wantHyphens)) {
					t.Fatalf("lowerUUIDBytes(%q) = %q, %v, %d; want %q, %v, %d", src[:], got[:], ok, hyphens, want[:], wantOK, wantHyphens)
				}
			}
		}
	}
}

// FuzzLowerUUIDBytes compares the two on any 36 bytes.
func FuzzLowerUUIDBytes(f *testing.F) {
	f.Add([]byte("0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"))
	f.Add([]byte("\x0d\x10\x19\x80\xff\x7f GgZz:;@[`{/-ABCDEF0123456789abcdef--"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 36 {
			return
		}
		src := [36]byte(b[:36])
		var got [36]byte
		want, wantOK, wantHyphens := lowerByTable(src)
		if ok, hyphens := lowerUUIDBytes(&got, &src); ok != wantOK || (ok && (got != want || hyphens != wantHyphens)) {
			t.Fatalf("lowerUUIDBytes(%q) = %q, %v, %d; want %q, %v, %d", src[:], got[:], ok, hyphens, want[:], wantOK, wantHyphens)
		}
	})
}

// BenchmarkDecodeCheckAllFast measures decoding a can_user_access_all body of 100 tags.
func BenchmarkDecodeCheckAllFast(b *testing.B) {
	tags := make([]string, 100)
	for i := range tags {
		tags[i] = fmt.Sprintf(`"0B6F1A52-6A51-4C59-9A43-%012X"`, i)
	}
	body := []byte(`{"user_id":"ada","tags":[` + strings.Join(tags, ",") + `]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeCheckAllFast(body); !ok {
			b.Fatal("refused")
		}
	}
}
