package bolt_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// loadSet is a small organization: one integration, resources of every kind, users and grants.
type loadSet struct {
	integration storage.AuthIntegration
	resources   []storage.Resource
	users       []storage.User
	grants      []storage.Grant
}

func newLoadSet() loadSet {
	const org = "org-1"
	at := time.UnixMilli(1_700_000_000_000).UTC()
	set := loadSet{integration: storage.AuthIntegration{OrgID: org, ID: "int-1", Name: "directory", Type: "import", CreatedAt: at}}
	kinds := []storage.Kind{storage.KindModel, storage.KindFunction, storage.KindDataset}
	for i := range 6 {
		set.resources = append(set.resources, storage.Resource{
			OrgID: org, ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Kind: kinds[i%3], Source: storage.SourceCustom,
			Name: fmt.Sprintf("resource-%d", i), CreatedAt: at.Add(time.Duration(i) * time.Millisecond),
		})
	}
	for i := range 5 {
		set.users = append(set.users, storage.User{
			OrgID: org, ID: fmt.Sprintf("u-%d", i), Email: fmt.Sprintf("User-%d@Example.com", i), First: "F", Last: fmt.Sprint(i),
			Active: true, IntegrationID: "int-1", IntegrationName: "directory", ImportedAt: at, ModifiedAt: at,
		})
		// User i holds resources i and i+1 (mod 6): every resource is held by someone. The
		// grants of resource i expire, an hour apart.
		for _, r := range []int{i, (i + 1) % 6} {
			g := storage.Grant{
				OrgID: org, UserID: fmt.Sprintf("u-%d", i), ResourceID: set.resources[r].ID, CreatedAt: at.Add(time.Duration(r) * time.Second),
			}
			if r == i {
				g.ExpiresAt = at.Add(time.Duration(i+1) * time.Hour)
			}
			set.grants = append(set.grants, g)
		}
	}
	return set
}

// writeOneByOne fills s through the store's normal methods.
func (set loadSet) writeOneByOne(tb testing.TB, s *bolt.Store) {
	tb.Helper()
	ctx := tb.Context()
	if err := s.CreateAuthIntegration(ctx, set.integration); err != nil {
		tb.Fatal(err)
	}
	for _, r := range set.resources {
		if err := s.CreateResource(ctx, r); err != nil {
			tb.Fatal(err)
		}
	}
	items := make([]storage.UserImport, len(set.users))
	for i, u := range set.users {
		items[i] = storage.UserImport{ID: u.ID, Email: u.Email, First: u.First, Last: u.Last}
	}
	if _, err := s.ImportUsers(ctx, set.integration.OrgID, set.integration.ID, items, set.users[0].ImportedAt); err != nil {
		tb.Fatal(err)
	}
	for _, g := range set.grants {
		if err := s.Grant(ctx, g); err != nil {
			tb.Fatal(err)
		}
	}
}

// load fills s through a Loader that commits every batch records.
func (set loadSet) load(tb testing.TB, s *bolt.Store, batch int) {
	tb.Helper()
	ctx := tb.Context()
	l := s.NewLoader(batch)
	if err := l.AddIntegration(ctx, set.integration); err != nil {
		tb.Fatal(err)
	}
	for _, r := range set.resources {
		if err := l.AddResource(ctx, r); err != nil {
			tb.Fatal(err)
		}
	}
	for _, u := range set.users {
		if err := l.AddUser(ctx, u); err != nil {
			tb.Fatal(err)
		}
	}
	for _, g := range set.grants {
		if err := l.AddGrant(ctx, g); err != nil {
			tb.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

// snapshot is everything the store answers about the organization.
type snapshot struct {
	Integrations []storage.AuthIntegration
	Resources    []storage.Resource
	Users        []storage.User
	Grants       []storage.Grant
	UserGrants   map[string][]storage.Grant
}

func takeSnapshot(tb testing.TB, s *bolt.Store, set loadSet) snapshot {
	tb.Helper()
	ctx, org := tb.Context(), set.integration.OrgID
	var snap snapshot
	var err error
	if snap.Integrations, err = s.ListAuthIntegrations(ctx, org); err != nil {
		tb.Fatal(err)
	}
	if snap.Resources, err = s.ListResources(ctx, org, ""); err != nil {
		tb.Fatal(err)
	}
	if snap.Users, err = s.ListUsers(ctx, org); err != nil {
		tb.Fatal(err)
	}
	if snap.Grants, err = s.ListGrants(ctx, org); err != nil {
		tb.Fatal(err)
	}
	snap.UserGrants = map[string][]storage.Grant{}
	for _, u := range set.users {
		if snap.UserGrants[u.ID], err = s.UserGrants(ctx, org, u.ID); err != nil {
			tb.Fatal(err)
		}
	}
	return snap
}

// TestLoaderWritesWhatTheNormalMethodsWrite fills one store record by record and another through
// a Loader, and checks that both answer alike: the same records, and indexes that behave the same
// (a taken name conflicts, an import matches the loaded user by email, deleting a resource
// revokes it from the users found through the by-resource index).
func TestLoaderWritesWhatTheNormalMethodsWrite(t *testing.T) {
	set := newLoadSet()
	tests := []struct {
		name  string
		batch int
	}{
		{"one record a transaction", 1},
		{"several transactions, grants apart from their users", 4},
		{"default batch: one transaction", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, org := t.Context(), set.integration.OrgID
			want, got := bolttest.Open(t), bolttest.Open(t)
			set.writeOneByOne(t, want)
			set.load(t, got, tc.batch)
			if diff := cmp.Diff(takeSnapshot(t, want, set), takeSnapshot(t, got, set)); diff != "" {
				t.Fatalf("loaded store differs from one written record by record (-want +got):\n%s", diff)
			}

			r := set.resources[0]
			if err := got.CreateResource(ctx, storage.Resource{OrgID: org, ID: "00000000-0000-4000-8000-999999999999", Kind: r.Kind, Source: r.Source, Name: r.Name}); !errors.Is(err, storage.ErrConflict) {
				t.Errorf("CreateResource with a loaded resource's name: error = %v, want ErrConflict", err)
			}
			if err := got.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-2", Name: set.integration.Name}); !errors.Is(err, storage.ErrConflict) {
				t.Errorf("CreateAuthIntegration with a loaded integration's name: error = %v, want ErrConflict", err)
			}
			u := set.users[1]
			imported, err := got.ImportUsers(ctx, org, set.integration.ID, []storage.UserImport{{Email: "user-1@example.COM", First: u.First, Last: u.Last}}, u.ImportedAt.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if imported[0].ID != u.ID {
				t.Errorf("import of a loaded user's email made user %s, want it to match %s", imported[0].ID, u.ID)
			}

			if err := got.DeleteResource(ctx, org, set.resources[1].ID); err != nil {
				t.Fatal(err)
			}
			if err := want.DeleteResource(ctx, org, set.resources[1].ID); err != nil {
				t.Fatal(err)
			}
			gotGrants, err := got.ListGrants(ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			wantGrants, err := want.ListGrants(ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantGrants, gotGrants); diff != "" {
				t.Errorf("grants after deleting a resource (-want +got):\n%s", diff)
			}

			// The loaded grants' expiries are indexed as the normal methods index them.
			// By u-2's expiry, the expiring grants of u-0 and u-2 have expired (u-1's went with
			// resource 1).
			cutoff := set.grants[4].ExpiresAt
			wantGone, err := want.DeleteExpiredGrants(ctx, cutoff)
			if err != nil {
				t.Fatal(err)
			}
			gotGone, err := got.DeleteExpiredGrants(ctx, cutoff)
			if err != nil {
				t.Fatal(err)
			}
			if len(wantGone.Users) != 2 || len(gotGone.Users) != len(wantGone.Users) {
				t.Errorf("expired grants removed: %d from the loaded store, %d from the other; want 2 from both", len(gotGone.Users), len(wantGone.Users))
			}
		})
	}
}

// TestLoaderFlushWithNothingQueued checks that an empty Flush commits nothing and fails nothing.
func TestLoaderFlushWithNothingQueued(t *testing.T) {
	s := bolttest.Open(t)
	if err := s.NewLoader(0).Flush(t.Context()); err != nil {
		t.Errorf("Flush of an empty Loader: %v", err)
	}
}

// TestLoaderOnClosedStore checks that a failed commit is reported, wrapping ErrUnavailable.
func TestLoaderOnClosedStore(t *testing.T) {
	s, err := bolt.Open(t.Context(), filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	l := s.NewLoader(0)
	if err := l.AddGrant(t.Context(), newLoadSet().grants[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Flush on a closed store: error = %v, want ErrUnavailable", err)
	}
}
