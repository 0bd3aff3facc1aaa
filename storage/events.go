package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantry/grantry/internal/uid"
)

// EventStore keeps the audit trail: one Event per change of state, appended after the change
// succeeded and never altered. Events are kept for good; only decisions expire.
type EventStore interface {
	// AppendEvents stores events, which may belong to several organizations. Each ID must
	// come from an EntryIDs made for its Time (it returns an error wrapping ErrInvalidID if
	// not). Appending an event whose ID is already stored leaves the stored one as it is, so
	// that a caller may retry a batch that failed midway.
	AppendEvents(ctx context.Context, events []Event) error
	// ListEvents returns the organization's events that match f, newest first (by ID, which
	// is time order), at most f.Limit of them.
	ListEvents(ctx context.Context, orgID string, f EventFilter) ([]Event, error)
}

// Event is one change of state in the audit trail: who did what to which record, when, and
// what the record was before and after where that applies. Snapshots never hold secrets: no
// key, key hash, token or third-party credential.
type Event struct {
	ID    string
	OrgID string
	Time  time.Time
	// RequestID is the X-Request-ID of the request that made the change; empty for changes
	// made by Grantry itself.
	RequestID string
	Actor     Actor
	// Action says what happened, as "<kind>.<verb>": "resource.created", "grant.revoked", ...
	Action string
	// TargetKind and TargetID name the record changed: "model" and its id, "user" and its id.
	TargetKind string
	TargetID   string
	// UserID and SvcID are the user and the resource the change concerns, where there is one,
	// so that the trail can be searched by either.
	UserID string
	SvcID  string
	// Before and After are JSON objects: the record before and after the change. Nil where
	// there was no record (before a creation, after a deletion).
	Before json.RawMessage
	After  json.RawMessage
}

// EventFilter selects events. Zero fields select everything.
type EventFilter struct {
	UserID string
	SvcID  string
	Action string
	Since  time.Time // events at or after Since
	Until  time.Time // events before Until
	// Cursor is the ID of the last event of the previous page: only older events are returned.
	Cursor string
	// Limit is the most events returned; it must be positive.
	Limit int
}

// ErrInvalidID means an event or decision id was not made by EntryIDs for the record's time.
var ErrInvalidID = errors.New("id was not made for the record's time")

// EntryIDs makes the ids of events and decisions. An id begins with the record's time in
// Unix milliseconds and then a number that grows with every id made, so that sorting ids as
// text sorts records by time, and records of the same millisecond in the order they were
// made; a random tail, drawn once per EntryIDs, keeps ids of several replicas apart. Stores
// rely on this to page by id and to select times by id range. The zero value is ready; keep
// one per process.
type EntryIDs struct {
	n    atomic.Uint64
	once sync.Once
	tail string
}

// New returns a new id for a record of time t, which must not be before 1970. It is on the
// path of every access check, so it formats by hand and draws no randomness.
func (g *EntryIDs) New(t time.Time) string {
	g.once.Do(func() { g.tail = uid.New()[:8] })
	b := appendIDTimePrefix(make([]byte, 0, 34), t)
	b = appendHex12(b, g.n.Add(1))
	b = append(b, '-')
	b = append(b, g.tail...)
	return string(b)
}

// IDTimePrefix is how every id of a record of time t begins. Ids of earlier times sort before
// it, and ids of t and later after it, so stores use it as the bound of a time range.
func IDTimePrefix(t time.Time) string {
	return string(appendIDTimePrefix(make([]byte, 0, idTimePrefixLen), t))
}

// idTimePrefixLen is the length of every IDTimePrefix: twelve hexadecimal digits and a dash.
const idTimePrefixLen = 13

// appendIDTimePrefix appends IDTimePrefix(t).
func appendIDTimePrefix(b []byte, t time.Time) []byte {
	return append(appendHex12(b, uint64(max(t.UnixMilli(), 0))), '-')
}

// appendHex12 appends the low 48 bits of n as 12 lowercase hexadecimal digits.
func appendHex12(b []byte, n uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 44; shift >= 0; shift -= 4 {
		b = append(b, digits[n>>shift&0xf])
	}
	return b
}

// CheckID returns an error wrapping ErrInvalidID unless id was made by EntryIDs for time t.
func CheckID(id string, t time.Time) error {
	// The prefix is made on the stack: stores check every decision's id as it is written, and
	// IDTimePrefix's string would be one allocation per check.
	var prefix [idTimePrefixLen]byte
	if len(id) != 34 || id[:idTimePrefixLen] != string(appendIDTimePrefix(prefix[:0], t)) {
		return fmt.Errorf("id %q: %w", id, ErrInvalidID)
	}
	return nil
}
