package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The decision log: each organization's decisions in blocks, under key(org, id) where id is
// the newest of the block's decisions, so that keys sort blocks by time within each
// organization. A block under a key holds exactly the organization's decisions whose ids
// are at most the key's id and greater than the key before it, newest first
// (decisionformat.go): the blocks of an organization part its ids into ranges, one after
// another. A batch of the decision log is a few blocks of each of its organizations (maxBlock),
// appended after their newest: a few values to write, each in one piece, instead of a B-tree
// element per decision, each sought from the root twice (whether it was stored, then where to
// put it), which costs more CPU a decision and takes more pages. A decision older than the
// newest stored, which a clock stepping back or a batch written again can give, joins the
// block whose range holds it. Values that earlier versions wrote, one decision under its own
// id, are blocks of one.
//
// Decisions are not indexed by user or resource, unlike the audit trail's events: every check
// writes one, and an index entry goes to a page of its own, so the two indexes would make each
// decision rewrite two scattered pages, and a loaded server would answer noticeably fewer
// checks. A list filtered by user or resource walks the organization's decisions newest first
// instead, skipping those that cannot match without decoding them; since and until bound the
// walk.
var bucketDecisions = []byte("decisions") // org, id of the newest → a block of decisions

// pruneChunk is about how many decisions one transaction of DeleteDecisionsBefore removes (it
// removes whole blocks), so that pruning a large backlog never holds the write lock, or memory,
// for long.
const pruneChunk = 5000

// maxBlock bounds the decisions of a block: a batch of more is written as several, and a block
// grown past it by older decisions is cut again, so that reading the newest decisions, or
// adding an old one, never reads or writes a value without bound. It is small because bbolt
// keeps at least two values in a B-tree node, and up to four when they are larger than a page,
// and writes the whole of each node a commit changes: with large blocks, each batch rewrites
// the blocks before it in its node, many times the bytes it stores. Blocks of 64 write fewer
// bytes a decision than smaller or larger ones, and cost less CPU than large ones.
const maxBlock = 64

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

// InsertDecisions stores decisions in one transaction, shared with concurrent callers: as a
// block per organization when they are newer than its newest, as they are when the decision log
// writes them. A decision whose id is stored already is left as it is.
func (s *Store) InsertDecisions(ctx context.Context, decisions []storage.Decision) error {
	for _, d := range decisions {
		if err := storage.CheckID(d.ID, d.Time); err != nil {
			return fmt.Errorf("insert decisions: %w", err)
		}
	}
	byOrg := decisionsByOrg(decisions)
	err := s.batchApart(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketDecisions)
		for _, g := range byOrg {
			if err := insertDecisions(b, g.org, g.entries); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d decisions: %w", len(decisions), err)
	}
	return nil
}

// orgDecisions are the decisions of one organization, newest first.
type orgDecisions struct {
	org     string
	entries []decisionEntry
}

// decisionsByOrg encodes decisions and sorts them by organization, each newest first; of
// decisions with the same id, the first is kept.
func decisionsByOrg(decisions []storage.Decision) []orgDecisions {
	var out []orgDecisions
	at := make(map[string]int)
	// The values share one array, sized for a check's decision (when it grows, those made
	// before keep the old one).
	values := make([]byte, 0, 128*len(decisions))
	for _, d := range decisions {
		i, ok := at[d.OrgID]
		if !ok {
			i = len(out)
			at[d.OrgID] = i
			out = append(out, orgDecisions{org: d.OrgID})
		}
		n := len(values)
		values = decisionRecord{
			Time: millis(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID,
			Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
			PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds(),
		}.appendBinary(values)
		out[i].entries = append(out[i].entries, decisionEntry{id: d.ID, rec: values[n:len(values):len(values)]})
	}
	for i := range out {
		es := out[i].entries
		// The decision log's batches come oldest first, nearly always in order.
		if ascending(es) {
			slices.Reverse(es)
			continue
		}
		slices.SortStableFunc(es, newestFirst)
		out[i].entries = slices.CompactFunc(es, func(a, b decisionEntry) bool { return a.id == b.id })
	}
	return out
}

// ascending reports whether entries are oldest first with no two ids alike.
func ascending(entries []decisionEntry) bool {
	for i := 1; i < len(entries); i++ {
		if entries[i-1].id >= entries[i].id {
			return false
		}
	}
	return true
}

func newestFirst(a, b decisionEntry) int { return strings.Compare(b.id, a.id) }

// insertDecisions stores entries, newest first, of organization org: those newer than its
// newest stored as new blocks, each older one into the block whose range holds it.
func insertDecisions(b *bbolt.Bucket, org string, entries []decisionEntry) error {
	prefix := key(org)
	newest := newestDecision(b.Cursor(), prefix)
	n := 0
	for n < len(entries) && entries[n].id > newest {
		n++
	}
	if err := putBlocks(b, org, entries[:n]); err != nil {
		return err
	}
	for _, e := range entries[n:] {
		if err := insertOlder(b, prefix, org, e); err != nil {
			return err
		}
	}
	return nil
}

// newestDecision returns the id of the newest decision under prefix, key(org): the key of its
// last block; "" when it has none.
func newestDecision(c *bbolt.Cursor, prefix []byte) string {
	k, _ := blockAt(c, prefix, "")
	if !isUnder(k, prefix) {
		return ""
	}
	return idUnder(k, prefix)
}

// blockAt moves c to the block under prefix, key(org), whose range holds the ids that begin
// with below, or to the last block before it: the newest block that may hold ids sorting
// before below. An empty below stands above every id, so it finds the newest block. The key
// it returns is not under prefix when there is no such block.
func blockAt(c *bbolt.Cursor, prefix []byte, below string) (k, v []byte) {
	bound := append(bytes.Clone(prefix), below...)
	if below == "" {
		bound = append(bound, 0xff)
	}
	k, v = c.Seek(bound)
	if k == nil {
		return c.Last()
	}
	if !isUnder(k, prefix) {
		return c.Prev()
	}
	return k, v
}

// insertOlder adds e to the block of org whose range holds its id, the first under a key not
// below it, unless the block holds it already.
func insertOlder(b *bbolt.Bucket, prefix []byte, org string, e decisionEntry) error {
	k, v := b.Cursor().Seek(key(org, e.id))
	if !isUnder(k, prefix) {
		// No block is as new: e is newer than every decision of org after all.
		return putBlocks(b, org, []decisionEntry{e})
	}
	entries, err := readEntries(idUnder(k, prefix), v, nil)
	if err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(entries, e, newestFirst)
	if found {
		return nil
	}
	// The block's newest stays its newest, so it keeps its key.
	return putBlocks(b, org, slices.Insert(entries, i, e))
}

// putBlocks stores entries, newest first, in blocks of at most maxBlock, each under the id of
// its newest.
func putBlocks(b *bbolt.Bucket, org string, entries []decisionEntry) error {
	for chunk := range slices.Chunk(entries, maxBlock) {
		k := key(org, chunk[0].id)
		if err := b.Put(k, appendBlock(nil, chunk)); err != nil {
			return fmt.Errorf("put %q: %w", k, err)
		}
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
	// Ids hold only hexadecimal digits and hyphens, so an id, or the beginning of one, bounds a
	// range of them by itself: below is exclusive, from inclusive.
	var below, from string
	if !f.Until.IsZero() {
		below = storage.IDTimePrefix(f.Until)
	}
	if f.Cursor != "" && (below == "" || f.Cursor < below) {
		below = f.Cursor
	}
	if !f.Since.IsZero() {
		from = storage.IDTimePrefix(f.Since)
	}
	var out []storage.Decision
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := key(orgID)
		c := tx.Bucket(bucketDecisions).Cursor()
		var entries []decisionEntry
		for k, v := blockAt(c, prefix, below); isUnder(k, prefix); k, v = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			newest := idUnder(k, prefix)
			if newest < from {
				return nil // this block and those before it are older than f.Since
			}
			var err error
			if entries, err = readEntries(newest, v, entries[:0]); err != nil {
				return err
			}
			for _, e := range entries {
				if below != "" && e.id >= below {
					continue
				}
				if e.id < from {
					return nil
				}
				if !holdsAll(e.rec, packed, quoted) {
					continue
				}
				r, err := readDecision(orgID, e.id, e.rec)
				if err != nil {
					return err
				}
				if (f.UserID == "" || r.UserID == f.UserID) &&
					(f.SvcID == "" || slices.Contains(r.ResourceIDs, f.SvcID)) &&
					(f.Allowed == nil || r.Allowed == *f.Allowed) {
					out = append(out, r.decision())
					if len(out) >= f.Limit {
						return nil
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list decisions: %w", err)
	}
	return out, nil
}

// holdsAll reports whether the value rec of a decision may hold every string asked about: it
// holds each as its form writes it, packed or, in a JSON value, quoted.
func holdsAll(rec []byte, packed, quoted [][]byte) bool {
	needles := packed
	if len(rec) > 0 && rec[0] == '{' {
		needles = quoted
	}
	for _, n := range needles {
		if !bytes.Contains(rec, n) {
			return false
		}
	}
	return true
}

// DeleteDecisionsBefore removes every organization's decisions older than t, about pruneChunk
// of them a transaction.
func (s *Store) DeleteDecisionsBefore(ctx context.Context, t time.Time) (int, error) {
	bound := storage.IDTimePrefix(t)
	total := 0
	for {
		var n int
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			var err error
			n, err = pruneDecisions(tx.Bucket(bucketDecisions), bound, pruneChunk)
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

// pruneDecisions removes the decisions of any organization whose ids sort before bound, the
// ids of a time, block by block until it has removed at least max of them, and reports how many
// it removed. Of each organization, it deletes the blocks wholly older, and puts the first block
// that is not again without its older decisions.
func pruneDecisions(b *bbolt.Bucket, bound string, max int) (int, error) {
	type block struct{ k, v []byte } // a nil v deletes
	var changes []block
	removed := 0
	c := b.Cursor()
	for k, v := c.First(); k != nil && removed < max; {
		org := orgPrefix(k)
		for ; isUnder(k, org) && removed < max; k, v = c.Next() {
			newest := idUnder(k, org)
			entries, err := readEntries(newest, v, nil)
			if err != nil {
				return 0, err
			}
			if newest < bound {
				changes = append(changes, block{bytes.Clone(k), nil})
				removed += len(entries)
				continue
			}
			// The organization's first block with newer decisions: it may end with older
			// ones, and those after it hold newer ones only.
			keep := slices.IndexFunc(entries, func(e decisionEntry) bool { return e.id < bound })
			if keep >= 0 {
				changes = append(changes, block{bytes.Clone(k), appendBlock(nil, entries[:keep])})
				removed += len(entries) - keep
			}
			break
		}
		k, v = c.Seek(append(bytes.Clone(org), 0xff)) // the next organization's first
	}
	for _, ch := range changes {
		var err error
		if ch.v == nil {
			err = b.Delete(ch.k)
		} else {
			err = b.Put(ch.k, ch.v)
		}
		if err != nil {
			return 0, err
		}
	}
	return removed, nil
}
