package api

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// decodeCheckFast reads the body of a can_user_access request in the one shape clients send,
// {"user_id":"…","svc_id":"…"} (either order, any white space), without reflection or
// allocation beyond the two strings. It answers ok only when the body is exactly that, with
// plain strings (no escapes, valid UTF-8) that pass accessRequest's validation, so that its
// answer is the one bindJSON would give. Anything else (an escape, another field, a value of
// another type, a problem to report) is left to bindJSON: ok is false.
func decodeCheckFast(body []byte) (req accessRequest, ok bool) {
	var haveUser, haveSvc bool
	ok = scanFlatObject(body, func(key, value []byte) bool {
		switch {
		case string(key) == "user_id" && !haveUser:
			req.UserID, haveUser = string(value), true
		case string(key) == "svc_id" && !haveSvc:
			req.SvcID, haveSvc = string(value), true
		default:
			return false
		}
		return true
	}, nil)
	if !ok || !haveUser || !haveSvc || !validUserID(req.UserID) || !isUUID(req.SvcID) {
		return accessRequest{}, false
	}
	return req, true
}

// decodeCheckAllFast is decodeCheckFast for can_user_access_all:
// {"user_id":"…","tags":["…",…]} with 1 to 1000 UUIDs. The tags come back in canonical form.
func decodeCheckAllFast(body []byte) (req accessAllRequest, ok bool) {
	var haveUser, haveTags bool
	ok = scanFlatObject(body, func(key, value []byte) bool {
		if string(key) != "user_id" || haveUser {
			return false
		}
		req.UserID, haveUser = string(value), true
		return true
	}, func(key, b []byte, i int) (next int, ok bool) {
		if string(key) != "tags" || haveTags {
			return 0, false
		}
		req.Tags, next, ok = scanUUIDs(b, i, 1000)
		haveTags = ok
		return next, ok
	})
	if !ok || !haveUser || !haveTags || len(req.Tags) == 0 || !validUserID(req.UserID) {
		return accessAllRequest{}, false
	}
	return req, true
}

// scanUUIDs reads a JSON array of at most limit UUIDs starting at b[i] ('['), each a string
// of the form isUUID accepts with no white space inside its quotes, and puts them in canonical
// form (canonicalID) as it goes: a check may name a thousand tags, so their bytes are read
// once rather than once per rule. It returns the UUIDs and the index just after the array; ok
// is false for anything else. The UUIDs share one string of their own, not b: they may be kept
// with a remembered decision, and must keep nothing else alive.
func scanUUIDs(b []byte, i, limit int) (ids []string, next int, ok bool) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []string{}, i + 1, true
	}
	// A UUID takes 38 bytes with its quotes, which bounds how many the rest of b can hold.
	var all strings.Builder // whose String shares its bytes rather than copying them
	all.Grow(36 * (min(len(b)-i, 38*limit) / 38))
	var id [36]byte
	for {
		if all.Len() == 36*limit || i+38 > len(b) || b[i] != '"' || b[i+37] != '"' {
			return nil, 0, false
		}
		// A UUID has exactly four hyphens, where they belong.
		ok, hyphens := lowerUUIDBytes(&id, (*[36]byte)(b[i+1:i+37]))
		if !ok || hyphens != 4 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
			return nil, 0, false
		}
		all.Write(id[:])
		if i = skipSpace(b, i+38); i >= len(b) {
			return nil, 0, false
		}
		switch b[i] {
		case ']':
			joined := all.String()
			ids = make([]string, len(joined)/36)
			for k := range ids {
				ids[k] = joined[36*k : 36*(k+1)]
			}
			return ids, i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, 0, false
		}
	}
}

// lowerUUIDBytes copies src to dst with each hexadecimal digit in lower case. It reports
// whether every byte of src is a hexadecimal digit, of either case, or a hyphen, and how many
// hyphens there are. It works on eight bytes at a time, which a check naming a thousand tags
// notices.
func lowerUUIDBytes(dst, src *[36]byte) (ok bool, hyphens int) {
	// The last two words overlap, as 36 is not a multiple of 8: the last one's hyphens are
	// counted in its upper four bytes only.
	x0, ok0, d0 := lowerWord(binary.LittleEndian.Uint64(src[0:]))
	x1, ok1, d1 := lowerWord(binary.LittleEndian.Uint64(src[8:]))
	x2, ok2, d2 := lowerWord(binary.LittleEndian.Uint64(src[16:]))
	x3, ok3, d3 := lowerWord(binary.LittleEndian.Uint64(src[24:]))
	x4, ok4, d4 := lowerWord(binary.LittleEndian.Uint64(src[28:]))
	binary.LittleEndian.PutUint64(dst[0:], x0)
	binary.LittleEndian.PutUint64(dst[8:], x1)
	binary.LittleEndian.PutUint64(dst[16:], x2)
	binary.LittleEndian.PutUint64(dst[24:], x3)
	binary.LittleEndian.PutUint64(dst[28:], x4)
	hyphens = bits.OnesCount64(d0) + bits.OnesCount64(d1) + bits.OnesCount64(d2) + bits.OnesCount64(d3) +
		bits.OnesCount64(d4&0x8080808000000000)
	return ok0&ok1&ok2&ok3&ok4 == highBits, hyphens
}

const highBits = 0x8080808080808080

// lowerWord lowers the hexadecimal digits of eight bytes of a UUID. In valid, a byte's high
// bit is set if it is a hexadecimal digit, of either case, or a hyphen; in hyphen, if it is a
// hyphen.
//
// Or-ing 0x20 into a byte lowers 'A'–'F' and leaves digits and '-' as they are; of the other
// bytes it turns into a digit or '-', all are below 0x20, so a byte must also be at least 0x20
// and below 0x80. For bytes below 0x80, adding 0x80-lo sets a byte's high bit exactly when it
// is at least lo, with no carry into the next byte, so each range test is two additions (a
// byte of 0x80 or more may carry, but its own test then fails, and with it the UUID).
func lowerWord(w uint64) (x, valid, hyphen uint64) {
	const ones = 0x0101010101010101
	x = w | 0x20*ones
	digit := (x + (0x80-'0')*ones) &^ (x + (0x7f-'9')*ones)
	af := (x + (0x80-'a')*ones) &^ (x + (0x7f-'f')*ones)
	hyphen = (x + (0x80-'-')*ones) &^ (x + (0x7f-'-')*ones) & highBits
	valid = (digit | af | hyphen) & (w + (0x80-0x20)*ones) &^ w & highBits
	return x, valid, hyphen
}

// validUserID is the user_id rule of the request types: required, at most maxName characters.
func validUserID(id string) bool { return id != "" && utf8.RuneCountInString(id) <= maxName }

// scanFlatObject reads a JSON object whose values are plain strings (see plainString), calling
// field for each, or arrays, which array reads from b[i] ('[') and returns the index just
// after (a nil array refuses them all). It reports false, having stopped, if the body is
// anything else or field or array refuses.
func scanFlatObject(body []byte, field func(key, value []byte) bool, array func(key, b []byte, i int) (next int, ok bool)) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	for n := 0; ; n++ {
		i = skipSpace(body, i+1)
		if n == 0 && i < len(body) && body[i] == '}' {
			return false // {}: missing fields, for bindJSON to report
		}
		key, next, ok := plainString(body, i)
		if !ok {
			return false
		}
		if i = skipSpace(body, next); i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		if i < len(body) && body[i] == '[' {
			if array == nil {
				return false
			}
			if i, ok = array(key, body, i); !ok {
				return false
			}
		} else {
			var value []byte
			if value, i, ok = plainString(body, i); !ok || !field(key, value) {
				return false
			}
		}
		if i = skipSpace(body, i); i >= len(body) {
			return false
		}
		if body[i] == '}' {
			return skipSpace(body, i+1) == len(body)
		}
		if body[i] != ',' {
			return false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string starting at b[i] that has no escape sequence and no control
// character and is valid UTF-8, and returns its contents and the index just after it.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	s = b[i+1 : i+1+end]
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return nil, 0, false
		}
	}
	return s, i + end + 2, utf8.Valid(s)
}
