// Package seal encrypts third-party secrets (provider API keys) before they are stored, and
// opens them again, with AES-256-GCM under a master key.
//
// A sealed secret is one self-describing blob:
//
//	version (1 byte, 1) | key id (8 bytes) | nonce (12 bytes) | ciphertext and GCM tag
//
// The key id says which master key sealed it, so that after a rotation the previous key can
// still open old secrets while new ones are sealed under the current key. The header and the
// caller's binding (the organization and resource the secret belongs to) are authenticated
// with the ciphertext, so a blob changed in any way, or copied onto another resource, does not
// open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// KeySize is the length of a master key: AES-256.
const KeySize = 32

const (
	version   = 1
	keyIDSize = 8
	nonceSize = 12
	// headerSize is what precedes the ciphertext: version, key id, nonce.
	headerSize = 1 + keyIDSize + nonceSize
)

// Errors of Open. Neither says anything about the secret.
var (
	// ErrUnknownKey means the blob was sealed under a master key this Sealer does not hold.
	ErrUnknownKey = errors.New("sealed under a master key that is not configured")
	// ErrCorrupt means the blob is not a sealed secret, or it was changed, or it belongs to
	// another binding.
	ErrCorrupt = errors.New("sealed secret is damaged or belongs elsewhere")
)

// Sealer seals under one current master key and opens under it or any previous one. It is safe
// for concurrent use.
type Sealer struct {
	current keyed
	byID    map[[keyIDSize]byte]cipher.AEAD
}

type keyed struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// New returns a Sealer that seals under current and opens secrets sealed under current or any
// of previous. Every key must be KeySize bytes.
func New(current []byte, previous ...[]byte) (*Sealer, error) {
	cur, err := newKeyed(current)
	if err != nil {
		return nil, fmt.Errorf("current master key: %w", err)
	}
	s := &Sealer{current: cur, byID: map[[keyIDSize]byte]cipher.AEAD{cur.id: cur.aead}}
	for i, p := range previous {
		k, err := newKeyed(p)
		if err != nil {
			return nil, fmt.Errorf("previous master key %d: %w", i+1, err)
		}
		if _, dup := s.byID[k.id]; !dup {
			s.byID[k.id] = k.aead
		}
	}
	return s, nil
}

func newKeyed(key []byte) (keyed, error) {
	if len(key) != KeySize {
		return keyed{}, fmt.Errorf("a master key is %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return keyed{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return keyed{}, err
	}
	return keyed{id: KeyID(key), aead: aead}, nil
}

// KeyID is the identifier stored beside secrets sealed under key: the first bytes of a
// domain-separated SHA-256 of it. It tells keys apart without revealing anything useful about
// them.
func KeyID(key []byte) [keyIDSize]byte {
	h := sha256.New()
	h.Write([]byte("grantry seal key id\x00"))
	h.Write(key)
	var id [keyIDSize]byte
	copy(id[:], h.Sum(nil))
	return id
}

// Seal encrypts plaintext under the current master key with a fresh random nonce. bind names
// what the secret belongs to (for a resource: its organization's id and its own id); Open must
// be given the same values.
func (s *Sealer) Seal(plaintext []byte, bind ...string) ([]byte, error) {
	out := make([]byte, headerSize, headerSize+len(plaintext)+s.current.aead.Overhead())
	out[0] = version
	copy(out[1:], s.current.id[:])
	// crypto/rand.Read never fails; a broken entropy source crashes the program instead.
	_, _ = rand.Read(out[1+keyIDSize : headerSize])
	nonce := out[1+keyIDSize : headerSize]
	return s.current.aead.Seal(out, nonce, plaintext, additionalData(out[:headerSize], bind)), nil
}

// Open decrypts a blob made by Seal with the same bind. It returns an error wrapping
// ErrUnknownKey if no configured key sealed it, and ErrCorrupt if it does not open.
func (s *Sealer) Open(sealed []byte, bind ...string) ([]byte, error) {
	if len(sealed) < headerSize || sealed[0] != version {
		return nil, fmt.Errorf("open: %w", ErrCorrupt)
	}
	aead, ok := s.byID[[keyIDSize]byte(sealed[1:1+keyIDSize])]
	if !ok {
		return nil, fmt.Errorf("open: key id %x: %w", sealed[1:1+keyIDSize], ErrUnknownKey)
	}
	header := sealed[:headerSize]
	plaintext, err := aead.Open(nil, header[1+keyIDSize:], sealed[headerSize:], additionalData(header, bind))
	if err != nil {
		return nil, fmt.Errorf("open: %w", ErrCorrupt)
	}
	return plaintext, nil
}

// IsCurrent reports whether sealed names the current master key, so a rotation can leave it as
// it is. It does not check that the blob opens.
func (s *Sealer) IsCurrent(sealed []byte) bool {
	return len(sealed) >= headerSize && sealed[0] == version && bytes.Equal(sealed[1:1+keyIDSize], s.current.id[:])
}

// additionalData is what GCM authenticates besides the ciphertext: the header, then each part
// of bind with its length first, so that ("ab", "c") and ("a", "bc") differ.
func additionalData(header []byte, bind []string) []byte {
	ad := bytes.Clone(header)
	for _, b := range bind {
		ad = binary.BigEndian.AppendUint32(ad, uint32(len(b)))
		ad = append(ad, b...)
	}
	return ad
}
