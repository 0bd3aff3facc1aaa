package api

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// FuzzDecodeBody feeds untrusted bytes to the request decoder: it must never panic, must accept
// only bodies that meet every constraint, must explain every refusal in the FastAPI shape, and
// must refuse text that is not UTF-8 as json_invalid at the byte where it fails, never read it
// as U+FFFD.
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `"x"`, `{"user_id":"u","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"]}`,
		`{"user_id":1,"tags":[1,null,{}]}`, `{"user_id":"","tags":[]}`, `{"user_id":"u","tags":"x"}`,
		`{"user_id":"u","tags":["0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01"]} `, `{"a":`, `{"user_id":"\u0000"}`, `{} {}`,
		"{\"user_id\":\"a\xffb\",\"tags\":[\"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01\"]}", `{"user_id":"\ud800","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"]}`,
		"\\ud800\x80", "\\\xab\x80",
	} {
		f.Add([]byte(seed))
	}
	v := newValidator()
	f.Fuzz(func(t *testing.T, body []byte) {
		var req accessAllRequest
		err := decodeBody(v, body, &req)
		if len(bytes.TrimSpace(body)) > 0 && !utf8.Valid(body) {
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok || len(ve.Problems) != 1 || ve.Problems[0].Type != "json_invalid" || len(ve.Problems[0].Loc) != 2 {
				t.Fatalf("decodeBody(%q), not UTF-8, = %v, want one json_invalid problem at a byte", body, err)
			}
			// At the first byte that is not UTF-8, or before it at a lone surrogate's escape.
			at, _ := ve.Problems[0].Loc[1].(int)
			if !utf8.Valid(body[:at]) || at >= len(body) || body[at] != '\\' && utf8.Valid(body[:min(at+utf8.UTFMax, len(body))]) {
				t.Fatalf("decodeBody(%q): json_invalid at %v, not where the text stops being UTF-8", body, ve.Problems[0].Loc)
			}
			return
		}
		if err == nil {
			if req.UserID == "" || utf8.RuneCountInString(req.UserID) > maxName || len(req.Tags) == 0 || len(req.Tags) > 1000 {
				t.Fatalf("accepted %q as %+v", body, req)
			}
			for _, tag := range req.Tags {
				if !isUUID(tag) {
					t.Fatalf("accepted tag %q of %q", tag, body)
				}
			}
			return
		}
		ve, ok := errors.AsType[*ValidationError](err)
		if !ok {
			t.Fatalf("decodeBody(%q) = %v, want a ValidationError", body, err)
		}
		if len(ve.Problems) == 0 {
			t.Fatalf("decodeBody(%q): a ValidationError without problems", body)
		}
		for _, p := range ve.Problems {
			if len(p.Loc) == 0 || p.Loc[0] != "body" || p.Msg == "" || p.Type == "" {
				t.Fatalf("decodeBody(%q): problem %+v", body, p)
			}
		}
	})
}

func TestIsUUID(t *testing.T) {
	tests := map[string]bool{
		"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01":  true,
		"0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01":  true,
		"0b6f1a526a514c599a433c1f4f2f6a01":      false,
		"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a0":   false,
		"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01 ": false,
		"0b6f1a52_6a51-4c59-9a43-3c1f4f2f6a01":  false,
		"gb6f1a52-6a51-4c59-9a43-3c1f4f2f6a01":  false,
		"":                                      false,
	}
	for s, want := range tests {
		if got := isUUID(s); got != want {
			t.Errorf("isUUID(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestReadAll reads bodies of every size whole, whether their length was announced or not and
// however the reader hands them out, passes a reader's error on, and allocates no more than an
// announced length needs.
func TestReadAll(t *testing.T) {
	errRead := errors.New("connection reset")
	for _, size := range []int{0, 1, 80, 511, 512, 513, 4096, maxPrealloc + 10} {
		body := bytes.Repeat([]byte("x"), size)
		tests := []struct {
			name string
			r    io.Reader
			n    int64
		}{
			{"announced", bytes.NewReader(body), int64(size)},
			{"unknown length", bytes.NewReader(body), -1},
			{"a byte a read", iotest.OneByteReader(bytes.NewReader(body)), int64(size)},
			{"data with EOF", iotest.DataErrReader(bytes.NewReader(body)), int64(size)},
		}
		for _, tc := range tests {
			got, err := readAll(tc.r, tc.n)
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%d bytes, %s: read %d bytes, %v", size, tc.name, len(got), err)
			}
			if tc.n >= 0 && size <= maxPrealloc && cap(got) > size+1 {
				t.Errorf("%d bytes, %s: a buffer of %d bytes", size, tc.name, cap(got))
			}
		}
		r := io.MultiReader(bytes.NewReader(body), iotest.ErrReader(errRead))
		if _, err := readAll(r, int64(size)); !errors.Is(err, errRead) {
			t.Errorf("%d bytes then an error: err = %v, want %v", size, err, errRead)
		}
	}
}
