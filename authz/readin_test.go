package authz

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// counting is a store that counts the reads of a user's facts, and can run a function in the
// middle of its scan of users (after the first user it reports).
type counting struct {
	storage.Store
	userReads atomic.Int64
	midScan   func()
}

func (c *counting) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	c.userReads.Add(1)
	return c.Store.UserFacts(ctx, orgID, userID)
}

func (c *counting) ScanUsers(ctx context.Context, fn func(storage.ScannedUser) error) error {
	first := true
	return c.Store.(storage.FactsScanner).ScanUsers(ctx, func(u storage.ScannedUser) error {
		if err := fn(u); err != nil {
			return err
		}
		if first && c.midScan != nil {
			c.midScan()
		}
		first = false
		return nil
	})
}

func (c *counting) ScanGroups(ctx context.Context, fn func(storage.ScannedGroup) error) error {
	return c.Store.(storage.FactsScanner).ScanGroups(ctx, fn)
}

// readInWorld is an organization of users u00…u09, each granted r1; u05 and u06 also through
// the group g, which holds r2.
func readInWorld(t *testing.T) (*counting, *Engine) {
	t.Helper()
	ctx := context.Background()
	st := &counting{Store: bolttest.OpenNoSync(t)}
	e := New(Config{Store: st, Policies: policy.NewLive(mustEngine(t, policy.Embedded()))})
	w := e.Store()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.CreateOrg(ctx, storage.Org{ID: "o", Name: "o", CreatedAt: worldBase}))
	must(w.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "o", ID: "imp", Name: "directory", Type: storage.IntegrationImport, CreatedAt: worldBase}))
	for _, id := range []string{r1, r2} {
		must(w.CreateResource(ctx, storage.Resource{OrgID: "o", ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m-" + id[len(id)-1:], CreatedAt: worldBase}))
	}
	for i := range 10 {
		u := fmt.Sprintf("u%02d", i)
		must(w.CreateUser(ctx, storage.User{OrgID: "o", ID: u, IntegrationID: "imp", Email: u + "@example.com", Active: true, ImportedAt: worldBase, ModifiedAt: worldBase}))
		must(storage.AddGrant(ctx, w, storage.Grant{OrgID: "o", UserID: u, ResourceID: r1, CreatedAt: worldBase}))
	}
	must(w.CreateGroup(ctx, storage.Group{OrgID: "o", ID: "g", DisplayName: "team", Members: []string{"u05", "u06"}, CreatedAt: worldBase}))
	_, err := w.SetGroupGrant(ctx, storage.GroupGrant{OrgID: "o", GroupID: "g", ResourceID: r2, CreatedAt: worldBase})
	must(err)
	return st, e
}

const (
	r1 = "00000000-0000-4000-8000-000000000001"
	r2 = "00000000-0000-4000-8000-000000000002"
)

func ask(e *Engine, tb testing.TB, user, id string) bool {
	tb.Helper()
	d, err := e.Decide(context.Background(), Question{OrgID: "o", UserID: user, ResourceIDs: []string{id}, Now: worldBase})
	if err != nil {
		tb.Fatal(err)
	}
	return d.Allowed
}

// TestReadInHoldsEveryone: after a read-in, questions about any user read nothing from the
// store, and answer as the store says.
func TestReadInHoldsEveryone(t *testing.T) {
	st, e := readInWorld(t)
	if !e.Reading() {
		t.Error("Reading() = false before the read-in")
	}
	read, err := e.ReadIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if read.Users != 10 || read.Groups != 1 || read.Skipped != 0 || read.Full {
		t.Errorf("read in %+v, want 10 users and 1 group, none skipped", read)
	}
	if e.Reading() {
		t.Error("Reading() = true after the read-in")
	}
	st.userReads.Store(0)
	for i := range 10 {
		u := fmt.Sprintf("u%02d", i)
		if !ask(e, t, u, r1) {
			t.Errorf("%s may not use r1", u)
		}
		if want := u == "u05" || u == "u06"; ask(e, t, u, r2) != want {
			t.Errorf("%s may use r2: %v, want %v", u, !want, want)
		}
	}
	if n := st.userReads.Load(); n != 0 {
		t.Errorf("%d reads of users' facts after the read-in, want none", n)
	}
}

// TestReadInKeepsNothingAWriteReached: a write made while a read-in is under way, to a user the
// scan has not reached yet (which it reads as they were before it began), or to a group, keeps
// what it reached from being held from the scan, so that the next question reads it afresh.
func TestReadInKeepsNothingAWriteReached(t *testing.T) {
	cases := []struct {
		name  string
		write func(w storage.Store, ctx context.Context) error
		user  string
		id    string
		want  bool
	}{
		{"a user not scanned yet", func(w storage.Store, ctx context.Context) error { return storage.Revoke(ctx, w, "o", "u09", r1) }, "u09", r1, false},
		{"a group", func(w storage.Store, ctx context.Context) error {
			_, err := w.RevokeGroupGrant(ctx, "o", "g", r2)
			return err
		}, "u05", r2, false},
		{"a resource", func(w storage.Store, ctx context.Context) error { return w.DeleteResource(ctx, "o", r1) }, "u08", r1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, e := readInWorld(t)
			ctx := context.Background()
			st.midScan = func() {
				if err := tc.write(e.Store(), ctx); err != nil {
					t.Error(err)
				}
			}
			read, err := e.ReadIn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if read.Skipped == 0 {
				t.Errorf("read in %+v: nothing skipped", read)
			}
			if got := ask(e, t, tc.user, tc.id); got != tc.want {
				t.Errorf("after the read-in, %s may use %s: %v, want %v", tc.user, tc.id, got, tc.want)
			}
		})
	}
}

// TestReadInOfASharedStoreWaitsForTheFeed: on a shared store the read-in begins only once the
// change feed has confirmed it is up to date, so that no change between the scan and the feed's
// starting point goes unseen; with no confirmation it reads nothing.
func TestReadInOfASharedStoreWaitsForTheFeed(t *testing.T) {
	st, _ := readInWorld(t)
	e := New(Config{Store: st, Policies: policy.NewLive(mustEngine(t, policy.Embedded())), Shared: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if read, err := e.ReadIn(ctx); err == nil || read.Users != 0 {
		t.Errorf("ReadIn with no confirmation from the feed = %+v, %v; want nothing read and ctx's error", read, err)
	}
	done := make(chan ReadInStats, 1)
	go func() {
		read, err := e.ReadIn(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- read
	}()
	// The feed confirms as it does, several times a second, until the read-in ends.
	for {
		e.Synced(true)
		select {
		case read := <-done:
			if read.Users != 10 {
				t.Errorf("ReadIn once the feed confirmed = %+v, want 10 users", read)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
