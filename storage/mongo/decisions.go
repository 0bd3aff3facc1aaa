package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// decisionDoc is one entry of the decision log in the decisions collection. A filter on one
// resource id is an equality on the resource_ids array, which matches any of its elements.
type decisionDoc struct {
	ID             string    `bson:"_id"`
	OrgID          string    `bson:"org_id"`
	Time           time.Time `bson:"time"`
	RequestID      string    `bson:"request_id"`
	APIKeyID       string    `bson:"api_key_id"`
	Endpoint       string    `bson:"endpoint"`
	UserID         string    `bson:"user_id"`
	ResourceIDs    []string  `bson:"resource_ids"`
	Allowed        bool      `bson:"allowed"`
	PolicyRevision string    `bson:"policy_revision"`
	DurationMicros int64     `bson:"duration_us"`
}

func (d decisionDoc) record() storage.Decision {
	return storage.Decision{
		ID: d.ID, OrgID: d.OrgID, Time: d.Time.UTC(), RequestID: d.RequestID, APIKeyID: d.APIKeyID,
		Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
		PolicyRevision: d.PolicyRevision, Duration: time.Duration(d.DurationMicros) * time.Microsecond,
	}
}

// InsertDecisions inserts the decisions; one whose id is stored already is left as it is.
func (s *Store) InsertDecisions(ctx context.Context, decisions []storage.Decision) error {
	docs := make([]decisionDoc, len(decisions))
	for i, d := range decisions {
		if err := storage.CheckID(d.ID, d.Time); err != nil {
			return fmt.Errorf("insert decisions: %w", err)
		}
		ids := d.ResourceIDs
		if ids == nil {
			ids = []string{}
		}
		docs[i] = decisionDoc{
			ID: d.ID, OrgID: d.OrgID, Time: d.Time, RequestID: d.RequestID, APIKeyID: d.APIKeyID,
			Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: ids, Allowed: d.Allowed,
			PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds(),
		}
	}
	if err := insertEntries(ctx, s.db.Collection(colDecisions), docs); err != nil {
		return fmt.Errorf("insert %d decisions: %w", len(decisions), err)
	}
	return nil
}

// ListDecisions returns the organization's decisions that match f, newest first.
func (s *Store) ListDecisions(ctx context.Context, orgID string, f storage.DecisionFilter) ([]storage.Decision, error) {
	filter := pageFilter(orgID, f.Since, f.Until, f.Cursor)
	if f.UserID != "" {
		filter = append(filter, bson.E{Key: "user_id", Value: f.UserID})
	}
	if f.SvcID != "" {
		filter = append(filter, bson.E{Key: "resource_ids", Value: f.SvcID})
	}
	if f.Allowed != nil {
		filter = append(filter, bson.E{Key: "allowed", Value: *f.Allowed})
	}
	docs, err := findPage[decisionDoc](ctx, s.db.Collection(colDecisions), filter, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list decisions: %w", err)
	}
	out := make([]storage.Decision, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// DeleteDecisionsBefore removes every organization's decisions older than t: one deleteMany on
// a range of _id, which begins with the time.
func (s *Store) DeleteDecisionsBefore(ctx context.Context, t time.Time) (int, error) {
	res, err := s.db.Collection(colDecisions).DeleteMany(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: storage.IDTimePrefix(t)}}}})
	if err != nil {
		return 0, fmt.Errorf("delete decisions before %s: %w", t.Format(time.RFC3339), mapErr(err))
	}
	return int(res.DeletedCount), nil
}
