package bolt

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The behavioural suite (storagetest) holds the decision log to its contract: order, filters,
// pages, batches written again or older than the newest, pruning in the middle of a batch. These
// tests hold the embedded store to how it keeps it: blocks of at most maxBlock per organization
// and batch, each block holding exactly the range of ids its key and the key before it bound.

func openDecisionStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// someDecisions makes n decisions of org, a millisecond apart from from on, oldest first.
func someDecisions(ids *storage.EntryIDs, org string, from time.Time, n int) []storage.Decision {
	out := make([]storage.Decision, n)
	for i := range out {
		at := from.Add(time.Duration(i) * time.Millisecond).UTC()
		out[i] = storage.Decision{ID: ids.New(at), OrgID: org, Time: at, RequestID: fmt.Sprintf("req-%d", i),
			APIKeyID: "key", Endpoint: "can_user_access", UserID: fmt.Sprintf("u-%d", i%7),
			ResourceIDs: []string{fmt.Sprintf("00000000-0000-4000-8000-%012d", i%11)}, Allowed: i%3 == 0,
			PolicyRevision: "133edd4b", Duration: time.Duration(i) * time.Microsecond}
	}
	return out
}

// storedBlocks returns the ids of each of org's blocks, as stored: oldest block first, each
// block's ids newest first. It fails t if a block breaks the rule of the ranges.
func storedBlocks(t *testing.T, s *Store, org string) [][]string {
	t.Helper()
	var out [][]string
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := key(org)
		c := tx.Bucket(bucketDecisions).Cursor()
		before := ""
		for k, v := c.Seek(prefix); isUnder(k, prefix); k, v = c.Next() {
			newest := string(k[len(prefix) : len(k)-1])
			entries, err := readEntries(newest, v, nil)
			if err != nil {
				return err
			}
			var ids []string
			for _, e := range entries {
				ids = append(ids, e.id)
			}
			if oldest := ids[len(ids)-1]; oldest <= before {
				t.Errorf("block %s holds %s, not after the block before it (%s)", newest, oldest, before)
			}
			out, before = append(out, ids), newest
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func idsOf(ds []storage.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func newestFirstIDs(ds []storage.Decision) []string {
	ids := idsOf(ds)
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

func listAll(t *testing.T, s *Store, org string) []storage.Decision {
	t.Helper()
	got, err := s.ListDecisions(t.Context(), org, storage.DecisionFilter{Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

var decisionsFrom = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// TestDecisionBatchIsABlockPerOrganization: a batch of at most maxBlock decisions of an
// organization is stored as one value per organization, under its newest decision's id,
// whatever order the batch lists them in.
func TestDecisionBatchIsABlockPerOrganization(t *testing.T) {
	s := openDecisionStore(t)
	var ids storage.EntryIDs
	first := someDecisions(&ids, "org-a", decisionsFrom, maxBlock)
	theirs := someDecisions(&ids, "org-b", decisionsFrom, 3)
	second := someDecisions(&ids, "org-a", decisionsFrom.Add(time.Second), 5)
	batch := slices.Concat(first[:maxBlock/2], theirs, first[maxBlock/2:])
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	for _, b := range [][]storage.Decision{batch, second} {
		if err := s.InsertDecisions(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	want := [][]string{newestFirstIDs(first), newestFirstIDs(second)}
	if diff := cmp.Diff(want, storedBlocks(t, s, "org-a")); diff != "" {
		t.Errorf("org-a's blocks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{newestFirstIDs(theirs)}, storedBlocks(t, s, "org-b")); diff != "" {
		t.Errorf("org-b's blocks (-want +got):\n%s", diff)
	}
}

// TestOlderDecisionJoinsTheBlockThatHoldsIt: a decision older than the newest stored goes to the
// block whose range holds its id, a single decision stored by an earlier version included; one
// stored already changes nothing.
func TestOlderDecisionJoinsTheBlockThatHoldsIt(t *testing.T) {
	s := openDecisionStore(t)
	var ids storage.EntryIDs
	all := someDecisions(&ids, "org", decisionsFrom, 12)
	// all[0] and all[1] as an earlier version stored them, one a value; then two blocks.
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, d := range all[:2] {
			rec := decisionRecord{Time: millis(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID, Endpoint: d.Endpoint,
				UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed, PolicyRevision: d.PolicyRevision,
				DurationMicros: d.Duration.Microseconds()}
			if err := tx.Bucket(bucketDecisions).Put(key(d.OrgID, d.ID), rec.appendBinary(nil)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(ds ...storage.Decision) {
		t.Helper()
		if err := s.InsertDecisions(t.Context(), ds); err != nil {
			t.Fatal(err)
		}
	}
	insert(all[2], all[3], all[5])
	insert(all[7], all[8], all[10], all[11])
	// Older than every block: joins the first; between two: the later one's; an old single
	// value's range: becomes a block with it; stored already: nothing.
	insert(all[9], all[4], all[6], all[3], all[0])
	s2, s1 := []string{all[1].ID}, []string{all[0].ID}
	want := [][]string{s1, s2,
		{all[5].ID, all[4].ID, all[3].ID, all[2].ID},
		{all[11].ID, all[10].ID, all[9].ID, all[8].ID, all[7].ID, all[6].ID}}
	if diff := cmp.Diff(want, storedBlocks(t, s, "org")); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	older := someDecisions(&ids, "org", decisionsFrom.Add(-time.Hour), 1)[0]
	insert(older)
	want[0] = []string{all[0].ID, older.ID}
	if diff := cmp.Diff(want, storedBlocks(t, s, "org")); diff != "" {
		t.Errorf("blocks after an older decision than all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(newestFirstIDs(append(all, older)), idsOf(listAll(t, s, "org"))); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}

// TestBlocksHoldAtMostMaxBlock: a large batch is cut into blocks of maxBlock, and a full block
// that an older decision joins is cut in two.
func TestBlocksHoldAtMostMaxBlock(t *testing.T) {
	s := openDecisionStore(t)
	var ids storage.EntryIDs
	all := someDecisions(&ids, "org", decisionsFrom, 2*maxBlock+2)
	late := all[maxBlock/2]
	batch := slices.Delete(slices.Clone(all), maxBlock/2, maxBlock/2+1)
	if err := s.InsertDecisions(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	sizes := func() []int {
		var n []int
		for _, b := range storedBlocks(t, s, "org") {
			n = append(n, len(b))
		}
		return n
	}
	if diff := cmp.Diff([]int{1, maxBlock, maxBlock}, sizes()); diff != "" {
		t.Errorf("block sizes of a batch of %d (-want +got):\n%s", len(batch), diff)
	}
	if err := s.InsertDecisions(t.Context(), []storage.Decision{late}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 1, maxBlock, maxBlock}, sizes()); diff != "" {
		t.Errorf("block sizes after one joined a full block (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(newestFirstIDs(all), idsOf(listAll(t, s, "org"))); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}

// TestPruneKeepsTheNewerPartOfABlock: pruning removes whole blocks that are older, and puts the
// block that holds the bound again with its newer decisions only, under the same key.
func TestPruneKeepsTheNewerPartOfABlock(t *testing.T) {
	s := openDecisionStore(t)
	var ids storage.EntryIDs
	a := someDecisions(&ids, "org", decisionsFrom, 10)
	b := someDecisions(&ids, "org", decisionsFrom.Add(time.Second), 10)
	for _, batch := range [][]storage.Decision{a, b} {
		if err := s.InsertDecisions(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.DeleteDecisionsBefore(t.Context(), b[4].Time)
	if err != nil {
		t.Fatal(err)
	}
	if n != 14 {
		t.Errorf("removed %d decisions, want 14", n)
	}
	if diff := cmp.Diff([][]string{newestFirstIDs(b[4:])}, storedBlocks(t, s, "org")); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}

// TestReadEntriesRefusesDamagedBlocks: a block cut short, with bytes after its end, with ids out
// of order, or whose newest is not its key's, is an error, never a part of the log.
func TestReadEntriesRefusesDamagedBlocks(t *testing.T) {
	rec := benchDecision.appendBinary(nil)
	entries := []decisionEntry{{"0003", rec}, {"0002", rec}, {"0001", rec}}
	block := appendBlock(nil, entries)
	got, err := readEntries("0003", block, nil)
	if err != nil || !slices.EqualFunc(got, entries, func(a, b decisionEntry) bool { return a.id == b.id && bytes.Equal(a.rec, b.rec) }) {
		t.Fatalf("readEntries of a whole block = %v, %v", got, err)
	}
	for n := 1; n < len(block); n++ {
		if _, err := readEntries("0003", block[:n], nil); err == nil {
			t.Errorf("the first %d of %d bytes read as a block", n, len(block))
		}
	}
	damaged := map[string]struct {
		key   string
		value []byte
	}{
		"bytes after its end":      {"0003", append(slices.Clone(block), 0)},
		"its newest not the key's": {"0004", block},
		"ids out of order":         {"0003", appendBlock(nil, []decisionEntry{{"0003", rec}, {"0001", rec}, {"0002", rec}})},
		"an id twice":              {"0003", appendBlock(nil, []decisionEntry{{"0003", rec}, {"0003", rec}})},
		"no entries":               {"0003", appendBlock(nil, nil)},
		"an empty value":           {"0003", appendBlock(nil, []decisionEntry{{"0003", nil}})},
	}
	for name, d := range damaged {
		if got, err := readEntries(d.key, d.value, nil); err == nil {
			t.Errorf("%s: read as %d entries", name, len(got))
		}
	}
}

// FuzzDecisionBlock: any block reads back as written, and any bytes read without a panic.
func FuzzDecisionBlock(f *testing.F) {
	f.Add([]byte("0003,0002,0001"), []byte{1, 2})
	f.Add([]byte(""), appendBlock(nil, []decisionEntry{{"a", []byte{1}}}))
	f.Fuzz(func(t *testing.T, ids, raw []byte) {
		var entries []decisionEntry
		for _, id := range strings.Split(string(ids), ",") {
			entries = append(entries, decisionEntry{id, []byte(id + "!")})
		}
		slices.SortFunc(entries, newestFirst)
		entries = slices.CompactFunc(entries, func(a, b decisionEntry) bool { return a.id == b.id })
		got, err := readEntries(entries[0].id, appendBlock(nil, entries), nil)
		if err != nil || !slices.EqualFunc(got, entries, func(a, b decisionEntry) bool { return a.id == b.id && bytes.Equal(a.rec, b.rec) }) {
			t.Errorf("read back %v, %v; want %v", got, err, entries)
		}
		_, _ = readEntries(string(ids), raw, nil)
	})
}

// TestDecisionLogMatchesAModel writes random batches, as a decision log that falls behind, is
// retried and has its clock stepped back might (every fourth in id order, with any id it
// repeats), and prunes, and after each requires every list, page and time window of each
// organization to be the decisions written, first write of each id kept, sorted by id.
func TestDecisionLogMatchesAModel(t *testing.T) {
	s := openDecisionStore(t)
	r := rand.New(rand.NewPCG(8, 26))
	var ids storage.EntryIDs
	orgs := []string{"org-a", "org-b", "org-a\x00b"}
	var made []storage.Decision // every decision drawn, in the order of its id
	model := map[string]storage.Decision{}
	at := decisionsFrom
	for round := range 40 {
		// New decisions, then a batch of mostly those, some drawn before, in a nearly kept order.
		for range r.IntN(300) {
			at = at.Add(time.Duration(r.IntN(3)) * time.Millisecond)
			d := someDecisions(&ids, orgs[r.IntN(len(orgs))], at, 1)[0]
			d.UserID, d.Allowed = fmt.Sprintf("u-%d", r.IntN(5)), r.IntN(2) == 0
			made = append(made, d)
		}
		var batch []storage.Decision
		for range r.IntN(400) {
			i := len(made) - 1 - r.IntN(min(len(made), 1+r.IntN(2000)))
			if i < 0 {
				continue
			}
			d := made[i]
			if r.IntN(4) == 0 {
				d.RequestID = "written again" // the first write of an id is kept
			}
			batch = append(batch, d)
		}
		if round%4 == 0 {
			// In order, as the decision log's batches nearly always are, ids repeated or not.
			slices.SortStableFunc(batch, func(a, b storage.Decision) int { return strings.Compare(a.ID, b.ID) })
		} else {
			for i := range batch {
				if j := i + r.IntN(3); j < len(batch) {
					batch[i], batch[j] = batch[j], batch[i]
				}
			}
		}
		if err := s.InsertDecisions(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		for _, d := range batch {
			if _, ok := model[d.ID]; !ok {
				model[d.ID] = d
			}
		}
		if round%10 == 9 {
			cut := decisionsFrom.Add(time.Duration(r.Int64N(int64(at.Sub(decisionsFrom))))).Truncate(time.Millisecond)
			removed, err := s.DeleteDecisionsBefore(t.Context(), cut)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for id, d := range model {
				if d.Time.Before(cut) {
					delete(model, id)
					want++
				}
			}
			if removed != want {
				t.Errorf("round %d: pruning before %s removed %d, want %d", round, cut, removed, want)
			}
		}
		for _, org := range orgs {
			var want []storage.Decision
			for _, d := range model {
				if d.OrgID == org {
					want = append(want, d)
				}
			}
			slices.SortFunc(want, func(a, b storage.Decision) int { return strings.Compare(b.ID, a.ID) })
			if diff := cmp.Diff(want, listAll(t, s, org)); diff != "" {
				t.Fatalf("round %d, %q: listed (-want +got):\n%s", round, org, diff)
			}
			checkPagesAndWindows(t, s, org, want, r)
			storedBlocks(t, s, org)
		}
	}
}

// checkPagesAndWindows lists org's decisions a page of a random size at a time, and in a random
// time window, and requires what want, the decisions newest first, holds.
func checkPagesAndWindows(t *testing.T, s *Store, org string, want []storage.Decision, r *rand.Rand) {
	t.Helper()
	f := storage.DecisionFilter{Limit: 1 + r.IntN(50)}
	var paged []storage.Decision
	for range len(want) + 1 {
		page, err := s.ListDecisions(t.Context(), org, f)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if len(page) < f.Limit {
			break
		}
		f.Cursor = page[len(page)-1].ID
	}
	if diff := cmp.Diff(idsOf(want), idsOf(paged)); diff != "" {
		t.Fatalf("%q in pages of %d (-want +got):\n%s", org, f.Limit, diff)
	}
	if len(want) == 0 {
		return
	}
	since := want[r.IntN(len(want))].Time
	until := since.Add(time.Duration(r.IntN(200)) * time.Millisecond)
	var inWindow []string
	for _, d := range want {
		if !d.Time.Before(since) && d.Time.Before(until) {
			inWindow = append(inWindow, d.ID)
		}
	}
	got, err := s.ListDecisions(t.Context(), org, storage.DecisionFilter{Since: since, Until: until, Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inWindow, idsOf(got)); diff != "" {
		t.Fatalf("%q from %s until %s (-want +got):\n%s", org, since, until, diff)
	}
}
