package bolt

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDecodeGrant checks the grant decoder on what this store writes and on what only
// encoding/json can read.
func TestDecodeGrant(t *testing.T) {
	tests := []struct {
		name string
		data string
		fast bool // whether the scanner, not encoding/json, should decode it
		want grantRecord
	}{
		{"written by Marshal", `{"org_id":"o","user_id":"u","resource_id":"r","created_at":1700000000000}`, true,
			grantRecord{OrgID: "o", UserID: "u", ResourceID: "r", CreatedAt: 1700000000000}},
		{"with expiry", `{"org_id":"o","user_id":"u","resource_id":"r","created_at":1,"expires_at":-5}`, true,
			grantRecord{OrgID: "o", UserID: "u", ResourceID: "r", CreatedAt: 1, ExpiresAt: -5}},
		{"escaped user id", `{"org_id":"o","user_id":"a\"b","resource_id":"r","created_at":1}`, false,
			grantRecord{OrgID: "o", UserID: `a"b`, ResourceID: "r", CreatedAt: 1}},
		{"non-ASCII user id", `{"org_id":"o","user_id":"zoë","resource_id":"r","created_at":1}`, false,
			grantRecord{OrgID: "o", UserID: "zoë", ResourceID: "r", CreatedAt: 1}},
		{"spaces", `{"org_id": "o", "user_id": "u"}`, false, grantRecord{OrgID: "o", UserID: "u"}},
		{"unknown field", `{"org_id":"o","note":"x"}`, false, grantRecord{OrgID: "o"}},
		{"duplicate field", `{"org_id":"o","org_id":"p"}`, false, grantRecord{OrgID: "p"}},
		{"empty", `{}`, true, grantRecord{}},
		{"largest times", `{"created_at":9223372036854775807,"expires_at":-9223372036854775808}`, true,
			grantRecord{CreatedAt: math.MaxInt64, ExpiresAt: math.MinInt64}},
		{"18 and 19 digits", `{"created_at":999999999999999999,"expires_at":-1000000000000000000}`, true,
			grantRecord{CreatedAt: 999999999999999999, ExpiresAt: -1000000000000000000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fast grantRecord
			if got := fastGrant([]byte(tc.data), &fast); got != tc.fast {
				t.Errorf("fastGrant = %v, want %v", got, tc.fast)
			}
			var got grantRecord
			if err := decodeGrant([]byte(tc.data), &got); err != nil || got != tc.want {
				t.Errorf("decodeGrant = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestDecodeGrantOverflow: a time too large for an int64 is refused, as encoding/json refuses it.
func TestDecodeGrantOverflow(t *testing.T) {
	for _, data := range []string{`{"created_at":9223372036854775808}`, `{"expires_at":-9223372036854775809}`, `{"created_at":100000000000000000000}`} {
		var r grantRecord
		if fastGrant([]byte(data), &r) {
			t.Errorf("fastGrant(%s) = %+v, true; want false", data, r)
		}
		if err := decodeGrant([]byte(data), &r); err == nil {
			t.Errorf("decodeGrant(%s) = %+v, nil; want an error", data, r)
		}
	}
}

// TestDecodeGrantAllocatesNothing: decoding a grant as this store writes it allocates nothing,
// so that reading a million users' grants in at start (decodeGrantExpiry), and a check of a
// user not in memory, make no garbage a grant. The race detector's instrumentation allocates
// on its own; BenchmarkDecodeGrantExpiry shows the count under any build.
func TestDecodeGrantAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	data := []byte(`{"created_at":1767225600000,"expires_at":1767225900000}`)
	if n := testing.AllocsPerRun(100, func() {
		if at, err := decodeGrantExpiry(data); err != nil || at != 1767225900000 {
			t.Fatalf("decodeGrantExpiry = %d, %v", at, err)
		}
	}); n != 0 {
		t.Errorf("decodeGrantExpiry allocates %v times a grant, want 0", n)
	}
}

func BenchmarkDecodeGrantExpiry(b *testing.B) {
	data := []byte(`{"created_at":1767225600000,"expires_at":1767225900000}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeGrantExpiry(data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeGrant checks that whatever the scanner accepts, encoding/json reads the same way.
func FuzzDecodeGrant(f *testing.F) {
	for _, r := range []grantRecord{{OrgID: "o", UserID: "u", ResourceID: "r", CreatedAt: 1}, {ExpiresAt: -1}, {UserID: `"\`}} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"created_at":01}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast grantRecord
		if !fastGrant(data, &fast) {
			return
		}
		var want grantRecord
		if err := json.Unmarshal(data, &want); err != nil || fast != want {
			t.Fatalf("fastGrant(%q) = %+v; encoding/json: %+v, %v", data, fast, want, err)
		}
	})
}

// TestSplitKey checks that splitKey returns the parts key joined, zero bytes included, and
// refuses what key never makes.
func TestSplitKey(t *testing.T) {
	for _, parts := range [][]string{
		{"org", "user", "00000000-0000-4000-8000-000000000001"},
		{""},
		{"", "", ""},
		{"a\x00b", "\x00", "c\x00"},
		{"\x00\x00", "x"},
	} {
		if got, ok := splitKey(nil, key(parts...)); !ok || !slices.Equal(got, parts) {
			t.Errorf("splitKey(key(%q)) = %q, %v", parts, got, ok)
		}
	}
	for _, k := range []string{"no separator", "a\x00b", "a\x00\xff"} {
		if got, ok := splitKey(nil, []byte(k)); ok {
			t.Errorf("splitKey(%q) = %q, true; want false", k, got)
		}
	}
}

// FuzzSplitKey checks that splitKey undoes key for any three parts.
func FuzzSplitKey(f *testing.F) {
	f.Add("org", "user", "resource")
	f.Add("a\x00", "\x00\xff", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		parts := []string{a, b, c}
		if strings.ContainsRune(a+b+c, 0xff) || !utf8.ValidString(a+b+c) {
			t.Skip("ids are UTF-8, which never holds the byte 0xff")
		}
		if got, ok := splitKey(nil, key(parts...)); !ok || !slices.Equal(got, parts) {
			t.Errorf("splitKey(key(%q)) = %q, %v", parts, got, ok)
		}
	})
}
