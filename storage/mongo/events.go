package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// eventDoc is one event of the audit trail in the events collection. The snapshots are kept as
// the JSON text they are, so that they come back byte for byte.
type eventDoc struct {
	ID         string    `bson:"_id"`
	OrgID      string    `bson:"org_id"`
	Time       time.Time `bson:"time"`
	RequestID  string    `bson:"request_id"`
	ActorKind  string    `bson:"actor_kind"`
	ActorID    string    `bson:"actor_id"`
	Action     string    `bson:"action"`
	TargetKind string    `bson:"target_kind"`
	TargetID   string    `bson:"target_id"`
	UserID     string    `bson:"user_id"`
	SvcID      string    `bson:"svc_id"`
	Before     string    `bson:"before,omitempty"`
	After      string    `bson:"after,omitempty"`
}

func (d eventDoc) record() storage.Event {
	e := storage.Event{
		ID: d.ID, OrgID: d.OrgID, Time: d.Time.UTC(), RequestID: d.RequestID,
		Actor:  storage.Actor{Kind: d.ActorKind, ID: d.ActorID},
		Action: d.Action, TargetKind: d.TargetKind, TargetID: d.TargetID, UserID: d.UserID, SvcID: d.SvcID,
	}
	if d.Before != "" {
		e.Before = []byte(d.Before)
	}
	if d.After != "" {
		e.After = []byte(d.After)
	}
	return e
}

// AppendEvents inserts the events; one whose id is stored already is left as it is.
func (s *Store) AppendEvents(ctx context.Context, events []storage.Event) error {
	docs := make([]eventDoc, len(events))
	for i, e := range events {
		if err := storage.CheckID(e.ID, e.Time); err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		docs[i] = eventDoc{
			ID: e.ID, OrgID: e.OrgID, Time: e.Time, RequestID: e.RequestID,
			ActorKind: e.Actor.Kind, ActorID: e.Actor.ID,
			Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID, UserID: e.UserID, SvcID: e.SvcID,
			Before: string(e.Before), After: string(e.After),
		}
	}
	if err := insertEntries(ctx, s.db.Collection(colEvents), docs); err != nil {
		return fmt.Errorf("append %d events: %w", len(events), err)
	}
	return nil
}

// ListEvents returns the organization's events that match f, newest first.
func (s *Store) ListEvents(ctx context.Context, orgID string, f storage.EventFilter) ([]storage.Event, error) {
	filter := pageFilter(orgID, f.Since, f.Until, f.Cursor)
	for _, eq := range []struct{ field, value string }{{"user_id", f.UserID}, {"svc_id", f.SvcID}, {"action", f.Action}} {
		if eq.value != "" {
			filter = append(filter, bson.E{Key: eq.field, Value: eq.value})
		}
	}
	docs, err := findPage[eventDoc](ctx, s.db.Collection(colEvents), filter, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]storage.Event, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}
