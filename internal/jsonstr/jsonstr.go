// Package jsonstr writes strings as JSON string literals, byte for byte as encoding/json or
// slog.JSONHandler writes them, without reflection or allocation: for the access line Grantry
// writes on every request (internal/jsonlog) and the answers it writes by hand. It also finds
// the text that encoding/json would not decode as it was sent (InvalidText).
package jsonstr

import "unicode/utf8"

// Append appends s quoted and escaped as encoding/json.Marshal escapes a string: quote and
// backslash, control characters (\b, \f, \n, \r and \t in short), U+2028 and U+2029, and <, >
// and &, so that the JSON is safe inside HTML; invalid UTF-8 becomes U+FFFD.
func Append(buf []byte, s string) []byte { return appendEscaped(buf, s, &htmlSafe, true) }

// AppendSlog appends s quoted and escaped as slog.JSONHandler escapes a string: as Append,
// but with \b and \f as \u0008 and \u000c, and <, > and & left as they are.
func AppendSlog(buf []byte, s string) []byte { return appendEscaped(buf, s, &safe, false) }

// safe and htmlSafe are the ASCII bytes written as they are by AppendSlog and Append.
var safe, htmlSafe = func() (safe, htmlSafe [utf8.RuneSelf]bool) {
	for b := byte(' '); b < utf8.RuneSelf; b++ {
		safe[b] = b != '"' && b != '\\'
		htmlSafe[b] = safe[b] && b != '<' && b != '>' && b != '&'
	}
	return safe, htmlSafe
}()

const hex = "0123456789abcdef"

func appendEscaped(buf []byte, s string, safe *[utf8.RuneSelf]bool, shortBF bool) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch {
			case b == '"' || b == '\\':
				buf = append(buf, '\\', b)
			case b == '\n':
				buf = append(buf, '\\', 'n')
			case b == '\r':
				buf = append(buf, '\\', 'r')
			case b == '\t':
				buf = append(buf, '\\', 't')
			case b == '\b' && shortBF:
				buf = append(buf, '\\', 'b')
			case b == '\f' && shortBF:
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
