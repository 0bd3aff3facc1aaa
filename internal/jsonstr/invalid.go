package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// InvalidText returns the offset in the JSON text b of the first thing encoding/json would
// decode into U+FFFD rather than into what was sent — a byte that is not UTF-8, or a \u escape
// of a surrogate that is not one half of a pair — or -1 if there is none. Decoding replaces
// them silently, so that two different ids sent so would read as the same one; a caller that
// must keep strings as they were sent refuses b instead.
func InvalidText(b []byte) int {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				r, ok := hex4(b, i+2)
				if ok && utf16.IsSurrogate(r) {
					if r < 0xDC00 && i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						if low, ok := hex4(b, i+8); ok && 0xDC00 <= low && low <= 0xDFFF {
							i += 12 // a pair: one character
							continue
						}
					}
					return i
				}
			}
			// An escape: skip the letter after the backslash (the hex digits of a \u escape are
			// plain ASCII), but not a byte that may begin a character.
			i++
			if i < len(b) && b[i] < utf8.RuneSelf {
				i++
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i
			}
			i += size
		}
	}
	return -1
}

// hex4 reads the four hexadecimal digits at b[i:] as a rune.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
