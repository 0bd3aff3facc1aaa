package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/grantry/grantry/storage"
)

// scanOrgs are the organizations withScanWorld fills, in the order of their ids. A store
// whose keys join the organization's and the user's ids would sort "org-1-b/…" before
// "org-1/…"; the scans must not.
var scanOrgs = []string{"org-1", "org-1-b", "org-2"}

// withScanWorld fills scanOrgs with what testFactsScanner reads:
//   - org-1: imported users u-1 (grants of rid(1) for good and rid(2) and rid(3) expiring,
//     made in another order than their ids), u-2 (no grants, in g-1 and g-3), U-3 (inactive,
//     no groups), "a", "a\x00b", "a-c" and "a/b" (whose ids order otherwise than keys that
//     escape "/" would), imported at different times so that ListUsers' order is not the
//     scan's; SCIM users s-1 (in both SCIM groups) and s-2 (inactive, a grant of rid(5)),
//     with external ids and attributes; plain groups g-1 (members u-2 and u-1, grants of
//     rid(4) expiring and rid(1)), g-0 (no members, a grant), g-2 (no members, no grants),
//     g-3 (u-2 and a-c); SCIM groups sg-1 (s-2 and s-1, a grant of rid(5)) and sg-0 (s-1).
//   - org-1-b: a user u-1 and a group g-1 of the same ids as org-1's, each with a grant.
//   - org-2: one group, with a grant and no members, and no users.
func withScanWorld(t *testing.T, s storage.Store) {
	t.Helper()
	ctx := t.Context()
	for i, org := range scanOrgs {
		createOrg(t, s, org, "org "+org, at(0))
		for n := 1; n <= 5; n++ {
			createResource(t, s, model(org, n+10*i, at(0)))
		}
	}
	createIntegration(t, s, "org-1", "int-org-1", "directory", at(0))
	for i, id := range []string{"u-2", "a/b", "u-1", "a-c", "U-3", "a\x00b", "a"} {
		importUsers(t, s, "org-1", "int-org-1", at(10-i), storage.UserImport{ID: id, Email: fmt.Sprintf("user-%d@example.com", i), First: "F", Last: "L"})
	}
	withUsers(t, s, "org-1-b", at(0), "u-1")
	_, err := s.UpdateUser(ctx, "org-1", "int-org-1", "U-3", func(u *storage.User) error { u.Active, u.ModifiedAt = false, at(20); return nil })
	noErr(t, "UpdateUser(U-3)", err)
	scim := storage.AuthIntegration{OrgID: "org-1", ID: "scim-1", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(0)}
	noErr(t, "CreateSCIMIntegration", s.CreateSCIMIntegration(ctx, scim, storage.SCIMToken{
		ID: "tok-1", OrgID: "org-1", IntegrationID: "scim-1", Prefix: "gscim_ab", Hash: "hash-scan", CreatedAt: at(0),
	}))
	createUser(t, s, scimUser("org-1", "scim-1", "s-1", "s-1@example.com", at(1)))
	s2 := scimUser("org-1", "scim-1", "s-2", "s-2@example.com", at(1))
	s2.Active = false
	createUser(t, s, s2)

	setGrant := func(org, user string, n, created, expires int) {
		g := storage.Grant{OrgID: org, UserID: user, ResourceID: rid(n), CreatedAt: at(created)}
		if expires > 0 {
			g.ExpiresAt = at(expires)
		}
		_, err := s.SetGrant(ctx, g)
		noErr(t, fmt.Sprintf("SetGrant(%s, %s, %s)", org, user, g.ResourceID), err)
	}
	setGrant("org-1", "u-1", 3, 1, 100)
	setGrant("org-1", "u-1", 1, 2, 0)
	setGrant("org-1", "u-1", 2, 3, 50)
	setGrant("org-1", "a\x00b", 4, 1, 0)
	setGrant("org-1", "a/b", 2, 1, 0)
	setGrant("org-1", "s-2", 5, 1, 0)
	setGrant("org-1-b", "u-1", 11, 1, 0)

	group := func(g storage.Group) {
		if g.OrgID == "" {
			g.OrgID = "org-1"
		}
		g.CreatedAt, g.ModifiedAt = at(1), at(1)
		noErr(t, fmt.Sprintf("CreateGroup(%s, %s)", g.OrgID, g.ID), s.CreateGroup(ctx, g))
	}
	group(storage.Group{ID: "g-1", DisplayName: "Ops", Members: []string{"u-2", "u-1"}})
	group(storage.Group{ID: "g-0", DisplayName: "Empty"})
	group(storage.Group{ID: "g-2", DisplayName: "Nothing"})
	group(storage.Group{ID: "g-3", DisplayName: "Eng", Members: []string{"a-c", "u-2"}})
	group(storage.Group{ID: "sg-1", IntegrationID: "scim-1", DisplayName: "Admins", ExternalID: "ext-sg-1", Members: []string{"s-2", "s-1"}})
	group(storage.Group{ID: "sg-0", IntegrationID: "scim-1", DisplayName: "Everyone", Members: []string{"s-1"}})
	group(storage.Group{OrgID: "org-1-b", ID: "g-1", DisplayName: "Ops", Members: []string{"u-1"}})
	group(storage.Group{OrgID: "org-2", ID: "g-9", DisplayName: "Nobody"})

	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-1", GroupID: "g-1", ResourceID: rid(4), CreatedAt: at(1), ExpiresAt: at(60)})
	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-1", GroupID: "g-1", ResourceID: rid(1), CreatedAt: at(2)})
	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-1", GroupID: "g-0", ResourceID: rid(3), CreatedAt: at(1)})
	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-1", GroupID: "sg-1", ResourceID: rid(5), CreatedAt: at(1)})
	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-1-b", GroupID: "g-1", ResourceID: rid(12), CreatedAt: at(1)})
	setGroupGrant(t, s, storage.GroupGrant{OrgID: "org-2", GroupID: "g-9", ResourceID: rid(21), CreatedAt: at(1)})
}

// testFactsScanner checks storage.FactsScanner: every user and group once, in the order of
// organization and id, each as GetUser, UserGroups, UserGrants, ListGroups and GroupGrants
// read them; an error of fn, and a cancelled ctx, stop a scan.
func testFactsScanner(t *testing.T, open opener) {
	s := open(t)
	ctx := t.Context()
	withScanWorld(t, s)

	wantUsers, wantGroups := expectedScan(t, s)
	if len(wantUsers) != 10 || len(wantGroups) != 8 {
		t.Fatalf("%d users and %d groups to scan, want 10 and 8: the world is not the one described", len(wantUsers), len(wantGroups))
	}
	var gotUsers []storage.ScannedUser
	noErr(t, "ScanUsers", s.ScanUsers(ctx, func(u storage.ScannedUser) error {
		// fn may not keep these; the next call may reuse them.
		u.Groups, u.Grants = slices.Clone(u.Groups), slices.Clone(u.Grants)
		gotUsers = append(gotUsers, u)
		return nil
	}))
	diff(t, "ScanUsers", wantUsers, gotUsers, equateEmpty)
	var gotGroups []storage.ScannedGroup
	noErr(t, "ScanGroups", s.ScanGroups(ctx, func(g storage.ScannedGroup) error {
		g.Grants = slices.Clone(g.Grants)
		gotGroups = append(gotGroups, g)
		return nil
	}))
	diff(t, "ScanGroups", wantGroups, gotGroups, equateEmpty)

	scans := []struct {
		name string
		scan func(ctx context.Context, fn func() error) error
	}{
		{"ScanUsers", func(ctx context.Context, fn func() error) error {
			return s.ScanUsers(ctx, func(storage.ScannedUser) error { return fn() })
		}},
		{"ScanGroups", func(ctx context.Context, fn func() error) error {
			return s.ScanGroups(ctx, func(storage.ScannedGroup) error { return fn() })
		}},
	}
	for _, sc := range scans {
		t.Run(sc.name, func(t *testing.T) {
			stopsAtFnError(t, sc.name, func(fn func() error) error { return sc.scan(ctx, fn) })

			cctx, cancel := context.WithCancel(ctx)
			calls := 0
			err := sc.scan(cctx, func() error { calls++; cancel(); return nil })
			if !errors.Is(err, context.Canceled) || calls != 1 {
				t.Errorf("%s with ctx cancelled in the first call = %v after %d calls, want context.Canceled after 1", sc.name, err, calls)
			}
			calls = 0
			err = sc.scan(cctx, func() error { calls++; return nil })
			if err == nil || calls != 0 {
				t.Errorf("%s with a cancelled ctx = %v after %d calls, want an error before any", sc.name, err, calls)
			}
		})
	}
}

// expectedScan is what the scans should read of s's scanOrgs, built from each part's own
// method.
func expectedScan(t *testing.T, s storage.Store) ([]storage.ScannedUser, []storage.ScannedGroup) {
	t.Helper()
	ctx := t.Context()
	var users []storage.ScannedUser
	var groups []storage.ScannedGroup
	for _, org := range scanOrgs {
		list, err := s.ListUsers(ctx, org)
		noErr(t, "ListUsers", err)
		slices.SortFunc(list, func(a, b storage.User) int { return strings.Compare(a.ID, b.ID) })
		for _, l := range list {
			u, err := s.GetUser(ctx, org, l.ID)
			noErr(t, "GetUser", err)
			in, err := s.UserGroups(ctx, org, l.ID)
			noErr(t, "UserGroups", err)
			grants, err := s.UserGrants(ctx, org, l.ID)
			noErr(t, "UserGrants", err)
			su := storage.ScannedUser{User: u, Groups: storage.GroupIDs(in)}
			for _, g := range grants {
				su.Grants = append(su.Grants, storage.ScannedGrant{ResourceID: g.ResourceID, ExpiresAt: g.ExpiresAt})
			}
			slices.SortFunc(su.Grants, func(a, b storage.ScannedGrant) int { return strings.Compare(a.ResourceID, b.ResourceID) })
			users = append(users, su)
		}
		list2, err := s.ListGroups(ctx, org)
		noErr(t, "ListGroups", err)
		slices.SortFunc(list2, func(a, b storage.Group) int { return strings.Compare(a.ID, b.ID) })
		for _, g := range list2 {
			grants, err := s.GroupGrants(ctx, org, []string{g.ID})
			noErr(t, "GroupGrants", err)
			sg := storage.ScannedGroup{OrgID: org, GroupID: g.ID, DisplayName: g.DisplayName}
			for _, gg := range grants {
				sg.Grants = append(sg.Grants, storage.ScannedGrant{ResourceID: gg.ResourceID, ExpiresAt: gg.ExpiresAt})
			}
			slices.SortFunc(sg.Grants, func(a, b storage.ScannedGrant) int { return strings.Compare(a.ResourceID, b.ResourceID) })
			groups = append(groups, sg)
		}
	}
	return users, groups
}

// stopsAtFnError checks that scan, given an fn that fails, stops at its first call and returns
// its error.
func stopsAtFnError(t *testing.T, name string, scan func(fn func() error) error) {
	t.Helper()
	stop := errors.New("stop")
	calls := 0
	err := scan(func() error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("%s with fn failing = %v after %d calls, want fn's error after 1", name, err, calls)
	}
}
