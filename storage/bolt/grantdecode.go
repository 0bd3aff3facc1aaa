package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	bbolt "go.etcd.io/bbolt"
)

// decodeGrant decodes a stored grant. Loading a user's grants is on the path of a first check,
// so the records this store writes (json.Marshal of grantRecord: strings without escapes,
// integer times) are read by a small scanner; anything else takes encoding/json.
//
// The slow path decodes into a record of its own, so that r does not escape: each caller keeps
// its record on the stack. Escaping, it would be allocated once a grant, for every grant of a
// large store when its grants are read in at start (decodeGrantExpiry).
func decodeGrant(data []byte, r *grantRecord) error {
	if fastGrant(data, r) {
		return nil
	}
	var slow grantRecord
	err := json.Unmarshal(data, &slow)
	*r = slow
	return err
}

// fastGrant decodes data into r if it is a flat object whose keys are grantRecord's, each
// once at most, with strings free of escapes and times plain integers, and reports whether it
// did.
func fastGrant(data []byte, r *grantRecord) bool {
	*r = grantRecord{}
	var seen [5]bool
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return false
	}
	rest := data[1 : len(data)-1]
	for len(rest) > 0 {
		k, v, tail, ok := nextMember(rest)
		if !ok {
			return false
		}
		rest = tail
		var field int
		var str *string
		var num *int64
		switch string(k) {
		case "org_id":
			field, str = 0, &r.OrgID
		case "user_id":
			field, str = 1, &r.UserID
		case "resource_id":
			field, str = 2, &r.ResourceID
		case "created_at":
			field, num = 3, &r.CreatedAt
		case "expires_at":
			field, num = 4, &r.ExpiresAt
		default:
			return false
		}
		if seen[field] {
			return false
		}
		seen[field] = true
		if str != nil {
			if len(v) < 2 || v[0] != '"' {
				return false
			}
			*str = string(v[1 : len(v)-1])
			continue
		}
		if v[0] == '"' { // a string where a time belongs
			return false
		}
		n, ok := parseInteger(v)
		if !ok {
			return false
		}
		*num = n
	}
	return true
}

// parseInteger parses b, a JSON integer as nextMember found it (integer), as an int64 and
// reports whether it fits one. Times are 13 digits, which a loop reads faster than
// strconv.ParseInt.
func parseInteger(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 18 { // might not fit: strconv says
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(b) {
		n = -n
	}
	return n, true
}

// nextMember splits `"key":value,rest` (no spaces, as encoding/json writes) where value is a
// string without backslashes or a bare number. ok is false for anything else.
func nextMember(b []byte) (key, value, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != '"' {
		return nil, nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || len(b) < end+3 || b[end+2] != ':' {
		return nil, nil, nil, false
	}
	key, b = b[1:end+1], b[end+3:]
	if !plain(key) {
		return nil, nil, nil, false
	}
	if len(b) > 0 && b[0] == '"' {
		end = bytes.IndexByte(b[1:], '"')
		if end < 0 {
			return nil, nil, nil, false
		}
		value, b = b[:end+2], b[end+2:]
		if !plain(value[1 : len(value)-1]) {
			return nil, nil, nil, false
		}
	} else {
		end = bytes.IndexByte(b, ',')
		if end < 0 {
			end = len(b)
		}
		value, b = b[:end], b[end:]
		if !integer(value) {
			return nil, nil, nil, false
		}
	}
	switch {
	case len(b) == 0:
		return key, value, nil, true
	case b[0] == ',' && len(b) > 1:
		return key, value, b[1:], true
	}
	return nil, nil, nil, false
}

// plain reports whether a JSON string's contents mean exactly their bytes: printable ASCII
// without escapes.
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// integer reports whether b is a JSON integer: an optional minus, then 0 or digits not
// starting with 0.
func integer(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// userGrantsRoom is how many grants userGrants makes room for at first: make bench's users
// hold 50, make bench-large's 20. More are appended as usual.
const userGrantsRoom = 64

// scanGrants returns the grants whose keys start with prefix, through readGrant.
func scanGrants(b *bbolt.Bucket, prefix []byte) ([]grantRecord, error) {
	return scanWith(nil, b, prefix, readGrant)
}

// userGrants is scanGrants of one user's grants, which a user's first check reads. Their
// keys all begin with key(org, user), so only the resource id is read from each, and every
// record shares the organization's and the user's id: one string a grant instead of three.
// The records start with room for userGrantsRoom, so that a typical user's are allocated once
// rather than again each time append grows them.
func userGrants(b *bbolt.Bucket, orgID, userID string) ([]grantRecord, error) {
	prefix := key(orgID, userID)
	var ids [1]string
	return scanWith(make([]grantRecord, 0, userGrantsRoom), b, prefix, func(k, data []byte) (grantRecord, error) {
		var r grantRecord
		if err := decodeGrant(data, &r); err != nil {
			return r, fmt.Errorf("decode %q: %w", k, err)
		}
		r.OrgID, r.UserID = orgID, userID
		// The resource id is the rest of the key up to its last byte, the separator, unless
		// the id holds a zero byte itself (escaped): found by one IndexByte rather than
		// splitKey's loop over every byte.
		rest := k[len(prefix):]
		if i := bytes.IndexByte(rest, 0); i == len(rest)-1 {
			r.ResourceID = string(rest[:i])
			return r, nil
		}
		parts, ok := splitKey(ids[:0], rest)
		if !ok || len(parts) != 1 {
			return r, fmt.Errorf("decode %q: not a key of three ids", k)
		}
		r.ResourceID = parts[0]
		return r, nil
	})
}
