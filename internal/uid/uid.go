// Package uid makes random identifiers for records that the service creates itself.
//
// It is a few lines rather than a dependency because Grantry needs only one kind of
// identifier: a random (version 4) UUID in its canonical text form.
package uid

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	mrand "math/rand/v2"
)

// New returns a new random version 4 UUID (RFC 9562) as 36 lowercase hexadecimal characters
// with hyphens, the form the API shows and validates.
func New() string {
	var b [16]byte
	// crypto/rand.Read never fails: on a broken entropy source the program crashes instead of
	// handing out predictable identifiers.
	_, _ = rand.Read(b[:])
	return format(b)
}

// NewCheap is New from math/rand/v2's generator (ChaCha8, seeded by the runtime from the
// operating system) rather than crypto/rand, for identifiers that must be unique but are no
// secret and are made on every request, such as a request's id: there crypto/rand's cost is
// paid on every request for secrecy nobody needs.
func NewCheap() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], mrand.Uint64())
	binary.LittleEndian.PutUint64(b[8:16], mrand.Uint64())
	return format(b)
}

// format sets b's version and variant bits and writes it in canonical form.
func format(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10 (RFC 9562)

	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}
