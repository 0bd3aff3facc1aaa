package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// Events and decisions are logs of entries whose ids sort in time order (storage.EntryIDs).
// The audit trail keeps its events in a primary bucket under key(org, id), and indexes them in
// other buckets under key(org, value, id) with an empty value, so that a page of one
// organization's events, newest first, is one backward walk over one key range, whichever
// bucket it is in. The decision log keeps its decisions in blocks (decisions.go).

// page selects a range of one log: the entries whose keys lie under prefix (key(org) in the
// primary bucket, key(org, value) in an index), within a time range and older than a cursor.
type page struct {
	prefix []byte
	since  time.Time
	until  time.Time
	cursor string
}

// walk calls visit with the id and the value of every entry of p in b, newest first, until
// visit returns false or an error. Ids hold only hexadecimal digits and hyphens, which key
// leaves as they are, so an id, or the beginning of one, is a bound of a key range by itself.
func (p page) walk(b *bbolt.Bucket, visit func(id string, v []byte) (bool, error)) error {
	upper := append(bytes.Clone(p.prefix), 0xff)
	if !p.until.IsZero() {
		upper = minKey(upper, append(bytes.Clone(p.prefix), storage.IDTimePrefix(p.until)...))
	}
	if p.cursor != "" {
		upper = minKey(upper, append(bytes.Clone(p.prefix), p.cursor...))
	}
	lower := p.prefix
	if !p.since.IsZero() {
		lower = append(bytes.Clone(p.prefix), storage.IDTimePrefix(p.since)...)
	}
	c := b.Cursor()
	k, v := c.Seek(upper)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.Compare(k, lower) >= 0; k, v = c.Prev() {
		// Every key from prefix up to prefix+0xff begins with prefix; the id follows it and
		// ends with key's terminating zero.
		more, err := visit(idUnder(k, p.prefix), v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// idUnder returns the id of the key k of a log under prefix: what follows prefix, without the
// zero that ends it.
func idUnder(k, prefix []byte) string { return string(k[len(prefix) : len(k)-1]) }

func minKey(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

// collect reads a page of a log: it walks index (the primary bucket itself when index is
// primary) and decodes each entry from primary into a T, keeping those that match, up to limit.
func collect[T any](primary, index *bbolt.Bucket, org string, p page, limit int, match func(T) bool) ([]T, error) {
	var out []T
	err := p.walk(index, func(id string, data []byte) (bool, error) {
		if index != primary {
			if data = primary.Get(key(org, id)); data == nil {
				return false, fmt.Errorf("index names missing entry %s", id)
			}
		}
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return false, fmt.Errorf("decode entry %s: %w", id, err)
		}
		if match(v) {
			out = append(out, v)
		}
		return len(out) < limit, nil
	})
	return out, err
}

// orgPrefix returns the first part of k, the organization's, with its terminating zero.
func orgPrefix(k []byte) []byte {
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			continue
		}
		if i+1 < len(k) && k[i+1] == 0xff { // an escaped zero inside the part
			i++
			continue
		}
		return k[:i+1]
	}
	return k
}

// putIndex adds key(org, value, id) to an index of a log, unless value is empty.
func putIndex(index *bbolt.Bucket, org, value, id string) error {
	if value == "" {
		return nil
	}
	return index.Put(key(org, value, id), nil)
}
