// Package storagetest is the behavioural suite that every storage.Store implementation passes,
// so that the embedded store and the MongoDB store answer every call identically.
//
// An implementation's tests call Run with a function that opens a fresh, empty store. The suite
// opens one store per test, so tests never see each other's records and can be read alone. It
// keeps every collection to a few dozen records because some backends (FerretDB) slow down as
// collections grow.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/grantry/grantry/storage"
)

// opener returns a new, empty store and registers its cleanup on t.
type opener = func(t *testing.T) storage.Store

// Run runs the whole suite against the stores that open returns. open must return a new, empty
// store each time and register its cleanup on t; Run calls it once per test.
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	t.Run("Ping", func(t *testing.T) { testPing(t, open) })
	t.Run("Context", func(t *testing.T) { testContext(t, open) })
	t.Run("Orgs", func(t *testing.T) { testOrgs(t, open) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeys(t, open) })
	t.Run("Resources", func(t *testing.T) { testResources(t, open) })
	t.Run("AuthIntegrations", func(t *testing.T) { testAuthIntegrations(t, open) })
	t.Run("Users", func(t *testing.T) { testUsers(t, open) })
	t.Run("Grants", func(t *testing.T) { testGrants(t, open) })
	t.Run("SCIM", func(t *testing.T) { testSCIM(t, open) })
	t.Run("Secrets", func(t *testing.T) { testSecrets(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("Access", func(t *testing.T) { testAccess(t, open) })
}

// base has a millisecond part so that a store that drops milliseconds fails; at and ms step from
// it. All times are UTC and whole milliseconds, as the storage contract requires of callers.
var base = time.Date(2025, time.March, 14, 9, 26, 53, 589_000_000, time.UTC)

// at returns base plus sec seconds.
func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// ms returns base plus sec seconds plus milli milliseconds, for orderings that only
// millisecond precision can tell apart.
func ms(sec, milli int) time.Time { return at(sec).Add(time.Duration(milli) * time.Millisecond) }

// rid returns the n-th resource id. Resource ids are UUIDs in the service, so the suite uses
// UUIDs too: a store may rely on that. Their text order is the order of n.
func rid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// uuidText is the canonical lowercase text form of a UUID of any version.
var uuidText = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// equateEmpty lets a store return nil or an empty list or map alike: the contract says only
// "no elements".
var equateEmpty = cmpopts.EquateEmpty()

// wantErr reports an error unless err matches want; call names the call for the message.
func wantErr(tb testing.TB, call string, err, want error) {
	tb.Helper()
	if !errors.Is(err, want) {
		tb.Errorf("%s: error = %v, want %v", call, err, want)
	}
}

// noErr stops the test if err is not nil; the rest of the test would only report noise.
func noErr(tb testing.TB, call string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", call, err)
	}
}

// diff reports an error if got differs from want.
func diff(tb testing.TB, what string, want, got any, opts ...cmp.Option) {
	tb.Helper()
	if d := cmp.Diff(want, got, opts...); d != "" {
		tb.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func testPing(t *testing.T, open opener) {
	s := open(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping on an open store: %v", err)
	}
}

// testContext checks that a store looks at ctx before it works: the service gives every request
// a deadline, and a store that ignored it would hold requests past it.
func testContext(t *testing.T, open opener) {
	s := open(t)
	org := createOrg(t, s, "org-1", "acme", at(0))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.GetOrg(ctx, org.ID); err == nil {
		t.Error("GetOrg with a cancelled context: no error")
	}
	if err := s.CreateOrg(ctx, storage.Org{ID: "org-2", Name: "other", CreatedAt: at(1)}); err == nil {
		t.Error("CreateOrg with a cancelled context: no error")
	}
	if _, err := s.ListUsers(ctx, org.ID); err == nil {
		t.Error("ListUsers with a cancelled context: no error")
	}
}

func createOrg(tb testing.TB, s storage.Store, id, name string, created time.Time) storage.Org {
	tb.Helper()
	o := storage.Org{ID: id, Name: name, CreatedAt: created}
	noErr(tb, fmt.Sprintf("CreateOrg(%q)", id), s.CreateOrg(tb.Context(), o))
	return o
}

func createResource(tb testing.TB, s storage.Store, r storage.Resource) storage.Resource {
	tb.Helper()
	noErr(tb, fmt.Sprintf("CreateResource(%s, %s)", r.OrgID, r.ID), s.CreateResource(tb.Context(), r))
	return r
}

// model returns a custom model of org with the n-th resource id, named after n.
func model(org string, n int, created time.Time) storage.Resource {
	return storage.Resource{
		OrgID: org, ID: rid(n), Kind: storage.KindModel, Source: storage.SourceCustom,
		Name: fmt.Sprintf("model-%d", n), CreatedAt: created,
	}
}

func createIntegration(tb testing.TB, s storage.Store, org, id, name string, created time.Time) storage.AuthIntegration {
	tb.Helper()
	a := storage.AuthIntegration{OrgID: org, ID: id, Name: name, Type: "import", CreatedAt: created}
	noErr(tb, fmt.Sprintf("CreateAuthIntegration(%s, %s)", org, id), s.CreateAuthIntegration(tb.Context(), a))
	return a
}

func importUsers(tb testing.TB, s storage.Store, org, integration string, now time.Time, users ...storage.UserImport) []storage.User {
	tb.Helper()
	got, err := s.ImportUsers(tb.Context(), org, integration, users, now)
	noErr(tb, fmt.Sprintf("ImportUsers(%s, %s)", org, integration), err)
	if len(got) != len(users) {
		tb.Fatalf("ImportUsers(%s, %s) returned %d users for %d items", org, integration, len(got), len(users))
	}
	return got
}

// withUsers creates an integration in org and imports one user per id through it at now, each
// with an email made from its id. The integration's id is made from org because the suite never
// reuses an id of one organization in another, except for users, where the contract allows it.
func withUsers(tb testing.TB, s storage.Store, org string, now time.Time, ids ...string) []storage.User {
	tb.Helper()
	integration := "int-" + org
	createIntegration(tb, s, org, integration, "directory", now)
	items := make([]storage.UserImport, len(ids))
	for i, id := range ids {
		items[i] = storage.UserImport{ID: id, Email: id + "@example.com", First: "F" + id, Last: "L" + id}
	}
	return importUsers(tb, s, org, integration, now, items...)
}

func grant(tb testing.TB, s storage.Store, org, user, resource string, created time.Time) storage.Grant {
	tb.Helper()
	g := storage.Grant{OrgID: org, UserID: user, ResourceID: resource, CreatedAt: created}
	noErr(tb, fmt.Sprintf("Grant(%s, %s, %s)", org, user, resource), storage.AddGrant(tb.Context(), s, g))
	return g
}
