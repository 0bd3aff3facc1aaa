package api

import (
	"bytes"
	"unicode/utf8"
)

var quote = []byte{'"'}

// decodeCheckFast reads the body of a can_user_access request in the one shape clients send,
// {"user_id":"…","svc_id":"…"} (either order, any white space), without reflection or
// allocation beyond the two strings. It answers ok only when the body is exactly that, with
// plain strings (no escapes, valid UTF-8) that pass accessRequest's validation, so that its
// answer is the one bindJSON would give. Anything else (an escape, another field, a value of
// another type, a problem to report) is left to bindJSON: ok is false.
func decodeCheckFast(body []byte) (req accessRequest, ok bool) {
	var haveUser, haveSvc bool
	ok = scanFlatObject(body, func(key, value []byte, list [][]byte) bool {
		switch {
		case string(key) == "user_id" && !haveUser && list == nil:
			req.UserID, haveUser = string(value), true
		case string(key) == "svc_id" && !haveSvc && list == nil:
			req.SvcID, haveSvc = string(value), true
		default:
			return false
		}
		return true
	})
	if !ok || !haveUser || !haveSvc || !validUserID(req.UserID) || !isUUID(req.SvcID) {
		return accessRequest{}, false
	}
	return req, true
}

// decodeCheckAllFast is decodeCheckFast for can_user_access_all:
// {"user_id":"…","tags":["…",…]} with 1 to 1000 UUIDs. The tags come back in canonical form.
func decodeCheckAllFast(body []byte) (req accessAllRequest, ok bool) {
	var haveUser, haveTags bool
	ok = scanFlatObject(body, func(key, value []byte, list [][]byte) bool {
		switch {
		case string(key) == "user_id" && !haveUser && list == nil && value != nil:
			req.UserID, haveUser = string(value), true
		case string(key) == "tags" && !haveTags && list != nil:
			if len(list) > 1000 {
				return false
			}
			for _, tag := range list {
				if !isUUID(tag) {
					return false
				}
			}
			req.Tags, haveTags = canonicalUUIDs(list), true
		default:
			return false
		}
		return true
	})
	if !ok || !haveUser || !haveTags || len(req.Tags) == 0 || !validUserID(req.UserID) {
		return accessAllRequest{}, false
	}
	return req, true
}

// canonicalUUIDs returns the UUIDs in canonical form (canonicalID), as substrings of one
// string: two allocations for any number of tags rather than one or two per tag.
func canonicalUUIDs(list [][]byte) []string {
	buf := make([]byte, 0, 36*len(list))
	for _, id := range list {
		buf = append(buf, id...)
	}
	for i, c := range buf {
		if 'A' <= c && c <= 'F' {
			buf[i] = c + 'a' - 'A'
		}
	}
	all := string(buf)
	out := make([]string, len(list))
	for i := range out {
		out[i] = all[36*i : 36*(i+1)]
	}
	return out
}

// validUserID is the user_id rule of the request types: required, at most maxName characters.
func validUserID(id string) bool { return id != "" && utf8.RuneCountInString(id) <= maxName }

// scanFlatObject reads a JSON object whose values are plain strings or arrays of plain strings
// (see plainString), calling field for each member: with value set for a string, or with list
// set (possibly empty, never nil) for an array. It reports false, having stopped, if the body is
// anything else or field returns false.
func scanFlatObject(body []byte, field func(key, value []byte, list [][]byte) bool) bool {
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
		var value []byte
		var list [][]byte
		if i < len(body) && body[i] == '[' {
			if list, i, ok = plainStrings(body, i); !ok {
				return false
			}
		} else if value, i, ok = plainString(body, i); !ok {
			return false
		}
		if !field(key, value, list) {
			return false
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

// plainStrings reads a JSON array of plain strings starting at b[i] ('['), and returns them
// (an empty, non-nil slice for []) and the index just after the array.
func plainStrings(b []byte, i int) (list [][]byte, next int, ok bool) {
	// Every string of the array has two quotes: counting them (quickly) bounds its length.
	list = make([][]byte, 0, bytes.Count(b[i:], quote)/2)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return list, i + 1, true
	}
	for {
		s, next, ok := plainString(b, i)
		if !ok {
			return nil, 0, false
		}
		list = append(list, s)
		if i = skipSpace(b, next); i >= len(b) {
			return nil, 0, false
		}
		switch b[i] {
		case ']':
			return list, i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, 0, false
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
