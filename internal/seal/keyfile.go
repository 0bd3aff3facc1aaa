package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ParseKey decodes a master key from its text form: the standard base64 of KeySize bytes, as
// GRANTRY_SECRET_KEY and the key file hold it.
func ParseKey(text string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("a master key is the base64 encoding of exactly %d bytes", KeySize)
	}
	return key, nil
}

// LoadOrCreateKeyFile returns the master key kept in the file at path, first creating the file
// (mode 0600, its folder 0700) with a new random key if it does not exist. created says whether
// it did. The file holds the key's text form, so it can be copied into GRANTRY_SECRET_KEY.
// Two processes starting at once agree on one key: the key is written whole to a temporary
// file that is then linked into place, which fails if the file exists, and the loser reads the
// winner's.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	if key, err := readKeyFile(path); !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create master key file: %w", err)
	}
	key = make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails; a broken entropy source crashes the program instead
	tmp, err := os.CreateTemp(dir, ".secret-key-*")
	if err != nil {
		return nil, false, fmt.Errorf("create master key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return nil, false, fmt.Errorf("write master key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		key, err := readKeyFile(path)
		return key, false, err
	} else if err != nil {
		return nil, false, fmt.Errorf("create master key file: %w", err)
	}
	return key, true, nil
}

func readKeyFile(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read master key file: %w", err)
	}
	key, err := ParseKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	return key, nil
}
