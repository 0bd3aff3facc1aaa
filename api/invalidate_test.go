package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// decisionWrites are the Store methods that can change what a decision reads; invalidating
// overrides each. Every other Store method must be in otherMethods.
var decisionWrites = []string{
	"CreateResource", "DeleteResource", "ImportUsers", "CreateUser", "UpdateUser", "DeleteUser", "DeleteAuthIntegration",
	"Grant", "GrantChanged", "SetGrant", "Revoke", "RevokeChanged",
	"CreateGroup", "UpdateGroup", "DeleteGroup", "SetGroupGrant", "RevokeGroupGrant", "DeleteExpiredGrants",
}

// otherMethods read, or write what no decision reads (organizations, keys, secrets, the
// audit trail, the decision log, integrations and their tokens), or are the change feed.
var otherMethods = []string{
	"Ping", "Close", "Touch", "WatchChanges",
	"CreateOrg", "GetOrg", "OrgByName", "ListOrgs", "CreateAPIKey", "APIKeyByHash", "DeleteAPIKey", "CountAPIKeys", "GetAPIKey", "ListAPIKeys",
	"GetResource", "GetResources", "ResourceByName", "ListResources", "ReplaceSecret", "SwapSecret", "ResourcesWithSecrets",
	"CreateAuthIntegration", "GetAuthIntegration", "ListAuthIntegrations", "CreateSCIMIntegration", "SCIMTokenByHash", "SetSCIMToken",
	"GetUser", "ListUsers", "UserByEmail", "UsersByExternalID", "IntegrationUsers",
	"UserGrants", "ListGrants", "ResourceGrants", "GroupGrants", "ResourceGroupGrants", "AskedGrants", "UserFacts",
	"GetGroup", "GetOrgGroup", "GroupByName", "IntegrationGroups", "ListGroups", "UserGroups",
	"AppendEvents", "ListEvents", "InsertDecisions", "ListDecisions", "DeleteDecisionsBefore",
}

// TestEveryStoreMethodIsClassified fails when a Store method is added without deciding whether
// it can change a decision, so that the check path's cache can never miss a write.
func TestEveryStoreMethodIsClassified(t *testing.T) {
	known := map[string]bool{}
	for _, m := range append(append([]string{}, decisionWrites...), otherMethods...) {
		known[m] = true
	}
	st := reflect.TypeOf((*storage.Store)(nil)).Elem()
	for i := range st.NumMethod() {
		if name := st.Method(i).Name; !known[name] {
			t.Errorf("storage.Store.%s is new: if it can change what a decision reads, override it in invalidating (invalidate.go) and add it to decisionWrites; otherwise add it to otherMethods", name)
		}
		delete(known, st.Method(i).Name)
	}
	for name := range known {
		t.Errorf("%s is listed but is no longer a storage.Store method", name)
	}
}

// TestDecisionWritesDropTheCache makes each write that can change a decision through the
// server's store and checks that the next check reads the user afresh, while a write that
// changes no decision keeps the cache.
func TestDecisionWritesDropTheCache(t *testing.T) {
	const org, res, res2 = "org-1", "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		write func(ctx context.Context, s storage.Store) error
		drops bool
	}{
		{"CreateResource", func(ctx context.Context, s storage.Store) error {
			return s.CreateResource(ctx, storage.Resource{OrgID: org, ID: res2, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "other", CreatedAt: now})
		}, true},
		{"DeleteResource", func(ctx context.Context, s storage.Store) error { return s.DeleteResource(ctx, org, res) }, true},
		{"ImportUsers", func(ctx context.Context, s storage.Store) error {
			_, err := s.ImportUsers(ctx, org, "int", []storage.UserImport{{Email: "ada@x", First: "Augusta"}}, now)
			return err
		}, true},
		{"ImportUsers of others", func(ctx context.Context, s storage.Store) error {
			_, err := s.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "bob", Email: "bob@x"}}, now)
			return err
		}, false},
		{"ImportUsers refused", func(ctx context.Context, s storage.Store) error {
			_, err := s.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "ada", Email: "other@x"}}, now)
			if !errors.Is(err, storage.ErrConflict) {
				return fmt.Errorf("import of a taken id = %v, want a conflict", err)
			}
			return nil
		}, true},
		{"CreateGroup of others", func(ctx context.Context, s storage.Store) error {
			return s.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g3", DisplayName: "three", Members: []string{"cy"}, CreatedAt: now, ModifiedAt: now})
		}, false},
		{"UpdateGroup of others", func(ctx context.Context, s storage.Store) error {
			_, err := s.UpdateGroup(ctx, org, "", "g2", func(g *storage.Group) error { g.Members = nil; return nil })
			return err
		}, false},
		{"SetGroupGrant of another group", func(ctx context.Context, s storage.Store) error {
			_, err := s.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: "g2", ResourceID: res, CreatedAt: now})
			return err
		}, false},
		{"UpdateUser", func(ctx context.Context, s storage.Store) error {
			_, err := s.UpdateUser(ctx, org, "int", "ada", func(u *storage.User) error { u.Active = false; return nil })
			return err
		}, true},
		{"DeleteUser", func(ctx context.Context, s storage.Store) error { return s.DeleteUser(ctx, org, "int", "ada", now) }, true},
		{"DeleteAuthIntegration", func(ctx context.Context, s storage.Store) error {
			_, err := s.DeleteAuthIntegration(ctx, org, "int", now)
			return err
		}, true},
		{"Grant", func(ctx context.Context, s storage.Store) error {
			return s.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: res, CreatedAt: now})
		}, true},
		{"SetGrant", func(ctx context.Context, s storage.Store) error {
			_, err := s.SetGrant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: res, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
			return err
		}, true},
		{"Revoke", func(ctx context.Context, s storage.Store) error { return s.Revoke(ctx, org, "ada", res) }, true},
		{"RevokeChanged", func(ctx context.Context, s storage.Store) error {
			_, err := s.RevokeChanged(ctx, org, "ada", res)
			return err
		}, true},
		{"CreateGroup", func(ctx context.Context, s storage.Store) error {
			return s.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g3", DisplayName: "three", Members: []string{"ada"}, CreatedAt: now, ModifiedAt: now})
		}, true},
		{"UpdateGroup", func(ctx context.Context, s storage.Store) error {
			_, err := s.UpdateGroup(ctx, org, "", "g1", func(g *storage.Group) error { g.Members = nil; return nil })
			return err
		}, true},
		{"DeleteGroup", func(ctx context.Context, s storage.Store) error { return s.DeleteGroup(ctx, org, "", "g1") }, true},
		{"SetGroupGrant", func(ctx context.Context, s storage.Store) error {
			_, err := s.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: "g1", ResourceID: res, CreatedAt: now})
			return err
		}, true},
		{"RevokeGroupGrant", func(ctx context.Context, s storage.Store) error {
			_, err := s.RevokeGroupGrant(ctx, org, "g1", res)
			return err
		}, true},
		{"DeleteExpiredGrants", func(ctx context.Context, s storage.Store) error {
			_, err := s.DeleteExpiredGrants(ctx, now.Add(48*time.Hour))
			return err
		}, true},
		// Writes that change no decision keep what is cached.
		{"ReplaceSecret", func(ctx context.Context, s storage.Store) error {
			return s.ReplaceSecret(ctx, org, res, []byte("sealed"), map[string]string{"env": "prod"})
		}, false},
		{"CreateAuthIntegration", func(ctx context.Context, s storage.Store) error {
			return s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-2", Name: "other", Type: "import", CreatedAt: now})
		}, false},
		{"CreateAPIKey", func(ctx context.Context, s storage.Store) error {
			return s.CreateAPIKey(ctx, storage.APIKey{ID: "k", OrgID: org, Hash: "h", CreatedAt: now})
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			raw := bolttest.Open(t)
			must := fatalOn(t)
			must(raw.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: now}))
			must(raw.CreateResource(ctx, storage.Resource{OrgID: org, ID: res, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m", CreatedAt: now}))
			must(raw.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int", Name: "hr", Type: "import", CreatedAt: now}))
			_, err := raw.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "ada", Email: "ada@x"}}, now)
			must(err)
			_, err = raw.SetGrant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: res, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
			must(err)
			must(raw.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g1", DisplayName: "one", Members: []string{"ada"}, CreatedAt: now, ModifiedAt: now}))
			_, err = raw.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "cy", Email: "cy@x"}}, now)
			must(err)
			must(raw.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g2", DisplayName: "others", Members: []string{"cy"}, CreatedAt: now, ModifiedAt: now}))
			_, err = raw.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: "g1", ResourceID: res, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
			must(err)

			engine, err := policy.New(ctx, policy.Embedded())
			must(err)
			s := New(Config{Store: raw, Decider: engine})
			for range keptFromLoad { // a user is kept from this load on (admit)
				if _, err := s.userFacts(ctx, org, "ada"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.userFacts(ctx, org, "ada"); err != nil || s.cache.hits.Load() != 1 {
				t.Fatalf("the second read was not from the cache (hits %d, %v)", s.cache.hits.Load(), err)
			}
			must(tc.write(ctx, s.Store()))
			misses := s.cache.misses.Load()
			if _, err := s.userFacts(ctx, org, "ada"); err != nil {
				t.Fatal(err)
			}
			if dropped := s.cache.misses.Load() > misses; dropped != tc.drops {
				t.Errorf("after %s, the cached user was dropped: %v, want %v", tc.name, dropped, tc.drops)
			}
		})
	}
}

// TestSharedStoreTrustsTheCacheOnlyWhileSynced: on a store other processes write, the cache
// serves checks only within a second of the change feed's last confirmation.
func TestSharedStoreTrustsTheCacheOnlyWhileSynced(t *testing.T) {
	ctx := context.Background()
	raw := bolttest.Open(t)
	s := New(Config{Store: raw, SharedStore: true})
	read := func() bool { // whether the read came from the cache
		t.Helper()
		hits := s.cache.hits.Load()
		if _, err := s.userFacts(ctx, "org", "ada"); err != nil {
			t.Fatal(err)
		}
		return s.cache.hits.Load() > hits
	}
	if read() || read() {
		t.Fatal("the cache was used before the change feed ever confirmed it")
	}
	s.Synced(true)
	for range keptFromLoad { // a user is kept from this load on (admit)
		read()
	}
	if !read() {
		t.Fatal("the cache was not used right after the change feed confirmed it")
	}
	s.lastSync.Store(time.Now().Add(-2 * maxStaleness).UnixNano())
	if read() {
		t.Error("the cache was used two seconds after the change feed last confirmed it")
	}
	s.Synced(true) // a confirmation after a gap drops everything: changes may have been missed
	if read() {
		t.Error("what was cached before the gap was used after it")
	}
	read()
	s.Synced(false)
	if read() {
		t.Error("the cache was used after the change feed said it lost track")
	}

	// A 503 that says the store failed stops the cache being trusted at once; one that says
	// nothing of the store (no policy loaded) does not.
	answer503 := func(err error) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("GET", "/readyz", nil)
		s.writeError(c, err)
	}
	s.Synced(true)
	read()
	answer503(&Error{Status: http.StatusServiceUnavailable, Detail: "No policy is loaded."})
	if !read() {
		t.Error("a 503 about the policy stopped the cache being trusted")
	}
	answer503(fmt.Errorf("get user: %w", storage.ErrUnavailable))
	if read() {
		t.Error("the cache was used after a request found the store unavailable")
	}
}

// TestGroupChangeReaches: a change of a group reaches those who joined or left it, or, when it
// is renamed, everyone who was or is a member; a change of nothing the policy reads, no one.
func TestGroupChangeReaches(t *testing.T) {
	group := func(name string, members ...string) storage.Group {
		return storage.Group{OrgID: "o1", ID: "g1", DisplayName: name, Members: members}
	}
	tests := []struct {
		name          string
		before, after storage.Group
		want          []string
	}{
		{"joined", group("Eng", "ada"), group("Eng", "ada", "bob"), []string{"bob"}},
		{"left", group("Eng", "ada", "bob"), group("Eng", "bob"), []string{"ada"}},
		{"joined and left", group("Eng", "ada", "bob"), group("Eng", "bob", "carl"), []string{"ada", "carl"}},
		{"reordered", group("Eng", "ada", "bob"), group("Eng", "bob", "ada"), nil},
		{"external id changed", group("Eng", "ada"), func() storage.Group { g := group("Eng", "ada"); g.ExternalID = "x"; return g }(), nil},
		{"renamed", group("Eng", "ada", "bob"), group("Platform", "bob", "carl"), []string{"ada", "bob", "carl"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Compact(slices.Sorted(slices.Values(groupChangeReaches(tc.before, tc.after))))
			if !slices.Equal(got, tc.want) {
				t.Errorf("groupChangeReaches = %q, want %q", got, tc.want)
			}
		})
	}
}
