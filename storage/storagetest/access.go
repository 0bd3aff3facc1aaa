package storagetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// testAccess checks storage.AccessStore and storage.APIKeyLister: plain groups, group grants,
// expiring grants and their clean-up, and the reverse lookups.
func testAccess(t *testing.T, open opener) {
	t.Run("PlainGroups", func(t *testing.T) { testPlainGroups(t, open) })
	t.Run("GroupGrants", func(t *testing.T) { testGroupGrants(t, open) })
	t.Run("GroupGrantsGoWithTheirGroupOrResource", func(t *testing.T) { testGroupGrantCleanup(t, open) })
	t.Run("GrantExpiry", func(t *testing.T) { testGrantExpiry(t, open) })
	t.Run("DeleteExpiredGrants", func(t *testing.T) { testDeleteExpiredGrants(t, open) })
	t.Run("ListAPIKeys", func(t *testing.T) { testListAPIKeys(t, open) })
	t.Run("IDsThatBeginWithAnother", func(t *testing.T) { testIDsThatBeginWithAnother(t, open) })
	t.Run("UserFacts", func(t *testing.T) { testUserFacts(t, open) })
	t.Run("FactsScanner", func(t *testing.T) { testFactsScanner(t, open) })
}

// testUserFacts checks UserFacts against the world withFactsWorld makes, and against each
// part's method (UserFactsOf, which a store may be built on, so the first check is the one
// that holds such a store to anything).
// u-1 holds 1 (expiring) and 2 of their own, 3 through g-1 and 2 again through g-2; u-2 is a
// member of g-1 and inactive; u-3 holds 10 to 19 and 20 to 29 through g-3; "a" holds 30 and
// g-3's; u-1 of org-2 holds 9; "a\x00b" holds 4, and "a" (a prefix of its key) does not.
func testUserFacts(t *testing.T, open opener) {
	s := open(t)
	ctx := t.Context()
	withFactsWorld(t, s)

	span := func(from, to int) []int {
		var out []int
		for n := from; n <= to; n++ {
			out = append(out, n)
		}
		return out
	}
	for _, tc := range []struct {
		org, user           string
		found, active       bool
		grants, groupGrants []int    // the resources, by number
		groups              []string // with their names
	}{
		{"org-1", "u-1", true, true, []int{1, 2}, []int{2, 3}, []string{"g-1 Ops", "g-2 Eng"}},
		{"org-1", "u-2", true, false, nil, []int{3}, []string{"g-1 Ops"}},
		{"org-1", "u-3", true, true, span(10, 19), span(20, 29), []string{"g-3 Many"}},
		{"org-1", "a", true, true, []int{30}, span(20, 29), []string{"g-3 Many"}},
		{"org-1", "a\x00b", true, true, []int{4}, nil, nil},
		{"org-1", "nobody", false, false, nil, nil, nil},
		{"org-2", "u-1", true, true, []int{9}, nil, nil},
	} {
		call := fmt.Sprintf("UserFacts(%s, %q)", tc.org, tc.user)
		got, err := s.UserFacts(ctx, tc.org, tc.user)
		noErr(t, call, err)
		want, err := storage.UserFactsOf(ctx, s, tc.org, tc.user)
		noErr(t, "UserFactsOf", err)
		diff(t, call+" against each part's method", want, got, equateEmpty)
		if got.Found != tc.found || (got.Found && (got.User.ID != tc.user || got.User.OrgID != tc.org || got.User.Active != tc.active)) {
			t.Errorf("%s: found %v (user %q of %s, active %v), want found %v, active %v", call, got.Found, got.User.ID, got.User.OrgID, got.User.Active, tc.found, tc.active)
		}
		var grants, groupGrants []string
		for _, g := range got.Grants {
			grants = append(grants, g.ResourceID)
		}
		for _, g := range got.GroupGrants {
			groupGrants = append(groupGrants, g.ResourceID)
		}
		var groups []string
		for _, g := range got.Groups {
			groups = append(groups, g.ID+" "+g.DisplayName)
		}
		rids := func(ns []int) []string {
			var out []string
			for _, n := range ns {
				out = append(out, rid(n))
			}
			return out
		}
		slices.Sort(grants)
		slices.Sort(groupGrants)
		slices.Sort(groups)
		diff(t, call+" grants", rids(tc.grants), grants, equateEmpty)
		diff(t, call+" group grants", rids(tc.groupGrants), groupGrants, equateEmpty)
		diff(t, call+" groups", tc.groups, groups, equateEmpty)
	}
}

// withFactsWorld adds the users, resources, grants and groups testUserFacts describes.
func withFactsWorld(t *testing.T, s storage.Store) {
	t.Helper()
	ctx := t.Context()
	withGrantees(t, s) // org-1: u-1, u-2, u-3 and resources 1 to 4; org-2: u-1, u-9 and 9
	importUsers(t, s, "org-1", "int-org-1", at(0), storage.UserImport{ID: "a", Email: "a@example.com"}, storage.UserImport{ID: "a\x00b", Email: "ab@example.com"})
	_, err := s.UpdateUser(ctx, "org-1", "int-org-1", "u-2", func(u *storage.User) error { u.Active = false; return nil })
	noErr(t, "UpdateUser(u-2)", err)
	grant(t, s, "org-1", "u-1", rid(2), at(1))
	expiring := storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: rid(1), CreatedAt: at(2), ExpiresAt: at(50)}
	_, err = s.SetGrant(ctx, expiring)
	noErr(t, "SetGrant(expiring)", err)
	grant(t, s, "org-1", "a\x00b", rid(4), at(1))
	grant(t, s, "org-2", "u-1", rid(9), at(1))
	noErr(t, "CreateGroup(g-1)", s.CreateGroup(ctx, plainGroup("g-1", "Ops", 1, "u-1", "u-2")))
	noErr(t, "CreateGroup(g-2)", s.CreateGroup(ctx, plainGroup("g-2", "Eng", 1, "u-1")))
	setGroupGrant(t, s, groupGrant("g-1", 3, 3))
	setGroupGrant(t, s, groupGrant("g-2", 2, 4))
	// u-3 holds 10 to 19 of their own and 20 to 29 through g-3, whose other member holds 30.
	noErr(t, "CreateGroup(g-3)", s.CreateGroup(ctx, plainGroup("g-3", "Many", 1, "u-3", "a")))
	for n := 10; n <= 30; n++ {
		createResource(t, s, model("org-1", n, at(0)))
		switch {
		case n < 20:
			grant(t, s, "org-1", "u-3", rid(n), at(n))
		case n < 30:
			setGroupGrant(t, s, groupGrant("g-3", n, 40-n))
		default:
			grant(t, s, "org-1", "a", rid(n), at(n))
		}
	}
}

// testIDsThatBeginWithAnother checks that what belongs to one user or group is never read as
// another's whose id it begins with and a zero byte: "a" is not "a\x00b". A store that keeps
// records under joined ids must tell the one from the other, or a user would hold the grants
// and groups of another.
func testIDsThatBeginWithAnother(t *testing.T, open opener) {
	s := open(t)
	ctx := t.Context()
	const a, ab = "a", "a\x00b"
	withUsers(t, s, "org-1", at(0), a, ab)
	for n := 1; n <= 3; n++ {
		createResource(t, s, model("org-1", n, at(0)))
	}
	mine := grant(t, s, "org-1", a, rid(1), at(1))
	theirs := grant(t, s, "org-1", ab, rid(2), at(1))
	checkGrants(t, s, "org-1", map[string][]storage.Grant{a: {mine}, ab: {theirs}}, []storage.Grant{mine, theirs})

	const g, gh = "g", "g\x00h"
	noErr(t, "CreateGroup(g)", s.CreateGroup(ctx, plainGroup(g, "G", 1, a)))
	noErr(t, "CreateGroup(g\\x00h)", s.CreateGroup(ctx, plainGroup(gh, "GH", 1, ab)))
	setGroupGrant(t, s, groupGrant(gh, 3, 2))
	for user, want := range map[string][]string{a: {g}, ab: {gh}} {
		groups, err := s.UserGroups(ctx, "org-1", user)
		noErr(t, fmt.Sprintf("UserGroups(%q)", user), err)
		diff(t, fmt.Sprintf("UserGroups(%q)", user), want, storage.GroupIDs(groups))
	}
	checkGroupGrants(t, s, "org-1", []string{g}, nil)
	checkGroupGrants(t, s, "org-1", []string{gh}, []storage.GroupGrant{groupGrant(gh, 3, 2)})

	// Deleting a takes its grants and memberships, and none of a\x00b's.
	noErr(t, "DeleteUser(a)", s.DeleteUser(ctx, "org-1", "int-org-1", a, at(3)))
	checkGrants(t, s, "org-1", map[string][]storage.Grant{a: nil, ab: {theirs}}, []storage.Grant{theirs})
	groups, err := s.UserGroups(ctx, "org-1", ab)
	noErr(t, "UserGroups(a\\x00b) after deleting a", err)
	diff(t, "UserGroups(a\\x00b) after deleting a", []string{gh}, storage.GroupIDs(groups))
}

// plainGroup is a group of org-1 that belongs to no integration.
func plainGroup(id, name string, created int, members ...string) storage.Group {
	return storage.Group{OrgID: "org-1", ID: id, DisplayName: name, Members: members, CreatedAt: at(created), ModifiedAt: at(created)}
}

func testPlainGroups(t *testing.T, open opener) {
	s := open(t)
	withGrantees(t, s) // org-1: u-1, u-2, u-3 of int-org-1; org-2: u-1, u-9
	ctx := t.Context()
	createIntegration(t, s, "org-1", "int-2", "contractors", at(0))
	importUsers(t, s, "org-1", "int-2", at(0), storage.UserImport{ID: "u-5", Email: "u-5@example.com"})

	// Members of a plain group may come from any integration of the organization.
	eng := plainGroup("g-2", "Engineering", 2, "u-1", "u-5")
	noErr(t, "CreateGroup(plain)", s.CreateGroup(ctx, eng))
	ops := plainGroup("g-1", "Ops", 2)
	noErr(t, "CreateGroup(plain, no members)", s.CreateGroup(ctx, ops))
	// A group of an integration may carry a plain group's name: names are unique per integration.
	directory := storage.Group{OrgID: "org-1", ID: "g-3", IntegrationID: "int-org-1", DisplayName: "engineering",
		Members: []string{"u-2"}, CreatedAt: at(1), ModifiedAt: at(1)}
	noErr(t, "CreateGroup(of an integration)", s.CreateGroup(ctx, directory))

	for _, tc := range []struct {
		name string
		g    storage.Group
		want error
	}{
		{"name taken, in another case", plainGroup("g-4", "ENGINEERING", 3), storage.ErrConflict},
		{"id taken by a group of an integration", plainGroup("g-3", "New", 3), storage.ErrConflict},
		{"member of another organization", plainGroup("g-4", "New", 3, "u-9"), storage.ErrUnknownMember},
		{"unknown member", plainGroup("g-4", "New", 3, "u-7"), storage.ErrUnknownMember},
	} {
		wantErr(t, "CreateGroup("+tc.name+")", s.CreateGroup(ctx, tc.g), tc.want)
	}

	for _, want := range []storage.Group{eng, directory} {
		got, err := s.GetOrgGroup(ctx, "org-1", want.ID)
		noErr(t, "GetOrgGroup("+want.ID+")", err)
		diff(t, "GetOrgGroup("+want.ID+")", want, got, equateEmpty)
	}
	for _, tc := range []struct{ org, id string }{{"org-1", "g-4"}, {"org-2", "g-2"}} {
		_, err := s.GetOrgGroup(ctx, tc.org, tc.id)
		wantErr(t, fmt.Sprintf("GetOrgGroup(%s, %s)", tc.org, tc.id), err, storage.ErrNotFound)
	}
	got, err := s.GetGroup(ctx, "org-1", "", "g-2")
	noErr(t, "GetGroup(plain)", err)
	diff(t, "GetGroup(plain)", eng, got, equateEmpty)
	_, err = s.GetGroup(ctx, "org-1", "", "g-3")
	wantErr(t, "GetGroup(\"\", a group of an integration)", err, storage.ErrNotFound)

	list, err := s.ListGroups(ctx, "org-1")
	noErr(t, "ListGroups", err)
	diff(t, "ListGroups", []storage.Group{directory, ops, eng}, list, equateEmpty)
	list, err = s.ListGroups(ctx, "org-2")
	noErr(t, "ListGroups(org-2)", err)
	diff(t, "ListGroups(org-2)", []storage.Group(nil), list, equateEmpty)

	// Membership changes as for SCIM's groups, with the organization's users as candidates.
	eng, err = s.UpdateGroup(ctx, "org-1", "", "g-2", func(g *storage.Group) error {
		g.Members = append(g.Members, "u-2")
		g.ModifiedAt = at(4)
		return nil
	})
	noErr(t, "UpdateGroup(add u-2)", err)
	_, err = s.UpdateGroup(ctx, "org-1", "", "g-2", func(g *storage.Group) error {
		g.Members = append(g.Members, "u-9")
		return nil
	})
	wantErr(t, "UpdateGroup(add another organization's user)", err, storage.ErrUnknownMember)
	groups, err := s.UserGroups(ctx, "org-1", "u-2")
	noErr(t, "UserGroups(u-2)", err)
	diff(t, "UserGroups(u-2)", []string{"g-2", "g-3"}, storage.GroupIDs(groups))

	noErr(t, "DeleteGroup(plain)", s.DeleteGroup(ctx, "org-1", "", "g-2"))
	groups, err = s.UserGroups(ctx, "org-1", "u-2")
	noErr(t, "UserGroups after delete", err)
	diff(t, "UserGroups after delete", []string{"g-3"}, storage.GroupIDs(groups))
	// The name is free again.
	noErr(t, "CreateGroup(the deleted group's name)", s.CreateGroup(ctx, plainGroup("g-5", "Engineering", 5)))
}

// groupGrant returns a group grant of org-1.
func groupGrant(group string, n, created int) storage.GroupGrant {
	return storage.GroupGrant{OrgID: "org-1", GroupID: group, ResourceID: rid(n), CreatedAt: at(created)}
}

func setGroupGrant(tb testing.TB, s storage.Store, g storage.GroupGrant) *storage.GroupGrant {
	tb.Helper()
	prev, err := s.SetGroupGrant(tb.Context(), g)
	noErr(tb, fmt.Sprintf("SetGroupGrant(%s, %s)", g.GroupID, g.ResourceID), err)
	return prev
}

func checkGroupGrants(tb testing.TB, s storage.Store, org string, groups []string, want []storage.GroupGrant) {
	tb.Helper()
	got, err := s.GroupGrants(tb.Context(), org, groups)
	noErr(tb, "GroupGrants", err)
	diff(tb, fmt.Sprintf("GroupGrants(%s, %v)", org, groups), want, got, equateEmpty)
}

func testGroupGrants(t *testing.T, open opener) {
	s := open(t)
	withGrantees(t, s)
	ctx := t.Context()
	noErr(t, "CreateGroup", s.CreateGroup(ctx, plainGroup("g-1", "Ops", 1, "u-1")))
	noErr(t, "CreateGroup", s.CreateGroup(ctx, plainGroup("g-2", "Eng", 1, "u-2")))
	noErr(t, "CreateGroup(org-2)", s.CreateGroup(ctx, storage.Group{OrgID: "org-2", ID: "g-9", DisplayName: "Theirs", CreatedAt: at(1), ModifiedAt: at(1)}))

	a := groupGrant("g-2", 2, 3)
	if prev := setGroupGrant(t, s, a); prev != nil {
		t.Errorf("SetGroupGrant(new) = %+v, want nil", prev)
	}
	b := groupGrant("g-2", 1, 4)
	setGroupGrant(t, s, b)
	c := groupGrant("g-1", 3, 5)
	setGroupGrant(t, s, c)

	// Granting again keeps CreatedAt, replaces the expiry, and says what was there.
	again := a
	again.CreatedAt, again.ExpiresAt = at(9), at(100)
	prev := setGroupGrant(t, s, again)
	diff(t, "SetGroupGrant(again) returns the grant as it was", &a, prev)
	a.ExpiresAt = at(100)
	prev = setGroupGrant(t, s, again)
	diff(t, "SetGroupGrant(the same again)", &a, prev)
	checkGroupGrants(t, s, "org-1", []string{"g-2", "g-1", "g-2", "g-8"}, []storage.GroupGrant{c, a, b})
	checkGroupGrants(t, s, "org-2", []string{"g-1", "g-2"}, nil)

	for _, tc := range []struct {
		name string
		g    storage.GroupGrant
		want error // which one is missing, the group first
	}{
		{"unknown group", groupGrant("g-8", 1, 6), storage.ErrGroupNotFound},
		{"group of another org", groupGrant("g-9", 1, 6), storage.ErrGroupNotFound},
		{"unknown resource", groupGrant("g-1", 8, 6), storage.ErrResourceNotFound},
		{"resource of another org", groupGrant("g-1", 9, 6), storage.ErrResourceNotFound},
		{"unknown group and resource", groupGrant("g-8", 8, 6), storage.ErrGroupNotFound},
	} {
		_, err := s.SetGroupGrant(ctx, tc.g)
		wantErr(t, "SetGroupGrant("+tc.name+")", err, tc.want)
		wantErr(t, "SetGroupGrant("+tc.name+")", err, storage.ErrNotFound)
	}

	byResource, err := s.ResourceGroupGrants(ctx, "org-1", rid(2))
	noErr(t, "ResourceGroupGrants", err)
	diff(t, "ResourceGroupGrants", []storage.GroupGrant{a}, byResource, equateEmpty)
	setGroupGrant(t, s, groupGrant("g-1", 2, 6))
	byResource, err = s.ResourceGroupGrants(ctx, "org-1", rid(2))
	noErr(t, "ResourceGroupGrants", err)
	diff(t, "ResourceGroupGrants, ordered by group", []string{"g-1", "g-2"}, groupGrantGroups(byResource))
	byResource, err = s.ResourceGroupGrants(ctx, "org-2", rid(2))
	noErr(t, "ResourceGroupGrants(org-2)", err)
	diff(t, "ResourceGroupGrants(org-2)", []storage.GroupGrant(nil), byResource, equateEmpty)

	for _, tc := range []struct {
		name, group string
		n           int
		want        bool
	}{
		{"revoke", "g-2", 1, true},
		{"revoke again", "g-2", 1, false},
		{"revoke what was never granted", "g-2", 4, false},
	} {
		got, err := s.RevokeGroupGrant(ctx, "org-1", tc.group, rid(tc.n))
		noErr(t, "RevokeGroupGrant("+tc.name+")", err)
		if got != tc.want {
			t.Errorf("RevokeGroupGrant(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ org, group string }{{"org-1", "g-8"}, {"org-1", "g-9"}} {
		_, err := s.RevokeGroupGrant(ctx, tc.org, tc.group, rid(1))
		wantErr(t, fmt.Sprintf("RevokeGroupGrant(%s, %s)", tc.org, tc.group), err, storage.ErrGroupNotFound)
	}
	checkGroupGrants(t, s, "org-1", []string{"g-2"}, []storage.GroupGrant{a})
}

func groupGrantGroups(gs []storage.GroupGrant) []string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.GroupID
	}
	return ids
}

// testGroupGrantCleanup: deleting a group or a resource takes its group grants with it, so
// that a group made again with the same id, or a grant on a resource registered again, starts
// from nothing.
func testGroupGrantCleanup(t *testing.T, open opener) {
	s := open(t)
	withGrantees(t, s)
	ctx := t.Context()
	noErr(t, "CreateGroup", s.CreateGroup(ctx, plainGroup("g-1", "Ops", 1, "u-1")))
	noErr(t, "CreateGroup", s.CreateGroup(ctx, plainGroup("g-2", "Eng", 1)))
	setGroupGrant(t, s, groupGrant("g-1", 1, 2))
	kept := groupGrant("g-2", 1, 2)
	setGroupGrant(t, s, kept)
	setGroupGrant(t, s, groupGrant("g-2", 2, 2))

	noErr(t, "DeleteGroup", s.DeleteGroup(ctx, "org-1", "", "g-1"))
	noErr(t, "CreateGroup(same id)", s.CreateGroup(ctx, plainGroup("g-1", "Ops", 3)))
	checkGroupGrants(t, s, "org-1", []string{"g-1"}, nil)

	noErr(t, "DeleteResource", s.DeleteResource(ctx, "org-1", rid(2)))
	checkGroupGrants(t, s, "org-1", []string{"g-1", "g-2"}, []storage.GroupGrant{kept})
	byResource, err := s.ResourceGroupGrants(ctx, "org-1", rid(2))
	noErr(t, "ResourceGroupGrants(deleted resource)", err)
	diff(t, "ResourceGroupGrants(deleted resource)", []storage.GroupGrant(nil), byResource, equateEmpty)
}

func testGrantExpiry(t *testing.T, open opener) {
	s := open(t)
	withGrantees(t, s)
	ctx := t.Context()
	g := storage.Grant{OrgID: "org-1", UserID: "u-2", ResourceID: rid(1), CreatedAt: at(1), ExpiresAt: at(50)}
	prev, err := s.SetGrant(ctx, g)
	noErr(t, "SetGrant", err)
	if prev != nil {
		t.Errorf("SetGrant(new) = %+v, want nil", prev)
	}
	other := grant(t, s, "org-1", "u-1", rid(1), at(2))
	checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-2": {g}}, []storage.Grant{other, g})

	steps := []struct {
		name    string
		expires int // 0: never
	}{
		{"a later expiry replaces the first", 80},
		{"an earlier one too", 20},
		{"no expiry makes it last", 0},
		{"and an expiry again", 30},
	}
	for _, st := range steps {
		next := g
		next.CreatedAt, next.ExpiresAt = at(7), time.Time{}
		if st.expires != 0 {
			next.ExpiresAt = at(st.expires)
		}
		prev, err := s.SetGrant(ctx, next)
		noErr(t, "SetGrant("+st.name+")", err)
		diff(t, "SetGrant("+st.name+") returns the grant before", &g, prev)
		g.ExpiresAt = next.ExpiresAt
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-2": {g}}, []storage.Grant{other, g})
	}
	// A grant set again sets the expiry too, and is not new.
	g.ExpiresAt = at(60)
	changed, err := setNew(ctx, s, g)
	noErr(t, "SetGrant(new expiry)", err)
	if changed {
		t.Error("SetGrant(new expiry of a grant) = true, want false: the grant is not new")
	}
	checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-2": {g}}, []storage.Grant{other, g})

	byResource, err := s.ResourceGrants(ctx, "org-1", rid(1))
	noErr(t, "ResourceGrants", err)
	diff(t, "ResourceGrants", []storage.Grant{other, g}, byResource)
	byResource, err = s.ResourceGrants(ctx, "org-2", rid(1))
	noErr(t, "ResourceGrants(org-2)", err)
	diff(t, "ResourceGrants(org-2)", []storage.Grant(nil), byResource, equateEmpty)

	_, err = s.SetGrant(ctx, storage.Grant{OrgID: "org-1", UserID: "u-9", ResourceID: rid(1), CreatedAt: at(1)})
	wantErr(t, "SetGrant(user of another org)", err, storage.ErrUserNotFound)
	_, err = s.SetGrant(ctx, storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: rid(9), CreatedAt: at(1)})
	wantErr(t, "SetGrant(resource of another org)", err, storage.ErrResourceNotFound)
}

func testDeleteExpiredGrants(t *testing.T, open opener) {
	s := open(t)
	withGrantees(t, s)
	ctx := t.Context()
	noErr(t, "CreateGroup", s.CreateGroup(ctx, plainGroup("g-1", "Ops", 1, "u-1")))
	set := func(user string, n, expires int) storage.Grant {
		g := storage.Grant{OrgID: "org-1", UserID: user, ResourceID: rid(n), CreatedAt: at(1), ExpiresAt: at(expires)}
		if user == "u-9" {
			g.OrgID = "org-2"
		}
		_, err := s.SetGrant(ctx, g)
		noErr(t, "SetGrant", err)
		return g
	}
	setGroup := func(n, expires int) storage.GroupGrant {
		g := groupGrant("g-1", n, 1)
		g.ExpiresAt = at(expires)
		setGroupGrant(t, s, g)
		return g
	}
	early := set("u-1", 1, 10)
	late := set("u-1", 2, 20)
	forever := grant(t, s, "org-1", "u-1", rid(3), at(1))
	theirs := set("u-9", 9, 5)
	groupEarly := setGroup(1, 10)
	groupLate := setGroup(2, 30)
	// Moved past the first sweep after it was first set: the sweep must see the new expiry.
	extended := set("u-2", 1, 10)
	extended = set("u-2", 1, 40)
	// Revoked, then granted for good: no expiry left to honour.
	set("u-3", 1, 10)
	noErr(t, "Revoke", storage.Revoke(ctx, s, "org-1", "u-3", rid(1)))
	regranted := grant(t, s, "org-1", "u-3", rid(1), at(2))

	sweep := func(sec int, wantUsers []storage.Grant, wantGroups []storage.GroupGrant) {
		t.Helper()
		got, err := s.DeleteExpiredGrants(ctx, at(sec))
		noErr(t, "DeleteExpiredGrants", err)
		slices.SortFunc(got.Users, func(a, b storage.Grant) int {
			return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.ResourceID, b.ResourceID))
		})
		slices.SortFunc(got.Groups, func(a, b storage.GroupGrant) int { return cmp.Compare(a.ResourceID, b.ResourceID) })
		diff(t, fmt.Sprintf("DeleteExpiredGrants(at(%d)).Users", sec), wantUsers, got.Users, equateEmpty)
		diff(t, fmt.Sprintf("DeleteExpiredGrants(at(%d)).Groups", sec), wantGroups, got.Groups, equateEmpty)
	}
	// Not after now: a grant expiring exactly now is expired.
	sweep(10, []storage.Grant{early, theirs}, []storage.GroupGrant{groupEarly})
	checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {late, forever}, "u-2": {extended}, "u-3": {regranted}},
		[]storage.Grant{late, forever, extended, regranted})
	checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-9": nil}, nil)
	checkGroupGrants(t, s, "org-1", []string{"g-1"}, []storage.GroupGrant{groupLate})
	sweep(10, nil, nil)
	sweep(100, []storage.Grant{late, extended}, []storage.GroupGrant{groupLate})
	checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {forever}, "u-3": {regranted}}, []storage.Grant{forever, regranted})
	checkGroupGrants(t, s, "org-1", []string{"g-1"}, nil)
	byResource, err := s.ResourceGrants(ctx, "org-1", rid(2))
	noErr(t, "ResourceGrants after the sweep", err)
	diff(t, "ResourceGrants after the sweep", []storage.Grant(nil), byResource, equateEmpty)
}

func testListAPIKeys(t *testing.T, open opener) {
	s := open(t)
	createOrg(t, s, "org-1", "acme", at(0))
	createOrg(t, s, "org-2", "globex", at(0))
	mk := func(id, org string, n, created int, scope string) storage.APIKey {
		k := storage.APIKey{ID: id, OrgID: org, Prefix: "gry_" + id, Hash: hash(n), Scope: scope, CreatedAt: at(created)}
		noErr(t, "CreateAPIKey("+id+")", s.CreateAPIKey(t.Context(), k))
		return k
	}
	b := mk("key-b", "org-1", 1, 2, storage.ScopeCheck)
	a := mk("key-a", "org-1", 2, 2, "")
	c := mk("key-c", "org-1", 3, 1, storage.ScopeManage)
	theirs := mk("key-d", "org-2", 4, 1, storage.ScopeAdmin)
	for org, want := range map[string][]storage.APIKey{"org-1": {c, a, b}, "org-2": {theirs}, "org-3": nil} {
		got, err := s.ListAPIKeys(t.Context(), org)
		noErr(t, "ListAPIKeys("+org+")", err)
		diff(t, "ListAPIKeys("+org+")", want, got, equateEmpty)
	}
}
