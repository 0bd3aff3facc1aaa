package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/internal/jsonstr"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// The audit trail: events under key(org, id), indexed by the user and the resource they
// concern. The indexes' values are empty.
var (
	bucketEvents       = []byte("events")           // org, id → eventRecord
	bucketEventsByUser = []byte("events_by_user")   // org, user id, id → nothing
	bucketEventsBySvc  = []byte("events_by_svc_id") // org, resource id, id → nothing
)

type eventRecord struct {
	ID         string          `json:"id"`
	OrgID      string          `json:"org_id"`
	Time       int64           `json:"time"`
	RequestID  string          `json:"request_id,omitempty"`
	ActorKind  string          `json:"actor_kind"`
	ActorID    string          `json:"actor_id,omitempty"`
	Action     string          `json:"action"`
	TargetKind string          `json:"target_kind"`
	TargetID   string          `json:"target_id,omitempty"`
	UserID     string          `json:"user_id,omitempty"`
	SvcID      string          `json:"svc_id,omitempty"`
	Before     json.RawMessage `json:"before,omitempty"`
	After      json.RawMessage `json:"after,omitempty"`
}

func (r eventRecord) event() storage.Event {
	return storage.Event{
		ID: r.ID, OrgID: r.OrgID, Time: fromMillis(r.Time), RequestID: r.RequestID,
		Actor:  storage.Actor{Kind: r.ActorKind, ID: r.ActorID},
		Action: r.Action, TargetKind: r.TargetKind, TargetID: r.TargetID,
		UserID: r.UserID, SvcID: r.SvcID, Before: r.Before, After: r.After,
	}
}

// AppendEvents stores events in one transaction, shared with concurrent callers. An event
// whose id is stored already is left as it is.
func (s *Store) AppendEvents(ctx context.Context, events []storage.Event) error {
	if err := checkEventIDs(events); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	err := s.batch(ctx, func(tx *bbolt.Tx) error { return appendEvents(tx, events) })
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(events), err)
	}
	return nil
}

func checkEventIDs(events []storage.Event) error {
	for _, e := range events {
		if err := storage.CheckID(e.ID, e.Time); err != nil {
			return err
		}
	}
	return nil
}

// appendEvents is AppendEvents within tx, for events whose ids have been checked.
func appendEvents(tx *bbolt.Tx, events []storage.Event) error {
	for _, e := range events {
		je, err := encodeEvent(e)
		if err != nil {
			return err
		}
		if err := appendEvent(tx, je); err != nil {
			return err
		}
	}
	return nil
}

// encodeEvent is e as it is stored, an eventRecord's JSON, with the ids of its keys.
func encodeEvent(e storage.Event) (journal.Event, error) {
	data, err := eventRecord{
		ID: e.ID, OrgID: e.OrgID, Time: millis(e.Time), RequestID: e.RequestID,
		ActorKind: e.Actor.Kind, ActorID: e.Actor.ID,
		Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID,
		UserID: e.UserID, SvcID: e.SvcID, Before: e.Before, After: e.After,
	}.appendJSON(make([]byte, 0, 256+len(e.Before)+len(e.After)))
	if err != nil {
		return journal.Event{}, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return journal.Event{OrgID: e.OrgID, ID: e.ID, UserID: e.UserID, SvcID: e.SvcID, Data: data}, nil
}

// appendJSON appends r as json.Marshal writes it, byte for byte, without its reflection: every
// grant and revoke stores an event, and json.Marshal's reflection over the events and their
// snapshots is a noticeable part of a loaded server's CPU. Before and After are checked and
// compacted as json.Marshal does a json.RawMessage.
func (r eventRecord) appendJSON(b []byte) ([]byte, error) {
	field := func(b []byte, name, v string, omitEmpty bool) []byte {
		if v == "" && omitEmpty {
			return b
		}
		return jsonstr.Append(append(append(append(b, ',', '"'), name...), '"', ':'), v)
	}
	b = jsonstr.Append(append(b, `{"id":`...), r.ID)
	b = field(b, "org_id", r.OrgID, false)
	b = strconv.AppendInt(append(b, `,"time":`...), r.Time, 10)
	b = field(b, "request_id", r.RequestID, true)
	b = field(b, "actor_kind", r.ActorKind, false)
	b = field(b, "actor_id", r.ActorID, true)
	b = field(b, "action", r.Action, false)
	b = field(b, "target_kind", r.TargetKind, false)
	b = field(b, "target_id", r.TargetID, true)
	b = field(b, "user_id", r.UserID, true)
	b = field(b, "svc_id", r.SvcID, true)
	for _, raw := range []struct {
		name string
		v    json.RawMessage
	}{{`,"before":`, r.Before}, {`,"after":`, r.After}} {
		if len(raw.v) == 0 {
			continue
		}
		var err error
		if b, err = appendCompactJSON(append(b, raw.name...), raw.v); err != nil {
			return nil, fmt.Errorf("%s is not JSON: %w", strings.Trim(raw.name, `,":`), err)
		}
	}
	return append(b, '}'), nil
}

// appendCompactJSON appends raw compacted, with <, >, &, U+2028 and U+2029 escaped in its
// strings, as json.Marshal writes a json.RawMessage; it fails if raw is not valid JSON.
func appendCompactJSON(b, raw []byte) ([]byte, error) {
	start := len(b)
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	b = buf.Bytes()
	// json.HTMLEscape writes a copy; most snapshots have nothing to escape (U+2028 and U+2029
	// both start with 0xE2).
	if !slices.ContainsFunc(b[start:], func(c byte) bool { return c == '<' || c == '>' || c == '&' || c == 0xE2 }) {
		return b, nil
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, b[start:])
	return append(b[:start], escaped.Bytes()...), nil
}

// appendEvent stores e and its index entries within tx, unless an event of its id is stored
// already.
func appendEvent(tx *bbolt.Tx, e journal.Event) error {
	primary := tx.Bucket(bucketEvents)
	k := key(e.OrgID, e.ID)
	if primary.Get(k) != nil {
		return nil
	}
	if err := primary.Put(k, e.Data); err != nil {
		return err
	}
	if err := putIndex(tx.Bucket(bucketEventsByUser), e.OrgID, e.UserID, e.ID); err != nil {
		return err
	}
	return putIndex(tx.Bucket(bucketEventsBySvc), e.OrgID, e.SvcID, e.ID)
}

// recordEvents returns the events that record makes of v, encoded as they are stored; a nil
// record makes none.
func recordEvents[T any](record func(T) []storage.Event, v T) ([]journal.Event, error) {
	if record == nil {
		return nil, nil
	}
	events := record(v)
	if err := checkEventIDs(events); err != nil {
		return nil, fmt.Errorf("record events: %w", err)
	}
	out := make([]journal.Event, len(events))
	for i, e := range events {
		var err error
		if out[i], err = encodeEvent(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListEvents returns the organization's events that match f, newest first. It walks the index
// of the user or the resource when f names one, and the organization's events otherwise.
func (s *Store) ListEvents(ctx context.Context, orgID string, f storage.EventFilter) ([]storage.Event, error) {
	var recs []eventRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		primary := tx.Bucket(bucketEvents)
		index, p := primary, page{prefix: key(orgID), since: f.Since, until: f.Until, cursor: f.Cursor}
		switch {
		case f.UserID != "":
			index, p.prefix = tx.Bucket(bucketEventsByUser), key(orgID, f.UserID)
		case f.SvcID != "":
			index, p.prefix = tx.Bucket(bucketEventsBySvc), key(orgID, f.SvcID)
		}
		var err error
		recs, err = collect(primary, index, orgID, p, f.Limit, func(r eventRecord) bool {
			return (f.UserID == "" || r.UserID == f.UserID) &&
				(f.SvcID == "" || r.SvcID == f.SvcID) &&
				(f.Action == "" || r.Action == f.Action)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]storage.Event, len(recs))
	for i, r := range recs {
		out[i] = r.event()
	}
	return out, nil
}
