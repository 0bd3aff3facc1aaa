package bolt

import (
	"errors"
	"fmt"
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
	s, err := open(t.Context(), filepath.Join(dir, "grantry.db"), time.Hour, noSync)
	if err != nil {
		t.Fatal(err)
	}
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
	jMust(t, s.journal.Settle()) // u-0 holds jR1 in the data file

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

// TestJournalReadsPendingChanges: the reads of one user's grants find the journal's pending
// changes over the data file without applying them; every other read applies them first.
func TestJournalReadsPendingChanges(t *testing.T) {
	s, _ := journalFixture(t, 1)
	ctx := t.Context()
	var ids storage.EntryIDs
	jGrant(t, s, &ids, "u-0", jR1, time.Time{})
	jMust(t, s.journal.Settle())
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
			if err := s.journal.Settle(); err != nil {
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

// TestJournalApplyFailure: an apply that fails leaves its changes pending and counted, and the
// reads of a user's grants still see them; every other read and every other write fails as
// unavailable, with the apply's error, until an apply succeeds; once one does, nothing is lost.
func TestJournalApplyFailure(t *testing.T) {
	s, _ := journalFixture(t, 2)
	ctx := t.Context()
	var ids storage.EntryIDs
	fault := errors.New("no space left on device")
	var failing atomic.Bool
	failing.Store(true)
	s.applyFault = func() error {
		if failing.Load() {
			return fault
		}
		return nil
	}
	jGrant(t, s, &ids, "u-0", jR0, time.Time{})
	if err := s.journal.Settle(); !errors.Is(err, fault) {
		t.Fatalf("apply with the fault: error = %v, want the fault", err)
	}
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

	failing.Store(false)
	gs, err := s.ListGrants(ctx, jOrg)
	jMust(t, err)
	if len(gs) != 1 || gs[0].UserID != "u-0" || gs[0].ResourceID != jR0 {
		t.Errorf("grants after the apply succeeded: %+v, want u-0's of %s", gs, jR0)
	}
	if got := s.JournalPending(); got != 0 || !inDataFile(t, s, "u-0", jR0) {
		t.Errorf("after the apply succeeded: %d pending, in the data file %t; want 0 and true", got, inDataFile(t, s, "u-0", jR0))
	}
	// The first apply, and the one each of ListGrants and CreateResource tried first.
	if got := s.JournalApplyFailures(); got != 3 {
		t.Errorf("failures counted after the apply succeeded: %d, want 3", got)
	}
}
