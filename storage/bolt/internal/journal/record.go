package journal

import (
	"encoding/binary"
	"errors"
)

// Record is one journaled change: a user's grant of a resource as it is after the change, and
// the events that record it. A record that changes no grant carries only events.
type Record struct {
	Seq        uint64 // given by Append: one more than the record before
	OrgID      string
	UserID     string
	ResourceID string
	Changed    bool // the grant changed: it is now as Held says
	Held       bool // the grant exists after the change
	CreatedAt  int64
	ExpiresAt  int64
	Events     []Event
}

// Event is an audit event as the data file stores it, encoded once when its change is
// journaled, with the ids its keys are made of.
type Event struct {
	OrgID, ID, UserID, SvcID string
	Data                     []byte
}

// A record is written as the format's version (a byte, recordFormat), its sequence number (8
// bytes), a flags byte (1: Changed, 2: Held), CreatedAt and ExpiresAt (8 bytes each), the three
// ids, the number of events (a uvarint), and each event's four ids and data; an id or data is
// its length (a uvarint) and its bytes. It is binary rather than JSON: every grant and revoke
// is encoded, and JSON would cost a loaded server noticeably more CPU. A record of another
// version ends a file's reading, like a damaged one: one of an earlier format can only be left
// from an earlier turn.
const recordFormat = 1

// recordHead is the length of a record's fixed part: version, sequence number, flags, times.
const recordHead = 1 + 8 + 1 + 8 + 8

const (
	flagChanged = 1 << iota
	flagHeld
)

// appendTo appends r's encoding to b.
func (r *Record) appendTo(b []byte) []byte {
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	var flags byte
	if r.Changed {
		flags |= flagChanged
	}
	if r.Held {
		flags |= flagHeld
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(r.CreatedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(r.ExpiresAt))
	b = appendField(appendField(appendField(b, r.OrgID), r.UserID), r.ResourceID)
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for _, e := range r.Events {
		b = appendField(appendField(appendField(appendField(b, e.OrgID), e.ID), e.UserID), e.SvcID)
		b = appendField(b, string(e.Data))
	}
	return b
}

func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var (
	errShortRecord = errors.New("record cut short")
	errOtherFormat = errors.New("record of another format")
)

// decodeRecord reads a record that appendTo wrote.
func decodeRecord(b []byte) (r Record, err error) {
	if len(b) < recordHead {
		return r, errShortRecord
	}
	if b[0] != recordFormat {
		return r, errOtherFormat
	}
	b = b[1:]
	r.Seq = binary.BigEndian.Uint64(b)
	r.Changed, r.Held = b[8]&flagChanged != 0, b[8]&flagHeld != 0
	r.CreatedAt = int64(binary.BigEndian.Uint64(b[9:]))
	r.ExpiresAt = int64(binary.BigEndian.Uint64(b[17:]))
	b = b[25:]
	field := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			err = errShortRecord
			b = nil
			return ""
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	r.OrgID, r.UserID, r.ResourceID = field(), field(), field()
	n, k := binary.Uvarint(b)
	// An event takes at least five bytes, one for each field's length: a count of more
	// cannot be whole, and is refused before it is allocated.
	if err != nil || k <= 0 || n > uint64(len(b)-k)/5 {
		return r, errShortRecord
	}
	b = b[k:]
	r.Events = make([]Event, n)
	for i := range r.Events {
		e := &r.Events[i]
		e.OrgID, e.ID, e.UserID, e.SvcID = field(), field(), field(), field()
		e.Data = []byte(field())
	}
	if err == nil && len(b) != 0 {
		err = errors.New("bytes after the record")
	}
	return r, err
}
