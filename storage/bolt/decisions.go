package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
		var buf []byte
		for _, d := range decisions {
			k := key(d.OrgID, d.ID)
			if primary.Get(k) != nil {
				continue
			}
			buf = decisionRecord{
				ID: d.ID, OrgID: d.OrgID, Time: millis(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID,
				Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
				PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds(),
			}.appendJSON(buf[:0])
			// Put keeps a reference to the value until the transaction commits.
			if err := primary.Put(k, bytes.Clone(buf)); err != nil {
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
	var needles [][]byte
	if f.UserID != "" {
		needles = append(needles, jsonString(f.UserID))
	}
	if f.SvcID != "" {
		needles = append(needles, jsonString(f.SvcID))
	}
	var out []storage.Decision
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		primary := tx.Bucket(bucketDecisions)
		p := page{prefix: key(orgID), since: f.Since, until: f.Until, cursor: f.Cursor}
		return p.walk(primary, func(id string, data []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			for _, n := range needles {
				if !bytes.Contains(data, n) {
					return true, nil
				}
			}
			var r decisionRecord
			if err := json.Unmarshal(data, &r); err != nil {
				return false, fmt.Errorf("decode decision %s: %w", id, err)
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

// jsonString is s as encoding/json writes it in a record, quotes included: a record that holds
// s as a value holds these bytes.
func jsonString(s string) []byte {
	return appendJSONString(nil, s)
}

// appendJSON appends the record as encoding/json encodes it, byte for byte, without
// reflection: every access check writes one.
func (r decisionRecord) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"org_id":`...)
	b = appendJSONString(b, r.OrgID)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, r.Time, 10)
	if r.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, r.RequestID)
	}
	if r.APIKeyID != "" {
		b = append(b, `,"api_key_id":`...)
		b = appendJSONString(b, r.APIKeyID)
	}
	b = append(b, `,"endpoint":`...)
	b = appendJSONString(b, r.Endpoint)
	b = append(b, `,"user_id":`...)
	b = appendJSONString(b, r.UserID)
	b = append(b, `,"resource_ids":`...)
	if r.ResourceIDs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, id := range r.ResourceIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id)
		}
		b = append(b, ']')
	}
	b = append(b, `,"allowed":`...)
	b = strconv.AppendBool(b, r.Allowed)
	b = append(b, `,"policy_revision":`...)
	b = appendJSONString(b, r.PolicyRevision)
	b = append(b, `,"duration_us":`...)
	b = strconv.AppendInt(b, r.DurationMicros, 10)
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it. Printable ASCII that needs no
// escape is copied; anything else is left to encoding/json, so the two never differ.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, err := json.Marshal(s)
			if err != nil {
				panic(err) // a string always encodes
			}
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
