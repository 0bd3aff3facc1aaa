package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// withSCIM creates the SCIM integrations the SCIM tests work in: "scim-1" and "scim-2" in
// org-1, "scim-9" in org-2, each with a token whose hash is "hash-" and its id.
func withSCIM(tb testing.TB, s storage.Store) {
	tb.Helper()
	createOrg(tb, s, "org-1", "acme", at(0))
	createOrg(tb, s, "org-2", "globex", at(0))
	for _, in := range []struct{ org, id, name string }{
		{"org-1", "scim-1", "okta"}, {"org-1", "scim-2", "entra"}, {"org-2", "scim-9", "okta"},
	} {
		a := storage.AuthIntegration{OrgID: in.org, ID: in.id, Name: in.name, Type: storage.IntegrationSCIM, CreatedAt: at(0)}
		t := storage.SCIMToken{ID: "tok-" + in.id, OrgID: in.org, IntegrationID: in.id, Prefix: "gscim_ab", Hash: "hash-" + in.id, CreatedAt: at(0)}
		noErr(tb, "CreateSCIMIntegration("+in.id+")", s.CreateSCIMIntegration(tb.Context(), a, t))
	}
}

// scimUser is a user of integration integ of org, as CreateUser is given it (the store fills
// IntegrationName).
func scimUser(org, integ, id, email string, created time.Time) storage.User {
	return storage.User{
		OrgID: org, ID: id, Email: email, First: "F" + id, Last: "L" + id, Active: true,
		IntegrationID: integ, ImportedAt: created, ModifiedAt: created,
		ExternalID: "ext-" + id, Attributes: []byte(`{"displayName":"` + id + `"}`),
	}
}

// createUser creates u and returns it as the store keeps it.
func createUser(tb testing.TB, s storage.Store, u storage.User) storage.User {
	tb.Helper()
	noErr(tb, fmt.Sprintf("CreateUser(%s, %s)", u.OrgID, u.ID), s.CreateUser(tb.Context(), u))
	u.IntegrationName = map[string]string{"scim-1": "okta", "scim-2": "entra", "scim-9": "okta"}[u.IntegrationID]
	return u
}

func userIDs(users []storage.User) []string {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	return ids
}

func testSCIM(t *testing.T, open opener) {
	t.Run("Integrations", func(t *testing.T) { testSCIMIntegrations(t, open) })
	t.Run("Users", func(t *testing.T) { testSCIMUsers(t, open) })
	t.Run("UpdateUser", func(t *testing.T) { testSCIMUpdateUser(t, open) })
	t.Run("DeleteUser", func(t *testing.T) { testSCIMDeleteUser(t, open) })
	t.Run("Groups", func(t *testing.T) { testSCIMGroups(t, open) })
	t.Run("ConcurrentUpdates", func(t *testing.T) { testSCIMConcurrentUpdates(t, open) })
	t.Run("SetSCIMToken", func(t *testing.T) { testSetSCIMToken(t, open) })
	t.Run("DeleteAuthIntegration", func(t *testing.T) { testDeleteAuthIntegration(t, open) })
}

func testSetSCIMToken(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	createIntegration(t, s, "org-1", "imp-1", "csv", at(0))
	was := storage.SCIMToken{ID: "tok-scim-1", OrgID: "org-1", IntegrationID: "scim-1", Prefix: "gscim_ab", Hash: "hash-scim-1", CreatedAt: at(0)}
	next := storage.SCIMToken{ID: "tok-new", OrgID: "org-1", IntegrationID: "scim-1", Prefix: "gscim_cd", Hash: "hash-new", CreatedAt: at(5)}

	for _, tc := range []struct{ name, org, integ string }{
		{"unknown integration", "org-1", "scim-8"},
		{"another organization's integration", "org-2", "scim-1"},
		{"an import integration", "org-1", "imp-1"},
	} {
		_, err := s.SetSCIMToken(ctx, tc.org, tc.integ, &next)
		wantErr(t, "SetSCIMToken("+tc.name+")", err, storage.ErrNotFound)
	}
	taken := next
	taken.Hash = "hash-scim-2"
	_, err := s.SetSCIMToken(ctx, "org-1", "scim-1", &taken)
	wantErr(t, "SetSCIMToken(another integration's hash)", err, storage.ErrConflict)

	old, err := s.SetSCIMToken(ctx, "org-1", "scim-1", &next)
	noErr(t, "SetSCIMToken", err)
	diff(t, "the token replaced", &was, old)
	_, err = s.SCIMTokenByHash(ctx, was.Hash)
	wantErr(t, "SCIMTokenByHash(the old token)", err, storage.ErrNotFound)
	got, err := s.SCIMTokenByHash(ctx, next.Hash)
	noErr(t, "SCIMTokenByHash(the new token)", err)
	diff(t, "SCIMTokenByHash(the new token)", next, got)
	if other, err := s.SCIMTokenByHash(ctx, "hash-scim-2"); err != nil || other.IntegrationID != "scim-2" {
		t.Errorf("the other integration's token = %+v, %v", other, err)
	}

	old, err = s.SetSCIMToken(ctx, "org-1", "scim-1", nil)
	noErr(t, "SetSCIMToken(nil)", err)
	diff(t, "the token revoked", &next, old)
	_, err = s.SCIMTokenByHash(ctx, next.Hash)
	wantErr(t, "SCIMTokenByHash(the revoked token)", err, storage.ErrNotFound)
	old, err = s.SetSCIMToken(ctx, "org-1", "scim-1", nil)
	noErr(t, "SetSCIMToken(nil) again", err)
	if old != nil {
		t.Errorf("revoking again returned %+v, want nil", old)
	}
}

func testDeleteAuthIntegration(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	createResource(t, s, model("org-1", 1, at(0)))
	createUser(t, s, scimUser("org-1", "scim-1", "u-1", "ann@example.com", at(1)))
	createUser(t, s, scimUser("org-1", "scim-1", "u-2", "bob@example.com", at(1)))
	cat := createUser(t, s, scimUser("org-1", "scim-2", "u-3", "cat@example.com", at(1)))
	twin := createUser(t, s, scimUser("org-2", "scim-9", "u-1", "ann@example.com", at(1)))
	grant(t, s, "org-1", "u-1", rid(1), at(2))
	keep := grant(t, s, "org-1", "u-3", rid(1), at(2))
	noErr(t, "CreateGroup", s.CreateGroup(ctx, storage.Group{OrgID: "org-1", ID: "g-1", IntegrationID: "scim-1", DisplayName: "Eng",
		Members: []string{"u-1", "u-2"}, CreatedAt: at(2), ModifiedAt: at(2)}))
	setGroupGrant(t, s, groupGrant("g-1", 1, 2))
	plain := plainGroup("g-2", "Everyone", 2, "u-1", "u-3")
	noErr(t, "CreateGroup(plain)", s.CreateGroup(ctx, plain))

	_, err := s.DeleteAuthIntegration(ctx, "org-2", "scim-1", at(3))
	wantErr(t, "DeleteAuthIntegration(another organization's)", err, storage.ErrNotFound)
	removed, err := s.DeleteAuthIntegration(ctx, "org-1", "scim-1", at(4))
	noErr(t, "DeleteAuthIntegration", err)
	diff(t, "DeleteAuthIntegration", storage.RemovedIntegration{
		Integration: storage.AuthIntegration{OrgID: "org-1", ID: "scim-1", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(0)},
		Users:       []string{"u-1", "u-2"}, Groups: []string{"g-1"},
	}, removed)

	_, err = s.GetAuthIntegration(ctx, "org-1", "scim-1")
	wantErr(t, "GetAuthIntegration(deleted)", err, storage.ErrNotFound)
	_, err = s.SCIMTokenByHash(ctx, "hash-scim-1")
	wantErr(t, "SCIMTokenByHash(the deleted integration's)", err, storage.ErrNotFound)
	if tok, err := s.SCIMTokenByHash(ctx, "hash-scim-2"); err != nil || tok.IntegrationID != "scim-2" {
		t.Errorf("the other integration's token = %+v, %v", tok, err)
	}
	checkUsers(t, s, "org-1", []storage.User{cat})
	checkUsers(t, s, "org-2", []storage.User{twin})
	grants, err := s.ListGrants(ctx, "org-1")
	noErr(t, "ListGrants", err)
	diff(t, "ListGrants", []storage.Grant{keep}, grants)
	_, err = s.GetGroup(ctx, "org-1", "scim-1", "g-1")
	wantErr(t, "GetGroup(the integration's)", err, storage.ErrNotFound)
	checkGroupGrants(t, s, "org-1", []string{"g-1"}, nil)
	got, err := s.GetOrgGroup(ctx, "org-1", "g-2")
	noErr(t, "GetOrgGroup(plain)", err)
	plain.Members, plain.ModifiedAt = []string{"u-3"}, at(4)
	diff(t, "the plain group its users left", plain, got, equateEmpty)

	// The name is free again, and nothing of the old integration comes back with it.
	noErr(t, "CreateSCIMIntegration(the same name)", s.CreateSCIMIntegration(ctx,
		storage.AuthIntegration{OrgID: "org-1", ID: "scim-3", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(5)},
		storage.SCIMToken{ID: "tok-scim-3", OrgID: "org-1", IntegrationID: "scim-3", Prefix: "gscim_ef", Hash: "hash-scim-3", CreatedAt: at(5)}))
	createUser(t, s, scimUser("org-1", "scim-3", "u-1", "ann@example.com", at(6)))
	userGrants, err := s.UserGrants(ctx, "org-1", "u-1")
	noErr(t, "UserGrants", err)
	diff(t, "UserGrants of a user made again", []storage.Grant(nil), userGrants, equateEmpty)
	_, err = s.DeleteAuthIntegration(ctx, "org-1", "scim-1", at(7))
	wantErr(t, "DeleteAuthIntegration again", err, storage.ErrNotFound)
}

func testSCIMIntegrations(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()

	a, err := s.GetAuthIntegration(ctx, "org-1", "scim-1")
	noErr(t, "GetAuthIntegration", err)
	diff(t, "GetAuthIntegration", storage.AuthIntegration{OrgID: "org-1", ID: "scim-1", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(0)}, a)

	tok, err := s.SCIMTokenByHash(ctx, "hash-scim-2")
	noErr(t, "SCIMTokenByHash", err)
	diff(t, "SCIMTokenByHash", storage.SCIMToken{ID: "tok-scim-2", OrgID: "org-1", IntegrationID: "scim-2", Prefix: "gscim_ab", Hash: "hash-scim-2", CreatedAt: at(0)}, tok)
	_, err = s.SCIMTokenByHash(ctx, "hash-unknown")
	wantErr(t, "SCIMTokenByHash(unknown)", err, storage.ErrNotFound)
	// An API key's hash is not a SCIM token's, nor the other way round.
	noErr(t, "CreateAPIKey", s.CreateAPIKey(ctx, storage.APIKey{ID: "key-1", OrgID: "org-1", Prefix: "gry_", Hash: "api-hash", CreatedAt: at(0)}))
	_, err = s.SCIMTokenByHash(ctx, "api-hash")
	wantErr(t, "SCIMTokenByHash(an API key's hash)", err, storage.ErrNotFound)
	_, err = s.APIKeyByHash(ctx, "hash-scim-1")
	wantErr(t, "APIKeyByHash(a SCIM token's hash)", err, storage.ErrNotFound)

	tests := []struct {
		name  string
		integ storage.AuthIntegration
		token storage.SCIMToken
	}{
		{"name taken", storage.AuthIntegration{OrgID: "org-1", ID: "scim-3", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(1)},
			storage.SCIMToken{ID: "tok-3", OrgID: "org-1", IntegrationID: "scim-3", Hash: "hash-3", CreatedAt: at(1)}},
		{"token hash taken", storage.AuthIntegration{OrgID: "org-1", ID: "scim-4", Name: "fresh", Type: storage.IntegrationSCIM, CreatedAt: at(1)},
			storage.SCIMToken{ID: "tok-4", OrgID: "org-1", IntegrationID: "scim-4", Hash: "hash-scim-1", CreatedAt: at(1)}},
	}
	for _, tt := range tests {
		err := s.CreateSCIMIntegration(ctx, tt.integ, tt.token)
		wantErr(t, "CreateSCIMIntegration("+tt.name+")", err, storage.ErrConflict)
		if tt.token.Hash != "hash-scim-1" {
			_, err = s.SCIMTokenByHash(ctx, tt.token.Hash)
			wantErr(t, "SCIMTokenByHash after "+tt.name, err, storage.ErrNotFound)
		}
		if tt.integ.Name != "okta" {
			_, err = s.GetAuthIntegration(ctx, tt.integ.OrgID, tt.integ.ID)
			wantErr(t, "GetAuthIntegration after "+tt.name, err, storage.ErrNotFound)
		}
	}
	list, err := s.ListAuthIntegrations(ctx, "org-1")
	noErr(t, "ListAuthIntegrations", err)
	if len(list) != 2 {
		t.Errorf("ListAuthIntegrations = %+v, want the two SCIM integrations", list)
	}
}

func testSCIMUsers(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()

	ann := createUser(t, s, scimUser("org-1", "scim-1", "u-3", "Ann@Example.com", at(1)))
	// Users come in the order of their ids, not of their creation.
	var users []storage.User
	for _, id := range []string{"u-5", "u-1", "u-4", "u-2"} {
		users = append(users, createUser(t, s, scimUser("org-1", "scim-1", id, id+"@example.com", at(2))))
	}
	other := createUser(t, s, scimUser("org-1", "scim-2", "u-0", "ann@example.com", at(3)))
	createUser(t, s, scimUser("org-2", "scim-9", "u-3", "ann@example.com", at(3)))

	got, err := s.GetUser(ctx, "org-1", "u-3")
	noErr(t, "GetUser", err)
	diff(t, "GetUser", ann, got)
	list, err := s.ListUsers(ctx, "org-1")
	noErr(t, "ListUsers", err)
	diff(t, "ListUsers ids", []string{"u-3", "u-1", "u-2", "u-4", "u-5", "u-0"}, userIDs(list))

	conflicts := []struct {
		name string
		u    storage.User
		want error
	}{
		{"email taken, in another case", scimUser("org-1", "scim-1", "u-9", "ANN@example.COM", at(4)), storage.ErrConflict},
		{"id taken in the organization", scimUser("org-1", "scim-1", "u-0", "new@example.com", at(4)), storage.ErrConflict},
		{"unknown integration", scimUser("org-1", "scim-8", "u-9", "new@example.com", at(4)), storage.ErrNotFound},
		{"another organization's integration", scimUser("org-1", "scim-9", "u-9", "new@example.com", at(4)), storage.ErrNotFound},
	}
	for _, c := range conflicts {
		wantErr(t, "CreateUser("+c.name+")", s.CreateUser(ctx, c.u), c.want)
	}
	list, err = s.ListUsers(ctx, "org-1")
	noErr(t, "ListUsers", err)
	if len(list) != 6 {
		t.Errorf("after refused creations org-1 has %d users, want 6", len(list))
	}

	byEmail, err := s.UserByEmail(ctx, "org-1", "scim-1", "ann@EXAMPLE.com")
	noErr(t, "UserByEmail", err)
	diff(t, "UserByEmail", ann, byEmail)
	byEmail, err = s.UserByEmail(ctx, "org-1", "scim-2", "ANN@example.com")
	noErr(t, "UserByEmail(scim-2)", err)
	diff(t, "UserByEmail(scim-2)", other, byEmail)
	_, err = s.UserByEmail(ctx, "org-1", "scim-1", "nobody@example.com")
	wantErr(t, "UserByEmail(unknown)", err, storage.ErrNotFound)
	_, err = s.UserByEmail(ctx, "org-2", "scim-1", "ann@example.com")
	wantErr(t, "UserByEmail(another org's integration)", err, storage.ErrNotFound)

	// An imported user has no external id, and an empty one names nobody.
	importUsers(t, s, "org-1", "scim-1", at(3), storage.UserImport{ID: "u-6", Email: "imported@example.com"})
	byExt, err := s.UsersByExternalID(ctx, "org-1", "scim-1", "ext-u-3")
	noErr(t, "UsersByExternalID", err)
	diff(t, "UsersByExternalID", []storage.User{ann}, byExt)
	for _, tc := range []struct{ integ, ext string }{{"scim-1", "EXT-U-3"}, {"scim-2", "ext-u-3"}, {"scim-1", ""}} {
		byExt, err = s.UsersByExternalID(ctx, "org-1", tc.integ, tc.ext)
		noErr(t, "UsersByExternalID", err)
		diff(t, fmt.Sprintf("UsersByExternalID(%s, %q)", tc.integ, tc.ext), []storage.User(nil), byExt, equateEmpty)
	}

	pages := []struct {
		offset, limit int
		want          []string
	}{
		{0, 2, []string{"u-1", "u-2"}},
		{2, 2, []string{"u-3", "u-4"}},
		{4, 2, []string{"u-5", "u-6"}},
		{6, 2, nil},
		{9, 2, nil},
		{1, -1, []string{"u-2", "u-3", "u-4", "u-5", "u-6"}},
		{0, 0, nil},
	}
	for _, p := range pages {
		got, total, err := s.IntegrationUsers(ctx, "org-1", "scim-1", p.offset, p.limit)
		noErr(t, "IntegrationUsers", err)
		diff(t, fmt.Sprintf("IntegrationUsers(%d, %d)", p.offset, p.limit), p.want, userIDs(got), equateEmpty)
		if total != 6 {
			t.Errorf("IntegrationUsers(%d, %d) total = %d, want 6", p.offset, p.limit, total)
		}
	}
	got1, _, err := s.IntegrationUsers(ctx, "org-1", "scim-1", 0, 1)
	noErr(t, "IntegrationUsers", err)
	diff(t, "IntegrationUsers(0, 1)", []storage.User{users[1]}, got1)
	none, total, err := s.IntegrationUsers(ctx, "org-2", "scim-1", 0, -1)
	noErr(t, "IntegrationUsers(another org's integration)", err)
	if len(none) != 0 || total != 0 {
		t.Errorf("IntegrationUsers(another org's integration) = %d users, total %d; want none", len(none), total)
	}
}

func testSCIMUpdateUser(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	ann := createUser(t, s, scimUser("org-1", "scim-1", "u-1", "ann@example.com", at(1)))
	bob := createUser(t, s, scimUser("org-1", "scim-1", "u-2", "bob@example.com", at(1)))

	want := ann
	want.Email, want.First, want.Last, want.Active = "Anne@example.com", "Anne", "Lee", false
	want.ExternalID, want.Attributes, want.ModifiedAt = "ext-new", []byte(`{"title":"Dr"}`), at(5)
	got, err := s.UpdateUser(ctx, "org-1", "scim-1", "u-1", func(u *storage.User) error {
		diff(t, "the user fn is given", ann, *u)
		u.Email, u.First, u.Last, u.Active = want.Email, want.First, want.Last, want.Active
		u.ExternalID, u.Attributes, u.ModifiedAt = want.ExternalID, want.Attributes, want.ModifiedAt
		// What a store keeps whatever fn does.
		u.OrgID, u.ID, u.IntegrationID, u.IntegrationName, u.ImportedAt = "org-2", "u-9", "scim-2", "x", at(9)
		return nil
	})
	noErr(t, "UpdateUser", err)
	diff(t, "UpdateUser", want, got)
	checkUsers(t, s, "org-1", []storage.User{want, bob})
	byEmail, err := s.UserByEmail(ctx, "org-1", "scim-1", "ANNE@example.com")
	noErr(t, "UserByEmail(new email)", err)
	diff(t, "UserByEmail(new email)", want, byEmail)
	_, err = s.UserByEmail(ctx, "org-1", "scim-1", "ann@example.com")
	wantErr(t, "UserByEmail(old email)", err, storage.ErrNotFound)
	byExt, err := s.UsersByExternalID(ctx, "org-1", "scim-1", "ext-new")
	noErr(t, "UsersByExternalID(new)", err)
	diff(t, "UsersByExternalID(new)", []string{"u-1"}, userIDs(byExt))
	byExt, err = s.UsersByExternalID(ctx, "org-1", "scim-1", "ext-u-1")
	noErr(t, "UsersByExternalID(old)", err)
	diff(t, "UsersByExternalID(old)", []string(nil), userIDs(byExt), equateEmpty)
	// The old email is free again.
	createUser(t, s, scimUser("org-1", "scim-1", "u-3", "ann@example.com", at(6)))

	t.Run("refused", func(t *testing.T) {
		fnErr := errors.New("fn says no")
		tests := []struct {
			name, org, integ, id string
			fn                   func(*storage.User) error
			want                 error
		}{
			{"email of another user", "org-1", "scim-1", "u-1", func(u *storage.User) error { u.Email, u.First = "BOB@example.com", "X"; return nil }, storage.ErrConflict},
			{"fn fails", "org-1", "scim-1", "u-1", func(u *storage.User) error { u.First = "X"; return fnErr }, fnErr},
			{"unknown user", "org-1", "scim-1", "u-8", func(u *storage.User) error { return nil }, storage.ErrNotFound},
			{"user of another integration", "org-1", "scim-2", "u-1", func(u *storage.User) error { return nil }, storage.ErrNotFound},
			{"user of another organization", "org-2", "scim-9", "u-1", func(u *storage.User) error { return nil }, storage.ErrNotFound},
		}
		for _, tt := range tests {
			_, err := s.UpdateUser(ctx, tt.org, tt.integ, tt.id, tt.fn)
			wantErr(t, "UpdateUser("+tt.name+")", err, tt.want)
		}
		got, err := s.GetUser(ctx, "org-1", "u-1")
		noErr(t, "GetUser", err)
		diff(t, "the user after refused updates", want, got)
	})

	t.Run("imported user", func(t *testing.T) {
		// A user imported into the integration may be changed through SCIM, and a later import
		// keeps what only SCIM sets.
		imported := importUsers(t, s, "org-1", "scim-2", at(7), storage.UserImport{ID: "u-7", Email: "cy@example.com", First: "Cy"})[0]
		changed, err := s.UpdateUser(ctx, "org-1", "scim-2", "u-7", func(u *storage.User) error {
			u.Active, u.ExternalID, u.Attributes, u.ModifiedAt = false, "ext-7", []byte(`{}`), at(8)
			return nil
		})
		noErr(t, "UpdateUser(imported user)", err)
		want := imported
		want.Active, want.ExternalID, want.Attributes, want.ModifiedAt = false, "ext-7", []byte(`{}`), at(8)
		diff(t, "UpdateUser(imported user)", want, changed)
		want.First, want.ModifiedAt = "Cyrus", at(9)
		again := importUsers(t, s, "org-1", "scim-2", at(9), storage.UserImport{Email: "cy@example.com", First: "Cyrus"})[0]
		diff(t, "ImportUsers after UpdateUser", want, again)

		// A SCIM integration's users keep their SCIM document in Attributes: an import that would
		// replace it with attributes of its own is refused whole, even with an empty map.
		_, err = s.ImportUsers(ctx, "org-1", "scim-2", []storage.UserImport{
			{Email: "new@example.com", First: "N"},
			{Email: "cy@example.com", First: "Cy", Attributes: map[string]string{}},
		}, at(10))
		wantErr(t, "ImportUsers(attributes into a SCIM integration)", err, storage.ErrSCIMAttributes)
		got, err := s.GetUser(ctx, "org-1", "u-7")
		noErr(t, "GetUser after a refused import", err)
		diff(t, "the user after a refused import", want, got)
		_, err = s.UserByEmail(ctx, "org-1", "scim-2", "new@example.com")
		wantErr(t, "UserByEmail(a user of the refused import)", err, storage.ErrNotFound)
	})
}

func testSCIMDeleteUser(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	createResource(t, s, model("org-1", 1, at(0)))
	createResource(t, s, model("org-1", 2, at(0)))
	createResource(t, s, model("org-2", 3, at(0)))
	ann := createUser(t, s, scimUser("org-1", "scim-1", "u-1", "ann@example.com", at(1)))
	bob := createUser(t, s, scimUser("org-1", "scim-1", "u-2", "bob@example.com", at(1)))
	twin := createUser(t, s, scimUser("org-2", "scim-9", "u-1", "ann@example.com", at(1)))
	grant(t, s, "org-1", "u-1", rid(1), at(2))
	grant(t, s, "org-1", "u-1", rid(2), at(2))
	keep := grant(t, s, "org-1", "u-2", rid(1), at(2))
	twinGrant := grant(t, s, "org-2", "u-1", rid(3), at(2))
	g := storage.Group{OrgID: "org-1", ID: "g-1", IntegrationID: "scim-1", DisplayName: "Eng", Members: []string{"u-1", "u-2"},
		MemberDisplays: map[string]string{"u-1": "Ann", "u-2": "Bob"}, CreatedAt: at(3), ModifiedAt: at(3)}
	noErr(t, "CreateGroup", s.CreateGroup(ctx, g))

	for _, tc := range []struct{ name, org, integ, id string }{
		{"unknown user", "org-1", "scim-1", "u-8"},
		{"user of another integration", "org-1", "scim-2", "u-1"},
		{"user of another organization", "org-2", "scim-1", "u-2"},
	} {
		wantErr(t, "DeleteUser("+tc.name+")", s.DeleteUser(ctx, tc.org, tc.integ, tc.id, at(4)), storage.ErrNotFound)
	}
	checkUsers(t, s, "org-1", []storage.User{ann, bob})

	noErr(t, "DeleteUser", s.DeleteUser(ctx, "org-1", "scim-1", "u-1", at(5)))
	checkUsers(t, s, "org-1", []storage.User{bob})
	checkUsers(t, s, "org-2", []storage.User{twin})
	grants, err := s.ListGrants(ctx, "org-1")
	noErr(t, "ListGrants", err)
	diff(t, "ListGrants after DeleteUser", []storage.Grant{keep}, grants)
	grants, err = s.ListGrants(ctx, "org-2")
	noErr(t, "ListGrants(org-2)", err)
	diff(t, "ListGrants(org-2) after DeleteUser in org-1", []storage.Grant{twinGrant}, grants)
	got, err := s.GetGroup(ctx, "org-1", "scim-1", "g-1")
	noErr(t, "GetGroup", err)
	g.Members, g.MemberDisplays, g.ModifiedAt = []string{"u-2"}, map[string]string{"u-2": "Bob"}, at(5)
	diff(t, "the group after DeleteUser, without the user's display", g, got)
	groups, err := s.UserGroups(ctx, "org-1", "u-1")
	noErr(t, "UserGroups", err)
	diff(t, "UserGroups of the deleted user", []string(nil), storage.GroupIDs(groups), equateEmpty)
	_, err = s.UserByEmail(ctx, "org-1", "scim-1", "ann@example.com")
	wantErr(t, "UserByEmail(deleted)", err, storage.ErrNotFound)
	byExt, err := s.UsersByExternalID(ctx, "org-1", "scim-1", "ext-u-1")
	noErr(t, "UsersByExternalID(deleted)", err)
	diff(t, "UsersByExternalID(deleted)", []string(nil), userIDs(byExt), equateEmpty)
	wantErr(t, "DeleteUser again", s.DeleteUser(ctx, "org-1", "scim-1", "u-1", at(6)), storage.ErrNotFound)

	// The email and the id may be used again, and the new user inherits nothing.
	createUser(t, s, scimUser("org-1", "scim-1", "u-1", "ann@example.com", at(7)))
	userGrants, err := s.UserGrants(ctx, "org-1", "u-1")
	noErr(t, "UserGrants", err)
	diff(t, "UserGrants of a user created again", []storage.Grant(nil), userGrants, equateEmpty)
}

func testSCIMGroups(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	for _, id := range []string{"u-1", "u-2", "u-3"} {
		createUser(t, s, scimUser("org-1", "scim-1", id, id+"@example.com", at(1)))
	}
	createUser(t, s, scimUser("org-1", "scim-2", "u-8", "u-8@example.com", at(1)))
	createUser(t, s, scimUser("org-2", "scim-9", "u-9", "u-9@example.com", at(1)))

	group := func(id, name string, members ...string) storage.Group {
		return storage.Group{OrgID: "org-1", ID: id, IntegrationID: "scim-1", DisplayName: name, ExternalID: "ext-" + id,
			Members: members, CreatedAt: at(2), ModifiedAt: at(2)}
	}
	eng := group("g-2", "Engineers", "u-2", "u-1")
	eng.MemberDisplays = map[string]string{"u-2": "u-2@example.com"}
	ops := group("g-1", "Ops")
	noErr(t, "CreateGroup", s.CreateGroup(ctx, eng))
	noErr(t, "CreateGroup", s.CreateGroup(ctx, ops))
	// The same name in another integration is another group.
	entra := storage.Group{OrgID: "org-1", ID: "g-3", IntegrationID: "scim-2", DisplayName: "engineers", Members: []string{"u-8"}, CreatedAt: at(2), ModifiedAt: at(2)}
	noErr(t, "CreateGroup(scim-2)", s.CreateGroup(ctx, entra))

	for _, tc := range []struct {
		name string
		g    storage.Group
		want error
	}{
		{"display name taken, in another case", group("g-4", "ENGINEERS"), storage.ErrConflict},
		{"id taken", storage.Group{OrgID: "org-1", ID: "g-3", IntegrationID: "scim-1", DisplayName: "New", CreatedAt: at(3), ModifiedAt: at(3)}, storage.ErrConflict},
		{"member of another integration", group("g-4", "New", "u-1", "u-8"), storage.ErrUnknownMember},
		{"member of another organization", group("g-4", "New", "u-9"), storage.ErrUnknownMember},
		{"unknown member", group("g-4", "New", "u-7"), storage.ErrUnknownMember},
		{"unknown integration", storage.Group{OrgID: "org-1", ID: "g-4", IntegrationID: "scim-8", DisplayName: "New"}, storage.ErrNotFound},
	} {
		wantErr(t, "CreateGroup("+tc.name+")", s.CreateGroup(ctx, tc.g), tc.want)
	}
	_, err := s.GetGroup(ctx, "org-1", "scim-1", "g-4")
	wantErr(t, "GetGroup(refused)", err, storage.ErrNotFound)

	got, err := s.GetGroup(ctx, "org-1", "scim-1", "g-2")
	noErr(t, "GetGroup", err)
	diff(t, "GetGroup", eng, got, equateEmpty)
	for _, tc := range []struct{ org, integ, id string }{{"org-1", "scim-2", "g-2"}, {"org-2", "scim-1", "g-2"}, {"org-1", "scim-1", "g-9"}} {
		_, err = s.GetGroup(ctx, tc.org, tc.integ, tc.id)
		wantErr(t, fmt.Sprintf("GetGroup(%s, %s, %s)", tc.org, tc.integ, tc.id), err, storage.ErrNotFound)
	}
	got, err = s.GroupByName(ctx, "org-1", "scim-1", "engineers")
	noErr(t, "GroupByName", err)
	diff(t, "GroupByName", eng, got, equateEmpty)
	got, err = s.GroupByName(ctx, "org-1", "scim-2", "Engineers")
	noErr(t, "GroupByName(scim-2)", err)
	diff(t, "GroupByName(scim-2)", entra, got, equateEmpty)
	_, err = s.GroupByName(ctx, "org-2", "scim-1", "Engineers")
	wantErr(t, "GroupByName(another org)", err, storage.ErrNotFound)

	list, total, err := s.IntegrationGroups(ctx, "org-1", "scim-1", 0, -1)
	noErr(t, "IntegrationGroups", err)
	diff(t, "IntegrationGroups", []storage.Group{ops, eng}, list, equateEmpty)
	if total != 2 {
		t.Errorf("IntegrationGroups total = %d, want 2", total)
	}
	list, total, err = s.IntegrationGroups(ctx, "org-1", "scim-1", 1, 5)
	noErr(t, "IntegrationGroups(1, 5)", err)
	diff(t, "IntegrationGroups(1, 5)", []string{"g-2"}, storage.GroupIDs(list))
	if total != 2 {
		t.Errorf("IntegrationGroups(1, 5) total = %d, want 2", total)
	}

	mine, err := s.UserGroups(ctx, "org-1", "u-1")
	noErr(t, "UserGroups", err)
	diff(t, "UserGroups(u-1)", []string{"g-2"}, storage.GroupIDs(mine))

	want := eng
	want.DisplayName, want.ExternalID, want.Members, want.ModifiedAt = "Engineering", "ext-new", []string{"u-1", "u-3"}, at(4)
	want.MemberDisplays = map[string]string{"u-1": "Ann", "u-3": "u.3.$"}
	got, err = s.UpdateGroup(ctx, "org-1", "scim-1", "g-2", func(g *storage.Group) error {
		g.DisplayName, g.ExternalID, g.ModifiedAt = want.DisplayName, want.ExternalID, want.ModifiedAt
		g.Members = []string{"u-1", "u-3"}
		g.MemberDisplays = map[string]string{"u-1": "Ann", "u-3": "u.3.$"}
		g.OrgID, g.ID, g.IntegrationID, g.CreatedAt = "org-2", "g-9", "scim-2", at(9)
		return nil
	})
	noErr(t, "UpdateGroup", err)
	diff(t, "UpdateGroup", want, got)
	got, err = s.GroupByName(ctx, "org-1", "scim-1", "ENGINEERING")
	noErr(t, "GroupByName(new name)", err)
	diff(t, "GroupByName(new name)", want, got)
	_, err = s.GroupByName(ctx, "org-1", "scim-1", "Engineers")
	wantErr(t, "GroupByName(old name)", err, storage.ErrNotFound)
	for user, wantGroups := range map[string][]string{"u-1": {"g-2"}, "u-2": nil, "u-3": {"g-2"}} {
		mine, err := s.UserGroups(ctx, "org-1", user)
		noErr(t, "UserGroups", err)
		diff(t, "UserGroups("+user+") after UpdateGroup", wantGroups, storage.GroupIDs(mine), equateEmpty)
	}
	noErr(t, "CreateGroup(the old name, free again)", s.CreateGroup(ctx, group("g-5", "engineers")))

	fnErr := errors.New("fn says no")
	for _, tc := range []struct {
		name, org, integ, id string
		fn                   func(*storage.Group) error
		want                 error
	}{
		{"display name taken", "org-1", "scim-1", "g-2", func(g *storage.Group) error { g.DisplayName = "OPS"; return nil }, storage.ErrConflict},
		{"member of another integration", "org-1", "scim-1", "g-2", func(g *storage.Group) error { g.Members = append(g.Members, "u-8"); return nil }, storage.ErrUnknownMember},
		{"fn fails", "org-1", "scim-1", "g-2", func(g *storage.Group) error { g.Members = nil; return fnErr }, fnErr},
		{"group of another integration", "org-1", "scim-2", "g-2", func(g *storage.Group) error { return nil }, storage.ErrNotFound},
		{"group of another organization", "org-2", "scim-9", "g-2", func(g *storage.Group) error { return nil }, storage.ErrNotFound},
	} {
		_, err := s.UpdateGroup(ctx, tc.org, tc.integ, tc.id, tc.fn)
		wantErr(t, "UpdateGroup("+tc.name+")", err, tc.want)
	}
	got, err = s.GetGroup(ctx, "org-1", "scim-1", "g-2")
	noErr(t, "GetGroup", err)
	diff(t, "the group after refused updates", want, got)

	wantErr(t, "DeleteGroup(another integration's)", s.DeleteGroup(ctx, "org-1", "scim-2", "g-2"), storage.ErrNotFound)
	noErr(t, "DeleteGroup", s.DeleteGroup(ctx, "org-1", "scim-1", "g-2"))
	wantErr(t, "DeleteGroup again", s.DeleteGroup(ctx, "org-1", "scim-1", "g-2"), storage.ErrNotFound)
	_, err = s.GetGroup(ctx, "org-1", "scim-1", "g-2")
	wantErr(t, "GetGroup(deleted)", err, storage.ErrNotFound)
	mine, err = s.UserGroups(ctx, "org-1", "u-1")
	noErr(t, "UserGroups", err)
	diff(t, "UserGroups(u-1) after DeleteGroup", []string(nil), storage.GroupIDs(mine), equateEmpty)
	noErr(t, "CreateGroup(the deleted group's name)", s.CreateGroup(ctx, group("g-6", "Engineering")))
}

// testSCIMConcurrentUpdates checks that read-modify-write updates racing on one record all
// land: a store that wrote back what it read without checking would lose some.
func testSCIMConcurrentUpdates(t *testing.T, open opener) {
	s := open(t)
	withSCIM(t, s)
	ctx := t.Context()
	createUser(t, s, scimUser("org-1", "scim-1", "u-0", "counter@example.com", at(1)))
	const writers = 5
	var members []string
	for i := 1; i <= writers; i++ {
		id := "u-" + strconv.Itoa(i)
		createUser(t, s, scimUser("org-1", "scim-1", id, id+"@example.com", at(1)))
		members = append(members, id)
	}
	noErr(t, "CreateGroup", s.CreateGroup(ctx, storage.Group{OrgID: "org-1", ID: "g-1", IntegrationID: "scim-1", DisplayName: "All", CreatedAt: at(1), ModifiedAt: at(1)}))

	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for _, m := range members {
		wg.Go(func() {
			_, err := s.UpdateUser(ctx, "org-1", "scim-1", "u-0", func(u *storage.User) error {
				n, _ := strconv.Atoi(u.First)
				u.First = strconv.Itoa(n + 1)
				return nil
			})
			errs <- err
		})
		wg.Go(func() {
			_, err := s.UpdateGroup(ctx, "org-1", "scim-1", "g-1", func(g *storage.Group) error {
				g.Members = append(g.Members, m)
				return nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, "concurrent update", err)
	}
	u, err := s.GetUser(ctx, "org-1", "u-0")
	noErr(t, "GetUser", err)
	if u.First != strconv.Itoa(writers) {
		t.Errorf("after %d concurrent increments the counter is %s", writers, u.First)
	}
	g, err := s.GetGroup(ctx, "org-1", "scim-1", "g-1")
	noErr(t, "GetGroup", err)
	if len(g.Members) != writers {
		t.Errorf("after %d concurrent additions the group has members %v", writers, g.Members)
	}
}
