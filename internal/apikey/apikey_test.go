package apikey

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := Generate()
		if !strings.HasPrefix(k, Prefix) || len(k) != len(Prefix)+bodyLen {
			t.Fatalf("Generate() = %q, want %q and %d base62 digits", k, Prefix, bodyLen)
		}
		for _, r := range k[len(Prefix):] {
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				t.Fatalf("Generate() = %q has %q, not base62", k, r)
			}
		}
		if seen[k] {
			t.Fatalf("Generate() repeated %q", k)
		}
		seen[k] = true
	}
}

func TestHash(t *testing.T) {
	// sha256("abc"), a published test vector.
	if got, want := Hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("Hash(abc) = %s, want %s", got, want)
	}
	if sum := Sum("abc"); fmt.Sprintf("%x", sum) != Hash("abc") {
		t.Errorf("Sum(abc) = %x, want the digest Hash spells", sum)
	}
}

// TestSumReusesNothingOfAKey: Sum's hash states are reused, so each digest must be of its own key
// alone, whatever was summed before it, on any goroutine.
func TestSumReusesNothingOfAKey(t *testing.T) {
	keys := []string{"", "abc", Prefix + strings.Repeat("z", bodyLen), "abc" + strings.Repeat("\x00", 200), "a", strings.Repeat("k", 5000)}
	want := make([]string, len(keys))
	for i, k := range keys {
		sum := sha256.Sum256([]byte(k))
		want[i] = hex.EncodeToString(sum[:])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 500 {
				i := (g + n) % len(keys)
				if got := Sum(keys[i]); hex.EncodeToString(got[:]) != want[i] {
					t.Errorf("Sum(%.10q) = %x, want %s", keys[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSumLeavesNothingOfTheKey: a digester goes back to a pool after each sum, so neither its
// copy of the key nor its hash state's buffer may keep any of the key. The buffer is read
// through reflect, being unexported: if crypto/sha256 renames it, the test says so.
func TestSumLeavesNothingOfTheKey(t *testing.T) {
	keys := []string{Generate(), Generate()[:20], strings.Repeat("s", 63), Generate() + strings.Repeat("t", 64), strings.Repeat("u", 2000)}
	for _, key := range keys {
		d := &digester{h: sha256.New()}
		want := sha256.Sum256([]byte(key))
		if got := d.sum(key); got != want {
			t.Fatalf("sum(%.10q) = %x, want %x", key, got, want)
		}
		kept := slices.Clone(d.in[:cap(d.in)])
		x := reflect.ValueOf(d.h).Elem().FieldByName("x")
		if x.Kind() != reflect.Array {
			t.Fatalf("crypto/sha256's state has no buffer x (%v): read it some other way", x.Kind())
		}
		for i := range x.Len() {
			kept = append(kept, byte(x.Index(i).Uint()))
		}
		tail := key[len(key)-len(key)%sha256.BlockSize:] // what the hash state buffers
		for _, part := range []string{key[:min(8, len(key))], tail[max(len(tail)-8, 0):]} {
			if len(part) == 8 && bytes.Contains(kept, []byte(part)) {
				t.Errorf("after sum(%.10q…), the digester still holds %q of it", key, part)
			}
		}
	}
}

func BenchmarkSum(b *testing.B) {
	key := Generate()
	b.ReportAllocs()
	for b.Loop() {
		Sum(key)
	}
}

func TestDisplay(t *testing.T) {
	if got := Display("gry_abcdefgh"); got != "gry_abcd" {
		t.Errorf("Display = %q", got)
	}
	if got := Display("short"); got != "" {
		t.Errorf("Display of a short key = %q, want nothing shown", got)
	}
}

func TestFromHeader(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer gry_abc", "gry_abc", true},
		{"bearer gry_abc", "gry_abc", true},
		{"BEARER  gry_abc", "gry_abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"gry_abc", "", false},
		{"Bearer gry abc", "", false},
		{"Bearer gry_abc\t", "", false},
		{"Bearer gry_\u00e9", "", false},
		{"Bearer " + strings.Repeat("a", 513), "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := FromHeader(tc.header)
		if got != tc.want || ok != tc.ok {
			t.Errorf("FromHeader(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzFromHeader(f *testing.F) {
	for _, s := range []string{"Bearer gry_abc", "bearer x", "Basic x", "", "Bearer  ", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := FromHeader(header)
		if !ok {
			return
		}
		if token == "" || strings.ContainsAny(token, " \t\r\n") || !strings.HasSuffix(header, token) {
			t.Errorf("FromHeader(%q) = %q: not a clean token taken from the header", header, token)
		}
	})
}
