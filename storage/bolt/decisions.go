package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The decision log: decisions under key(org, id), indexed by user and by each resource asked
// about. The indexes' values are empty.
var (
	bucketDecisions       = []byte("decisions")           // org, id → decisionRecord
	bucketDecisionsByUser = []byte("decisions_by_user")   // org, user id, id → nothing
	bucketDecisionsBySvc  = []byte("decisions_by_svc_id") // org, resource id, id → nothing
)

// pruneChunk is how many decisions one transaction of DeleteDecisionsBefore removes, so that
// pruning a large backlog never holds the write lock, or memory, for long.
const pruneChunk = 5000

type decisionRecord struct {
	ID             string   `json:"id"`
	OrgID          string   `json:"org_id"`
	Time           int64    `json:"time"`
	RequestID      string   `json:"request_id,omitempty"`
	APIKeyID       string   `json:"api_key_id,omitempty"`
	Endpoint       string   `json:"endpoint"`
	UserID         string   `json:"user_id"`
	ResourceIDs    []string `json:"resource_ids"`
	Allowed        bool     `json:"allowed"`
	PolicyRevision string   `json:"policy_revision"`
	DurationMicros int64    `json:"duration_us"`
}

func (r decisionRecord) decision() storage.Decision {
	return storage.Decision{
		ID: r.ID, OrgID: r.OrgID, Time: fromMillis(r.Time), RequestID: r.RequestID, APIKeyID: r.APIKeyID,
		Endpoint: r.Endpoint, UserID: r.UserID, ResourceIDs: r.ResourceIDs, Allowed: r.Allowed,
		PolicyRevision: r.PolicyRevision, Duration: time.Duration(r.DurationMicros) * time.Microsecond,
	}
}

// InsertDecisions stores decisions in one transaction, shared with concurrent callers. A
// decision whose id is stored already is left as it is.
func (s *Store) InsertDecisions(ctx context.Context, decisions []storage.Decision) error {
	for _, d := range decisions {
		if err := storage.CheckID(d.ID, d.Time); err != nil {
			return fmt.Errorf("insert decisions: %w", err)
		}
	}
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		primary := tx.Bucket(bucketDecisions)
		byUser, bySvc := tx.Bucket(bucketDecisionsByUser), tx.Bucket(bucketDecisionsBySvc)
		for _, d := range decisions {
			k := key(d.OrgID, d.ID)
			if primary.Get(k) != nil {
				continue
			}
			err := put(primary, k, decisionRecord{
				ID: d.ID, OrgID: d.OrgID, Time: millis(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID,
				Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
				PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds(),
			})
			if err != nil {
				return err
			}
			for _, ik := range indexKeys(d.OrgID, d.ID, d.UserID) {
				if err := byUser.Put(ik, nil); err != nil {
					return err
				}
			}
			for _, ik := range indexKeys(d.OrgID, d.ID, d.ResourceIDs...) {
				if err := bySvc.Put(ik, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d decisions: %w", len(decisions), err)
	}
	return nil
}

// ListDecisions returns the organization's decisions that match f, newest first. It walks the
// index of the user or the resource when f names one, and the organization's decisions
// otherwise.
func (s *Store) ListDecisions(ctx context.Context, orgID string, f storage.DecisionFilter) ([]storage.Decision, error) {
	var recs []decisionRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		primary := tx.Bucket(bucketDecisions)
		index, p := primary, page{prefix: key(orgID), since: f.Since, until: f.Until, cursor: f.Cursor}
		switch {
		case f.UserID != "":
			index, p.prefix = tx.Bucket(bucketDecisionsByUser), key(orgID, f.UserID)
		case f.SvcID != "":
			index, p.prefix = tx.Bucket(bucketDecisionsBySvc), key(orgID, f.SvcID)
		}
		var err error
		recs, err = collect(primary, index, orgID, p, f.Limit, func(r decisionRecord) bool {
			return (f.UserID == "" || r.UserID == f.UserID) &&
				(f.SvcID == "" || slices.Contains(r.ResourceIDs, f.SvcID)) &&
				(f.Allowed == nil || r.Allowed == *f.Allowed)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list decisions: %w", err)
	}
	out := make([]storage.Decision, len(recs))
	for i, r := range recs {
		out[i] = r.decision()
	}
	return out, nil
}

// DeleteDecisionsBefore removes every organization's decisions older than t, a chunk per
// transaction, with their index entries.
func (s *Store) DeleteDecisionsBefore(ctx context.Context, t time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			byUser, bySvc := tx.Bucket(bucketDecisionsByUser), tx.Bucket(bucketDecisionsBySvc)
			var err error
			n, err = deleteOlder(tx.Bucket(bucketDecisions), t, pruneChunk, func(data []byte) error {
				var r decisionRecord
				if err := json.Unmarshal(data, &r); err != nil {
					return fmt.Errorf("decode decision: %w", err)
				}
				for _, ik := range indexKeys(r.OrgID, r.ID, r.UserID) {
					if err := byUser.Delete(ik); err != nil {
						return err
					}
				}
				for _, ik := range indexKeys(r.OrgID, r.ID, r.ResourceIDs...) {
					if err := bySvc.Delete(ik); err != nil {
						return err
					}
				}
				return nil
			})
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("delete decisions before %s: %w", t.Format(time.RFC3339), err)
		}
		if n < pruneChunk {
			return total, nil
		}
	}
}
