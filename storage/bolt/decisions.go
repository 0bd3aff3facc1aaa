package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The decision log: decisions under key(org, id), which sorts them by time within each
// organization, so that a batch of new decisions appends to the end of the tree.
//
// Decisions are not indexed by user or resource, unlike the audit trail's events: every check
// writes one, and an index entry goes to a page of its own, so the two indexes made each
// decision rewrite two scattered pages: with them, the make bench workload got about 5,900
// checks/s pinned, without them about 6,900 (bin/grantry-bench load, two runs each). A list
// filtered by user or resource walks the organization's decisions newest first instead,
// skipping those that cannot match without decoding them; since and until bound the walk.
var bucketDecisions = []byte("decisions") // org, id → decisionRecord

// pruneChunk is how many decisions one transaction of DeleteDecisionsBefore removes, so that
// pruning a large backlog never holds the write lock, or memory, for long.
const pruneChunk = 5000

// decisionRecord is a decision as stored: in the compact form of decisionformat.go, or as the
// JSON of these tags, which earlier versions wrote.
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
		// New decisions go to the end of their organization's range: pages filled fuller
		// than bbolt's default half split less often and are fewer to write.
		primary.FillPercent = 0.9
		// One cursor finds whether each id is stored already: Get makes one a call.
		c := primary.Cursor()
		// The values share one array, sized for a check's decision: Put keeps a reference to
		// its value until the transaction commits, and a value is never written again once
		// put (when the array grows, those put before keep the old one).
		values := make([]byte, 0, 128*len(decisions))
		var k []byte // each key in turn: bbolt's Put copies the key (since v1.4), unlike the value
		for _, d := range decisions {
			k = appendKey(k[:0], d.OrgID, d.ID)
			if found, _ := c.Seek(k); bytes.Equal(found, k) {
				continue
			}
			n := len(values)
			values = decisionRecord{
				Time: millis(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID,
				Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
				PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds(),
			}.appendBinary(values)
			if err := primary.Put(k, values[n:len(values):len(values)]); err != nil {
				return fmt.Errorf("put %q: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d decisions: %w", len(decisions), err)
	}
	return nil
}

// ListDecisions returns the organization's decisions that match f, newest first, walking them
// from f.Cursor or f.Until back to f.Since. A decision whose stored bytes do not hold the user or
// resource asked about is skipped without being decoded.
func (s *Store) ListDecisions(ctx context.Context, orgID string, f storage.DecisionFilter) ([]storage.Decision, error) {
	// A value that holds a string holds it as its form writes it: packed, or, in a value
	// written as JSON, quoted as encoding/json quotes it.
	var packed, quoted [][]byte
	for _, s := range []string{f.UserID, f.SvcID} {
		if s != "" {
			q, err := json.Marshal(s)
			if err != nil {
				return nil, fmt.Errorf("list decisions: %w", err)
			}
			packed, quoted = append(packed, appendPacked(nil, s)), append(quoted, q)
		}
	}
	var out []storage.Decision
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		primary := tx.Bucket(bucketDecisions)
		p := page{prefix: key(orgID), since: f.Since, until: f.Until, cursor: f.Cursor}
		return p.walk(primary, func(id string, data []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			needles := packed
			if len(data) > 0 && data[0] == '{' {
				needles = quoted
			}
			for _, n := range needles {
				if !bytes.Contains(data, n) {
					return true, nil
				}
			}
			r, err := readDecision(orgID, id, data)
			if err != nil {
				return false, err
			}
			if (f.UserID == "" || r.UserID == f.UserID) &&
				(f.SvcID == "" || slices.Contains(r.ResourceIDs, f.SvcID)) &&
				(f.Allowed == nil || r.Allowed == *f.Allowed) {
				out = append(out, r.decision())
			}
			return len(out) < f.Limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list decisions: %w", err)
	}
	return out, nil
}

// DeleteDecisionsBefore removes every organization's decisions older than t, a chunk per
// transaction.
func (s *Store) DeleteDecisionsBefore(ctx context.Context, t time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			var err error
			n, err = deleteOlder(tx.Bucket(bucketDecisions), t, pruneChunk)
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
