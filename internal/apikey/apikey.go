// Package apikey makes, hashes and reads Grantry's bearer credentials. A key is "gry_" followed
// by 32 random bytes in base62; only its SHA-256 is ever stored.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"math/big"
	"strings"
	"sync"
)

// Prefix starts every key Grantry makes, so that a leaked key is easy to recognise and scan for.
const Prefix = "gry_"

// bodyLen is how many base62 digits 32 random bytes need: ceil(256 / log2(62)).
const bodyLen = 43

// DisplayLen is how many leading characters of a key are kept, in clear, to tell keys apart.
const DisplayLen = 8

// Generate returns a new random key.
func Generate() string {
	var b [32]byte
	rand.Read(b[:]) // never returns an error; it crashes the program if the OS has no randomness
	body := new(big.Int).SetBytes(b[:]).Text(62)
	return Prefix + strings.Repeat("0", bodyLen-len(body)) + body
}

// Hash returns the lowercase hex SHA-256 of a key: the only form in which keys are stored.
func Hash(key string) string {
	sum := Sum(key)
	return hex.EncodeToString(sum[:])
}

// Sum is the SHA-256 digest of key, whose hexadecimal form is Hash: a fixed-size value, to find
// a key in memory without making a string of its hash. Every request with a key takes one, so
// it reuses its hash states: sha256.Sum256 puts the copy of key it hashes on the heap at each
// call, and, as the server calls it, its hash state too.
func Sum(key string) [sha256.Size]byte {
	d := digesters.Get().(*digester)
	sum := d.sum(key)
	digesters.Put(d)
	return sum
}

// digester is a hash state with room for its input and output, for Sum.
type digester struct {
	h   hash.Hash
	in  []byte
	out [sha256.Size]byte
}

var digesters = sync.Pool{New: func() any { return &digester{h: sha256.New()} }}

// maxKept bounds the input room a digester keeps: far more than a key Grantry makes.
const maxKept = 1 << 10

// sum digests key, then scrubs what d holds of it, since d goes back to a pool and the key is a
// secret: its copy of the key is cleared, and so is the hash state's buffer, which keeps the
// key's last partial block (up to 63 bytes: the whole of a key Grantry makes). After a Reset,
// a write shorter than a block is buffered from the buffer's start, so noKey overwrites it.
func (d *digester) sum(key string) [sha256.Size]byte {
	d.h.Reset()
	d.in = append(d.in[:0], key...)
	d.h.Write(d.in)
	sum := [sha256.Size]byte(d.h.Sum(d.out[:0]))
	clear(d.in)
	if cap(d.in) > maxKept {
		d.in = nil // a huge bearer token must not keep its room in the pool
	}
	d.h.Reset()
	d.h.Write(noKey[:])
	return sum
}

// noKey is what sum leaves in a hash state's buffer.
var noKey [sha256.BlockSize - 1]byte

// Display returns the non-secret leading characters of a key.
func Display(key string) string {
	if len(key) <= DisplayLen {
		return ""
	}
	return key[:DisplayLen]
}

// FromHeader returns the credential of an Authorization header of the form "Bearer <token>".
// The scheme is matched without regard to case, as RFC 9110 requires; the token must be
// non-empty and made of visible ASCII characters.
func FromHeader(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || len(token) > 512 {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return "", false
		}
	}
	return token, true
}
