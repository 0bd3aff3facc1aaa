package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustNew(tb testing.TB, current []byte, previous ...[]byte) *Sealer {
	tb.Helper()
	s, err := New(current, previous...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func mustSeal(tb testing.TB, s *Sealer, plaintext string, bind ...string) []byte {
	tb.Helper()
	sealed, err := s.Seal([]byte(plaintext), bind...)
	if err != nil {
		tb.Fatal(err)
	}
	return sealed
}

func TestRoundTrip(t *testing.T) {
	s := mustNew(t, testKey(1))
	for _, plaintext := range []string{"", "sk-test-0123456789", "\x00\xff binary \n key"} {
		sealed := mustSeal(t, s, plaintext, "org-1", "res-1")
		if plaintext != "" && bytes.Contains(sealed, []byte(plaintext)) {
			t.Errorf("sealed %q contains the plaintext", plaintext)
		}
		got, err := s.Open(sealed, "org-1", "res-1")
		if err != nil || string(got) != plaintext {
			t.Errorf("Open(Seal(%q)) = %q, %v", plaintext, got, err)
		}
	}
}

func TestFreshNonce(t *testing.T) {
	s := mustNew(t, testKey(1))
	a, b := mustSeal(t, s, "same key", "o", "r"), mustSeal(t, s, "same key", "o", "r")
	if bytes.Equal(a, b) {
		t.Fatal("sealing the same secret twice gave the same bytes: the nonce is not fresh")
	}
	if bytes.Equal(a[1+keyIDSize:headerSize], b[1+keyIDSize:headerSize]) {
		t.Error("two seals share a nonce")
	}
}

func TestOpenRefuses(t *testing.T) {
	s := mustNew(t, testKey(1))
	sealed := mustSeal(t, s, "sk-secret", "org-1", "res-1")
	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		return b
	}
	tests := []struct {
		name   string
		sealer *Sealer
		blob   []byte
		bind   []string
		want   error
	}{
		{"other resource", s, sealed, []string{"org-1", "res-2"}, ErrCorrupt},
		{"other organization", s, sealed, []string{"org-2", "res-1"}, ErrCorrupt},
		{"binding split differently", s, sealed, []string{"org-1r", "es-1"}, ErrCorrupt},
		{"no binding", s, sealed, nil, ErrCorrupt},
		{"changed ciphertext", s, flip(len(sealed) - 1), []string{"org-1", "res-1"}, ErrCorrupt},
		{"changed nonce", s, flip(1 + keyIDSize), []string{"org-1", "res-1"}, ErrCorrupt},
		{"changed key id", s, flip(1), []string{"org-1", "res-1"}, ErrUnknownKey},
		{"unknown version", s, flip(0), []string{"org-1", "res-1"}, ErrCorrupt},
		{"too short", s, sealed[:headerSize-1], []string{"org-1", "res-1"}, ErrCorrupt},
		{"empty", s, nil, []string{"org-1", "res-1"}, ErrCorrupt},
		{"wrong key", mustNew(t, testKey(2)), sealed, []string{"org-1", "res-1"}, ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sealer.Open(tt.blob, tt.bind...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tt.want)
			}
			if bytes.Contains([]byte(err.Error()), []byte("sk-secret")) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

func TestPreviousKeys(t *testing.T) {
	old, older, current := testKey(1), testKey(2), testKey(3)
	byOld := mustSeal(t, mustNew(t, old), "sealed under old", "o", "r")
	byOlder := mustSeal(t, mustNew(t, older), "sealed under older", "o", "r")

	rotated := mustNew(t, current, old, older)
	for blob, want := range map[*[]byte]string{&byOld: "sealed under old", &byOlder: "sealed under older"} {
		got, err := rotated.Open(*blob, "o", "r")
		if err != nil || string(got) != want {
			t.Errorf("Open with the key among the previous ones = %q, %v; want %q", got, err, want)
		}
		if rotated.IsCurrent(*blob) {
			t.Errorf("IsCurrent(%q) = true, but it was sealed under a previous key", want)
		}
	}
	fresh := mustSeal(t, rotated, "new", "o", "r")
	if !rotated.IsCurrent(fresh) {
		t.Error("IsCurrent of a blob just sealed = false")
	}
	if _, err := mustNew(t, old).Open(fresh, "o", "r"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("the previous key opened a secret sealed under the current one: %v", err)
	}
	// Once the previous keys are dropped, only what was sealed under the current key opens.
	onlyCurrent := mustNew(t, current)
	if _, err := onlyCurrent.Open(byOld, "o", "r"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Open without the previous key = %v, want ErrUnknownKey", err)
	}
	if got, err := onlyCurrent.Open(fresh, "o", "r"); err != nil || string(got) != "new" {
		t.Errorf("Open with the current key alone = %q, %v", got, err)
	}
}

func TestNewRejectsBadKeys(t *testing.T) {
	if _, err := New(make([]byte, 16)); err == nil {
		t.Error("New accepted a 16-byte current key")
	}
	if _, err := New(testKey(1), make([]byte, 31)); err == nil {
		t.Error("New accepted a 31-byte previous key")
	}
}

func TestParseKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(testKey(7))
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"base64 of 32 bytes", good, true},
		{"with a trailing newline", good + "\n", true},
		{"not base64", "not base64!", false},
		{"16 bytes", base64.StdEncoding.EncodeToString(make([]byte, 16)), false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParseKey(tt.text)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseKey = %x, %v; want ok = %v", key, err, tt.ok)
			}
			if tt.ok && !bytes.Equal(key, testKey(7)) {
				t.Errorf("ParseKey = %x", key)
			}
		})
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secret.key")
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("first LoadOrCreateKeyFile = %x, %v, %v", key, created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode = %o, want 600", mode)
	}
	if text, _ := os.ReadFile(path); !bytes.Equal(mustParse(t, string(text)), key) {
		t.Errorf("key file holds %q, not the key's base64", text)
	}
	again, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Errorf("second LoadOrCreateKeyFile = %x, %v, %v; want the same key, not created", again, created, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".secret-key-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestKeyFileRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	const n = 8
	keys := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, _, err := LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i := range keys {
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("processes starting at once got different keys: %x and %x", keys[0], keys[i])
		}
	}
}

func TestKeyFileDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKeyFile(path); err == nil {
		t.Fatal("LoadOrCreateKeyFile accepted a damaged key file")
	}
	if text, _ := os.ReadFile(path); string(text) != "not a key\n" {
		t.Error("LoadOrCreateKeyFile replaced a damaged key file: secrets sealed under it would be lost")
	}
}

func mustParse(tb testing.TB, text string) []byte {
	tb.Helper()
	k, err := ParseKey(text)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func BenchmarkSeal(b *testing.B) {
	s := mustNew(b, testKey(1))
	key := []byte("sk-proj-0123456789abcdef0123456789abcdef0123456789")
	for b.Loop() {
		if _, err := s.Seal(key, "org", "resource"); err != nil {
			b.Fatal(err)
		}
	}
}
