package bolt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

const (
	jOrg = "org-1"
	jR0  = "00000000-0000-4000-8000-000000000001"
	jR1  = "00000000-0000-4000-8000-000000000002"
)

var jAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// journalStore opens a store in dir whose journal is applied only when something asks for it:
// what a test journals stays pending until the test applies it or reads through view.
func journalStore(t *testing.T, dir string) *Store {
	t.Helper()
	noSync := func(o *bbolt.Options) { o.NoSync = true } // a crash here is a copy of the files
	s, err := Open(t.Context(), filepath.Join(dir, "grantry.db"), noSync)
	if err != nil {
		t.Fatal(err)
	}
	s.journal.delay = time.Hour
	t.Cleanup(func() {
		// Bounded, so that a test whose store is stuck (a lock kept) fails rather than hangs.
		closed := make(chan struct{})
		go func() { s.Close(t.Context()); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("Close did not return")
		}
	})
	return s
}

// journalFixture is a store with users u-0 to u-(users-1) and the resources jR0 and jR1.
func journalFixture(t *testing.T, users int) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s := journalStore(t, dir)
	ctx := t.Context()
	jMust(t, s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: jOrg, ID: "int-1", Name: "directory", Type: "import"}))
	items := make([]storage.UserImport, users)
	for i := range items {
		items[i] = storage.UserImport{ID: fmt.Sprintf("u-%d", i), Email: fmt.Sprintf("u-%d@example.com", i)}
	}
	_, err := s.ImportUsers(ctx, jOrg, "int-1", items, jAt)
	jMust(t, err)
	for _, id := range []string{jR0, jR1} {
		jMust(t, s.CreateResource(ctx, storage.Resource{OrgID: jOrg, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m-" + id[len(id)-1:], CreatedAt: jAt}))
	}
	return s, dir
}

func jMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// crashCopy copies the store's files, as a crash would leave them with the page cache written:
// the data file as of its last commit, the journal as written. Nothing may be applying the
// journal meanwhile.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{"grantry.db", "grantry.db-journal.0", "grantry.db-journal.1"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		jMust(t, err)
		jMust(t, os.WriteFile(filepath.Join(to, name), data, 0o600))
	}
	return to
}

// grantEvent records a change to u's grant of r, as the audit store would.
func grantEvent(ids *storage.EntryIDs, action, u, r string) []storage.Event {
	return []storage.Event{{ID: ids.New(jAt), OrgID: jOrg, Time: jAt, Actor: storage.Actor{Kind: storage.ActorSystem},
		Action: action, TargetKind: "user", TargetID: u, UserID: u, SvcID: r}}
}

func jGrant(t *testing.T, s *Store, ids *storage.EntryIDs, u, r string, expires time.Time) {
	t.Helper()
	_, err := s.SetGrantRecorded(t.Context(), storage.Grant{OrgID: jOrg, UserID: u, ResourceID: r, CreatedAt: jAt, ExpiresAt: expires},
		func(*storage.Grant) []storage.Event { return grantEvent(ids, "grant.created", u, r) })
	jMust(t, err)
}

func jRevoke(t *testing.T, s *Store, ids *storage.EntryIDs, u, r string) {
	t.Helper()
	_, err := s.RevokeRecorded(t.Context(), jOrg, u, r, func(bool) []storage.Event { return grantEvent(ids, "grant.revoked", u, r) })
	jMust(t, err)
}

// granted returns the resources of u's grants, sorted.
func granted(t *testing.T, s *Store, u string) []string {
	t.Helper()
	gs, err := s.UserGrants(t.Context(), jOrg, u)
	jMust(t, err)
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ResourceID)
	}
	slices.Sort(ids)
	return ids
}

// inDataFile reports whether the data file itself holds u's grant of r, journal or not.
func inDataFile(t *testing.T, s *Store, u, r string) (held bool) {
	t.Helper()
	jMust(t, s.db.View(func(tx *bbolt.Tx) error {
		held = tx.Bucket(bucketGrants).Get(key(jOrg, u, r)) != nil
		return nil
	}))
	return held
}

// TestJournalRecoversAcknowledgedChanges: every change that returned is in the store opened
// from the files a crash leaves, though none was written into the data file before the crash,
// and with it its events; and so it is after a clean close.
func TestJournalRecoversAcknowledgedChanges(t *testing.T) {
	s, dir := journalFixture(t, 3)
	var ids storage.EntryIDs
	jGrant(t, s, &ids, "u-0", jR1, time.Time{})
	jMust(t, s.journal.applyPending()) // u-0 holds jR1 in the data file

	expires := jAt.Add(24 * time.Hour)
	jGrant(t, s, &ids, "u-0", jR0, time.Time{})
	jGrant(t, s, &ids, "u-1", jR0, time.Time{})
	jRevoke(t, s, &ids, "u-1", jR0)
	jRevoke(t, s, &ids, "u-0", jR1)
	jGrant(t, s, &ids, "u-2", jR1, expires)
	if inDataFile(t, s, "u-0", jR0) || !inDataFile(t, s, "u-0", jR1) {
		t.Fatal("the changes were written into the data file before the crash: the journal is not what is tested")
	}

	want := map[string][]string{"u-0": {jR0}, "u-1": nil, "u-2": {jR1}}
	check := func(name string, s *Store) {
		t.Helper()
		for u, w := range want {
			if got := granted(t, s, u); !slices.Equal(got, w) {
				t.Errorf("%s: grants of %s = %v, want %v", name, u, got, w)
			}
		}
		gs, err := s.UserGrants(t.Context(), jOrg, "u-2")
		jMust(t, err)
		if len(gs) != 1 || !gs[0].ExpiresAt.Equal(expires) {
			t.Errorf("%s: u-2's grant = %+v, want one expiring at %v", name, gs, expires)
		}
		byResource, err := s.ResourceGrants(t.Context(), jOrg, jR0)
		jMust(t, err)
		if len(byResource) != 1 || byResource[0].UserID != "u-0" {
			t.Errorf("%s: grants of %s = %+v, want u-0's alone", name, jR0, byResource)
		}
		events, err := s.ListEvents(t.Context(), jOrg, storage.EventFilter{UserID: "u-1", Limit: 10})
		jMust(t, err)
		if len(events) != 2 || events[0].Action != "grant.revoked" || events[1].Action != "grant.created" {
			t.Errorf("%s: u-1's events = %+v, want grant.revoked then grant.created", name, events)
		}
	}
	check("after a crash", journalStore(t, crashCopy(t, dir)))
	jMust(t, s.Close(t.Context()))
	check("after Close", journalStore(t, dir))
}

// TestJournalStopsAtADamagedRecord: a record that fails its checksum, as one cut short by a
// crash does, ends the journal: the changes before it are recovered and it is not.
func TestJournalStopsAtADamagedRecord(t *testing.T) {
	s, dir := journalFixture(t, 2)
	var ids storage.EntryIDs
	jGrant(t, s, &ids, "u-0", jR0, time.Time{})
	jGrant(t, s, &ids, "u-1", jR0, time.Time{}) // the last record: damaged below
	to := crashCopy(t, dir)

	f, err := os.OpenFile(filepath.Join(to, "grantry.db-journal.0"), os.O_RDWR, 0)
	jMust(t, err)
	data, err := io.ReadAll(f)
	jMust(t, err)
	recs, err := readJournal(bufio.NewReader(bytes.NewReader(data)))
	jMust(t, err)
	if len(recs) != 2 {
		t.Fatalf("journal holds %d records, want 2", len(recs))
	}
	end := 0 // of the records
	for range recs {
		end += 8 + int(binary.BigEndian.Uint32(data[end:]))
	}
	_, err = f.WriteAt([]byte{' '}, int64(end-1)) // the last record's event's closing brace
	jMust(t, err)
	jMust(t, f.Close())

	r := journalStore(t, to)
	if got := granted(t, r, "u-0"); !slices.Equal(got, []string{jR0}) {
		t.Errorf("grants of u-0 = %v, want %v", got, []string{jR0})
	}
	if got := granted(t, r, "u-1"); got != nil {
		t.Errorf("grants of u-1 = %v, want none: their record was damaged", got)
	}
}

// TestJournalReadsPendingChanges: the reads of one user's grants find the journal's pending
// changes over the data file without applying them; every other read applies them first.
func TestJournalReadsPendingChanges(t *testing.T) {
	s, _ := journalFixture(t, 1)
	ctx := t.Context()
	var ids storage.EntryIDs
	jGrant(t, s, &ids, "u-0", jR1, time.Time{})
	jMust(t, s.journal.applyPending())
	jGrant(t, s, &ids, "u-0", jR0, time.Time{})
	jRevoke(t, s, &ids, "u-0", jR1)

	if got, want := granted(t, s, "u-0"), []string{jR0}; !slices.Equal(got, want) {
		t.Errorf("UserGrants = %v, want %v", got, want)
	}
	f, err := s.UserFacts(ctx, jOrg, "u-0")
	jMust(t, err)
	if !f.Found || len(f.Grants) != 1 || f.Grants[0].ResourceID != jR0 {
		t.Errorf("UserFacts = %+v, want the grant of %s alone", f, jR0)
	}
	for _, tt := range []struct {
		asked    []string
		wantHeld bool
	}{
		{[]string{jR0}, true},
		{[]string{jR1}, false},
		{[]string{jR0, jR1}, false},
	} {
		a, err := s.AskedGrants(ctx, jOrg, "u-0", tt.asked)
		jMust(t, err)
		if a.Held != tt.wantHeld {
			t.Errorf("AskedGrants(%v).Held = %t, want %t", tt.asked, a.Held, tt.wantHeld)
		}
		if slices.Contains(tt.asked, jR0) != (len(a.Grants) == 1) {
			t.Errorf("AskedGrants(%v).Grants = %+v", tt.asked, a.Grants)
		}
	}
	if inDataFile(t, s, "u-0", jR0) || !inDataFile(t, s, "u-0", jR1) {
		t.Fatal("a read of the user's grants applied the journal")
	}

	list, err := s.ListGrants(ctx, jOrg)
	jMust(t, err)
	if len(list) != 1 || list[0].ResourceID != jR0 {
		t.Errorf("ListGrants = %+v, want u-0's grant of %s alone", list, jR0)
	}
	if !inDataFile(t, s, "u-0", jR0) || inDataFile(t, s, "u-0", jR1) {
		t.Error("ListGrants did not apply the journal first")
	}
}

// TestJournalIsOrderedWithOtherWrites: a write that is not journaled applies the journal before
// it, so a user deleted after a grant takes the grant along, in the store and after a crash,
// and a grant to the deleted user fails.
func TestJournalIsOrderedWithOtherWrites(t *testing.T) {
	s, dir := journalFixture(t, 2)
	ctx := t.Context()
	var ids storage.EntryIDs
	jGrant(t, s, &ids, "u-1", jR0, time.Time{})
	jMust(t, s.DeleteUser(ctx, jOrg, "int-1", "u-1", jAt))
	_, err := s.SetGrant(ctx, storage.Grant{OrgID: jOrg, UserID: "u-1", ResourceID: jR1, CreatedAt: jAt})
	if !errors.Is(err, storage.ErrUserNotFound) {
		t.Errorf("grant to the deleted user: error = %v, want ErrUserNotFound", err)
	}
	for name, s := range map[string]*Store{"store": s, "after a crash": journalStore(t, crashCopy(t, dir))} {
		list, err := s.ListGrants(ctx, jOrg)
		jMust(t, err)
		if len(list) != 0 {
			t.Errorf("%s: ListGrants = %+v, want none: the user is deleted", name, list)
		}
	}
}

// TestJournalTakesTurnsBetweenFiles: past rotateAt, the records go to the other file once every
// record in it is applied, over what it held; the files stay small, and a crash at any point
// loses nothing acknowledged.
func TestJournalTakesTurnsBetweenFiles(t *testing.T) {
	s, dir := journalFixture(t, 4)
	s.journal.rotateAt, s.journal.growBy = 2<<10, 512
	var ids storage.EntryIDs
	held := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := func() (n [2]int64) {
		for i := range n {
			info, err := os.Stat(filepath.Join(dir, fmt.Sprintf("grantry.db-journal.%d", i)))
			jMust(t, err)
			n[i] = info.Size()
		}
		return n
	}
	for i := range 400 {
		u, r := fmt.Sprintf("u-%d", rng.IntN(4)), []string{jR0, jR1}[rng.IntN(2)]
		if held[u+r] {
			jRevoke(t, s, &ids, u, r)
		} else {
			jGrant(t, s, &ids, u, r, time.Time{})
		}
		held[u+r] = !held[u+r]
		if i%5 == 4 {
			jMust(t, s.journal.applyPending())
		}
		if i%50 == 22 { // between two applies
			c := journalStore(t, crashCopy(t, dir))
			for k, want := range held {
				u, r := k[:3], k[3:]
				if got := slices.Contains(granted(t, c, u), r); got != want {
					t.Fatalf("after %d changes and a crash: %s holds %s = %t, want %t", i+1, u, r, got, want)
				}
			}
			jMust(t, c.Close(t.Context()))
		}
	}
	n := sizes()
	if n[0] == 0 || n[1] == 0 {
		t.Errorf("journal file sizes %v: want both written", n)
	}
	// Written without starting over, the two would hold every record: 400 of about 350 bytes.
	if limit := 3*s.journal.rotateAt + s.journal.growBy; n[0] > limit || n[1] > limit {
		t.Errorf("journal file sizes %v: want each at most %d, as each is written over from its start", n, limit)
	}
}

// TestJournalUnderConcurrentChanges: writers each change their own user's grants while the
// journal is applied over and over; every user ends with the grants of their last changes, in
// the store and after a crash.
func TestJournalUnderConcurrentChanges(t *testing.T) {
	const writers, changes = 8, 150
	s, dir := journalFixture(t, writers)
	var ids storage.EntryIDs
	var idsMu sync.Mutex
	want := make([][]string, writers)
	var done atomic.Bool
	var applier sync.WaitGroup
	applier.Go(func() {
		for !done.Load() {
			if err := s.journal.applyPending(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			u := fmt.Sprintf("u-%d", w)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			held := map[string]bool{}
			event := func(action, r string) func() []storage.Event {
				return func() []storage.Event {
					idsMu.Lock()
					defer idsMu.Unlock()
					return grantEvent(&ids, action, u, r)
				}
			}
			for range changes {
				r := []string{jR0, jR1}[rng.IntN(2)]
				var err error
				if rng.IntN(2) == 0 {
					_, err = s.SetGrantRecorded(t.Context(), storage.Grant{OrgID: jOrg, UserID: u, ResourceID: r, CreatedAt: jAt},
						func(*storage.Grant) []storage.Event { return event("grant.created", r)() })
					held[r] = true
				} else {
					_, err = s.RevokeRecorded(t.Context(), jOrg, u, r, func(bool) []storage.Event { return event("grant.revoked", r)() })
					held[r] = false
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
			for _, r := range []string{jR0, jR1} {
				if held[r] {
					want[w] = append(want[w], r)
				}
			}
		})
	}
	wg.Wait()
	done.Store(true)
	applier.Wait()
	check := func(name string, s *Store) {
		for w := range writers {
			u := fmt.Sprintf("u-%d", w)
			if got := granted(t, s, u); !slices.Equal(got, want[w]) {
				t.Errorf("%s: grants of %s = %v, want %v", name, u, got, want[w])
			}
		}
	}
	check("store", s)
	check("after a crash", journalStore(t, crashCopy(t, dir)))
}

// TestJournalRecordEncoding: a record reads back as it was written, and no part of one reads
// as a record.
func TestJournalRecordEncoding(t *testing.T) {
	records := []journalRecord{
		{Seq: 1, OrgID: jOrg, UserID: "u-0", ResourceID: jR0},
		{Seq: 1 << 40, OrgID: jOrg, UserID: "a\x00b", ResourceID: jR1, Changed: true, Held: true, CreatedAt: 1767225600000, ExpiresAt: -1,
			Events: []journalEvent{
				{OrgID: jOrg, ID: "e-1", UserID: "a\x00b", SvcID: jR1, Data: []byte(`{"id":"e-1"}`)},
				{OrgID: jOrg, ID: "e-2", Data: []byte(`{}`)},
			}},
		{Seq: 7, OrgID: jOrg, UserID: "u-0", ResourceID: jR0, Changed: true},
	}
	for _, want := range records {
		b := want.appendTo(nil)
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatalf("decode %+v: %v", want, err)
		}
		if len(want.Events) == 0 {
			want.Events = []journalEvent{}
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("decoded %+v, want %+v", got, want)
		}
		for n := range len(b) {
			if _, err := decodeRecord(b[:n]); err == nil {
				t.Errorf("the first %d of %d bytes of %+v decoded as a record", n, len(b), want)
			}
		}
		if _, err := decodeRecord(append(b, 0)); err == nil {
			t.Errorf("%+v with a byte after it decoded as a record", want)
		}
	}
}

// TestReadJournalEndsAtTheTurnBefore: a file's records are read while each is whole, of this
// format and next in sequence; the first that is not is where the file was last written up to.
func TestReadJournalEndsAtTheTurnBefore(t *testing.T) {
	frame := func(payload []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		return append(binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli)), payload...)
	}
	rec := func(seq uint64) []byte {
		r := journalRecord{Seq: seq, OrgID: jOrg, UserID: "u-0", ResourceID: jR0, Changed: true}
		return frame(r.appendTo(nil))
	}
	otherFormat := rec(9)
	otherFormat[8] = recordFormat + 1 // the payload's first byte
	otherFormat = frame(otherFormat[8:])
	tests := []struct {
		name string
		file [][]byte
		want []uint64
	}{
		{"records then zeros", [][]byte{rec(3), rec(4), make([]byte, 64)}, []uint64{3, 4}},
		{"records then an earlier turn's", [][]byte{rec(7), rec(8), rec(2), rec(3)}, []uint64{7, 8}},
		{"records then one of another format", [][]byte{rec(7), otherFormat, rec(10)}, []uint64{7}},
		{"records then JSON of the first form", [][]byte{rec(7), frame([]byte(`{"seq":1}`)), rec(10)}, []uint64{7}},
		{"a record cut short", [][]byte{rec(5), rec(6)[:20]}, []uint64{5}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := readJournal(bufio.NewReader(bytes.NewReader(bytes.Join(tt.file, nil))))
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, r := range recs {
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
		})
	}
}

// TestJournalSurvivesAPanickingRecord: a record function that panics fails its own change and
// no other: the journal's lock is let go, and the next change goes through.
func TestJournalSurvivesAPanickingRecord(t *testing.T) {
	s, _ := journalFixture(t, 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the record function's panic did not reach the caller")
			}
		}()
		s.SetGrantRecorded(t.Context(), storage.Grant{OrgID: jOrg, UserID: "u-0", ResourceID: jR0, CreatedAt: jAt},
			func(*storage.Grant) []storage.Event { panic("record") })
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ids storage.EntryIDs
		jGrant(t, s, &ids, "u-0", jR1, time.Time{})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a grant after the panic did not return: the journal's lock was kept")
	}
	if got, want := granted(t, s, "u-0"), []string{jR1}; !slices.Equal(got, want) {
		t.Errorf("grants = %v, want %v: only the grant after the panic", got, want)
	}
}

// TestJournalAppliesWhenFull: a change that finds pendingMax changes pending applies them
// before it is journaled, so the journal never holds more, however long its apply waits.
func TestJournalAppliesWhenFull(t *testing.T) {
	s, _ := journalFixture(t, 4)
	s.journal.pendingMax = 3
	var ids storage.EntryIDs
	for i := range 3 {
		jGrant(t, s, &ids, fmt.Sprintf("u-%d", i), jR0, time.Time{})
	}
	if got := s.JournalPending(); got != 3 || inDataFile(t, s, "u-0", jR0) {
		t.Fatalf("after 3 grants: %d pending, u-0's in the data file %t; want 3 and false", got, inDataFile(t, s, "u-0", jR0))
	}
	jGrant(t, s, &ids, "u-3", jR0, time.Time{})
	if got := s.JournalPending(); got != 1 {
		t.Errorf("after a 4th grant: %d pending, want 1 (the 4th)", got)
	}
	for i := range 3 {
		if u := fmt.Sprintf("u-%d", i); !inDataFile(t, s, u, jR0) {
			t.Errorf("%s's grant is not in the data file after the journal was full", u)
		}
	}
}

// TestJournalApplyFailure: an apply that fails leaves its changes pending and counted, and the
// reads of a user's grants still see them; every other read and every other write fails as
// unavailable, with the apply's error, until an apply succeeds; the scheduled apply tries
// again, and once it succeeds nothing is lost.
func TestJournalApplyFailure(t *testing.T) {
	s, _ := journalFixture(t, 2)
	ctx := t.Context()
	var ids storage.EntryIDs
	fault := errors.New("no space left on device")
	var failing atomic.Bool
	failing.Store(true)
	s.journal.applyFault = func() error {
		if failing.Load() {
			return fault
		}
		return nil
	}
	jGrant(t, s, &ids, "u-0", jR0, time.Time{})
	s.journal.applyLater() // the scheduled apply
	if got := s.JournalApplyFailures(); got != 1 {
		t.Errorf("after a failed apply: %d failures counted, want 1", got)
	}
	if got := s.JournalPending(); got != 1 || inDataFile(t, s, "u-0", jR0) {
		t.Errorf("after a failed apply: %d pending, in the data file %t; want 1 and false", got, inDataFile(t, s, "u-0", jR0))
	}
	if got := granted(t, s, "u-0"); !slices.Equal(got, []string{jR0}) {
		t.Errorf("u-0's grants while the apply fails: %v, want [%s]", got, jR0)
	}
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, fault) {
			t.Errorf("%s while the apply fails: %v, want storage.ErrUnavailable and the apply's error", what, err)
		}
	}
	_, err := s.ListGrants(ctx, jOrg)
	unavailable("ListGrants", err)
	unavailable("CreateResource", s.CreateResource(ctx, storage.Resource{OrgID: jOrg, ID: "00000000-0000-4000-8000-000000000003", Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m-3", CreatedAt: jAt}))
	s.journal.mu.Lock()
	rescheduled := s.journal.timer != nil
	s.journal.mu.Unlock()
	if !rescheduled {
		t.Fatal("a failed apply did not schedule another")
	}

	failing.Store(false)
	s.journal.applyLater()
	if got := s.JournalPending(); got != 0 || !inDataFile(t, s, "u-0", jR0) {
		t.Errorf("after the apply succeeded: %d pending, in the data file %t; want 0 and true", got, inDataFile(t, s, "u-0", jR0))
	}
	gs, err := s.ListGrants(ctx, jOrg)
	jMust(t, err)
	if len(gs) != 1 || gs[0].UserID != "u-0" || gs[0].ResourceID != jR0 {
		t.Errorf("grants after the apply succeeded: %+v, want u-0's of %s", gs, jR0)
	}
	// The scheduled apply, and the one each of ListGrants and CreateResource tried first.
	if got := s.JournalApplyFailures(); got != 3 {
		t.Errorf("failures counted after the apply succeeded: %d, want 3", got)
	}
}
