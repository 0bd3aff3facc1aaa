package storagetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/grantry/grantry/storage"
)

// LoaderOpener returns a new, empty store, registering its cleanup on t, and a function that
// gives a storage.Loader of that store writing every batch records (the store's default when
// batch ≤ 0).
type LoaderOpener = func(t *testing.T) (storage.Store, func(batch int) storage.Loader)

// RunLoader checks a store's storage.Loader: a set loaded through it (integrations, resources
// of every kind, users imported and provisioned, grants that expire and that do not, in two
// organizations) reads back through the store's normal methods exactly as the same set written
// through them does, and the indexes the normal methods keep behave alike afterwards.
func RunLoader(t *testing.T, open LoaderOpener) {
	for _, tc := range []struct {
		name  string
		batch int
	}{
		{"OneRecordABatch", 1},
		{"GrantsApartFromTheirUsers", 4},
		{"DefaultBatch", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newLoadSet()
			want, _ := open(t)
			set.write(t, want)
			got, loader := open(t)
			set.load(t, loader(tc.batch))
			diff(t, "what the loaded store answers, against one written record by record", readLoadSet(t, want, set), readLoadSet(t, got, set), equateEmpty)
			checkLoadedIndexes(t, want, got, set)
		})
	}
}

// loadSet is what RunLoader loads.
type loadSet struct {
	integrations []storage.AuthIntegration
	resources    []storage.Resource
	imported     []storage.User // as ImportUsers stores them: active, ImportedAt = ModifiedAt
	provisioned  []storage.User // as CreateUser stores them
	grants       []storage.Grant
}

func newLoadSet() loadSet {
	var set loadSet
	for _, org := range []string{"org-1", "org-2"} {
		set.integrations = append(set.integrations,
			storage.AuthIntegration{OrgID: org, ID: "int-" + org, Name: "directory", Metadata: `{"source":"csv"}`, Type: storage.IntegrationImport, CreatedAt: at(0)},
			storage.AuthIntegration{OrgID: org, ID: "scim-" + org, Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: at(1)})
	}
	secret := []byte{0x00, 's', 0xff}
	set.resources = []storage.Resource{
		model("org-1", 1, at(1)),
		{OrgID: "org-1", ID: rid(2), Kind: storage.KindFunction, Source: storage.SourceCustom, Name: "lookup", Description: "finds things", CreatedAt: at(2)},
		providerResource("org-1", 3, secret),
		{OrgID: "org-1", ID: rid(4), Kind: storage.KindModel, Source: "openai", Name: "gpt", Metadata: map[string]string{"a.b": "1", "$c": "2"}, Secret: secret, CreatedAt: at(4)},
		{OrgID: "org-1", ID: rid(5), Kind: storage.KindDataset, Source: storage.SourceCustom, Name: "sales", Metadata: map[string]string{}, CreatedAt: at(4)},
		model("org-2", 9, at(1)),
	}
	for i, id := range []string{"u-3", "u-1", "u-2"} {
		set.imported = append(set.imported, storage.User{
			OrgID: "org-1", ID: id, Email: fmt.Sprintf("User-%d@Example.com", i), First: "F" + id, Last: "L" + id, Active: true,
			IntegrationID: "int-org-1", IntegrationName: "directory", ImportedAt: at(5), ModifiedAt: at(5),
		})
	}
	set.imported = append(set.imported, storage.User{
		OrgID: "org-2", ID: "u-1", Email: "u-1@example.com", Active: true,
		IntegrationID: "int-org-2", IntegrationName: "directory", ImportedAt: at(6), ModifiedAt: at(6),
	})
	for _, id := range []string{"s-1", "s-2"} {
		u := scimUser("org-1", "scim-org-1", id, id+"@example.com", at(7))
		u.IntegrationName = "okta"
		set.provisioned = append(set.provisioned, u)
	}
	set.provisioned[1].Active, set.provisioned[1].ModifiedAt = false, at(8)
	grant := func(org, user string, n, created, expires int) {
		g := storage.Grant{OrgID: org, UserID: user, ResourceID: rid(n), CreatedAt: at(created)}
		if expires > 0 {
			g.ExpiresAt = at(expires)
		}
		set.grants = append(set.grants, g)
	}
	grant("org-1", "u-1", 1, 10, 0)
	grant("org-1", "u-1", 2, 11, 100)
	grant("org-1", "u-1", 3, 9, 0)
	grant("org-1", "u-2", 1, 10, 50)
	grant("org-1", "s-1", 4, 10, 0)
	grant("org-1", "s-2", 5, 10, 60)
	grant("org-2", "u-1", 9, 10, 0)
	return set
}

// write fills s through the store's normal methods.
func (set loadSet) write(t *testing.T, s storage.Store) {
	t.Helper()
	ctx := t.Context()
	for _, a := range set.integrations {
		noErr(t, "CreateAuthIntegration", s.CreateAuthIntegration(ctx, a))
	}
	for _, r := range set.resources {
		createResource(t, s, r)
	}
	for _, u := range set.imported {
		importUsers(t, s, u.OrgID, u.IntegrationID, u.ImportedAt, storage.UserImport{ID: u.ID, Email: u.Email, First: u.First, Last: u.Last})
	}
	for _, u := range set.provisioned {
		noErr(t, "CreateUser", s.CreateUser(ctx, u))
	}
	for _, g := range set.grants {
		_, err := s.SetGrant(ctx, g)
		noErr(t, "SetGrant", err)
	}
}

// load fills a store through l.
func (set loadSet) load(t *testing.T, l storage.Loader) {
	t.Helper()
	ctx := t.Context()
	for _, a := range set.integrations {
		noErr(t, "AddIntegration", l.AddIntegration(ctx, a))
	}
	for _, r := range set.resources {
		noErr(t, "AddResource", l.AddResource(ctx, r))
	}
	for _, u := range slices.Concat(set.imported, set.provisioned) {
		noErr(t, "AddUser", l.AddUser(ctx, u))
	}
	for _, g := range set.grants {
		noErr(t, "AddGrant", l.AddGrant(ctx, g))
	}
	noErr(t, "Flush", l.Flush(ctx))
}

// loadedView is everything RunLoader reads of a store through its normal methods.
type loadedView struct {
	Integrations   map[string][]storage.AuthIntegration
	Resources      map[string][]storage.Resource // by organization, and by organization and kind
	ResourceByID   map[string]storage.Resource
	ResourceByName map[string]storage.Resource
	Users          map[string][]storage.User // by organization, and by integration
	UserByID       map[string]storage.User
	UserByEmail    map[string]storage.User // looked up in another letter case
	ByExternalID   map[string][]storage.User
	Grants         map[string][]storage.Grant // by organization, by user and by resource
	Scanned        []storage.ScannedUser
}

func readLoadSet(t *testing.T, s storage.Store, set loadSet) loadedView {
	t.Helper()
	ctx := t.Context()
	v := loadedView{
		Integrations: map[string][]storage.AuthIntegration{}, Resources: map[string][]storage.Resource{},
		ResourceByID: map[string]storage.Resource{}, ResourceByName: map[string]storage.Resource{},
		Users: map[string][]storage.User{}, UserByID: map[string]storage.User{}, UserByEmail: map[string]storage.User{},
		ByExternalID: map[string][]storage.User{}, Grants: map[string][]storage.Grant{},
	}
	var err error
	for _, org := range []string{"org-1", "org-2"} {
		v.Integrations[org], err = s.ListAuthIntegrations(ctx, org)
		noErr(t, "ListAuthIntegrations", err)
		for _, kind := range []storage.Kind{"", storage.KindModel, storage.KindFunction, storage.KindDataset} {
			v.Resources[org+"/"+string(kind)], err = s.ListResources(ctx, org, kind)
			noErr(t, "ListResources", err)
		}
		v.Users[org], err = s.ListUsers(ctx, org)
		noErr(t, "ListUsers", err)
		v.Grants[org], err = s.ListGrants(ctx, org)
		noErr(t, "ListGrants", err)
	}
	for _, a := range set.integrations {
		users, total, err := s.IntegrationUsers(ctx, a.OrgID, a.ID, 0, -1)
		noErr(t, "IntegrationUsers", err)
		v.Users[a.OrgID+"/"+a.ID] = users
		if total != len(users) {
			t.Errorf("IntegrationUsers(%s, %s): total %d for %d users", a.OrgID, a.ID, total, len(users))
		}
	}
	for _, r := range set.resources {
		v.ResourceByID[r.OrgID+"/"+r.ID], err = s.GetResource(ctx, r.OrgID, r.ID)
		noErr(t, "GetResource", err)
		v.ResourceByName[r.OrgID+"/"+r.ID], err = s.ResourceByName(ctx, r.OrgID, r.Kind, r.Source, r.Name)
		noErr(t, "ResourceByName", err)
		v.Grants[r.OrgID+"/resource/"+r.ID], err = s.ResourceGrants(ctx, r.OrgID, r.ID)
		noErr(t, "ResourceGrants", err)
	}
	for _, u := range slices.Concat(set.imported, set.provisioned) {
		k := u.OrgID + "/" + u.ID
		v.UserByID[k], err = s.GetUser(ctx, u.OrgID, u.ID)
		noErr(t, "GetUser", err)
		v.UserByEmail[k], err = s.UserByEmail(ctx, u.OrgID, u.IntegrationID, swapCase(u.Email))
		noErr(t, "UserByEmail", err)
		if u.ExternalID != "" {
			v.ByExternalID[k], err = s.UsersByExternalID(ctx, u.OrgID, u.IntegrationID, u.ExternalID)
			noErr(t, "UsersByExternalID", err)
		}
		v.Grants[k], err = s.UserGrants(ctx, u.OrgID, u.ID)
		noErr(t, "UserGrants", err)
	}
	noErr(t, "ScanUsers", s.ScanUsers(ctx, func(u storage.ScannedUser) error {
		u.Groups, u.Grants = slices.Clone(u.Groups), slices.Clone(u.Grants)
		v.Scanned = append(v.Scanned, u)
		return nil
	}))
	if len(v.UserByID) != 6 || len(v.Grants["org-1"]) != 6 || len(v.Resources["org-1/"]) != 5 {
		t.Errorf("%d users, %d grants and %d resources of org-1 read: the set is not the one described",
			len(v.UserByID), len(v.Grants["org-1"]), len(v.Resources["org-1/"]))
	}
	return v
}

// swapCase turns an email's upper case letters into lower case ones and back.
func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// checkLoadedIndexes checks that the loaded store's indexes behave as those the normal methods
// keep: taken names and emails conflict, an import matches a loaded user by email, deleting a
// resource takes its grants, and expiring grants expire; each compared with the store written
// record by record.
func checkLoadedIndexes(t *testing.T, want, got storage.Store, set loadSet) {
	t.Helper()
	ctx := t.Context()
	r, a, u := set.resources[3], set.integrations[0], set.provisioned[0]
	for name, s := range map[string]storage.Store{"loaded": got, "written": want} {
		taken := storage.Resource{OrgID: r.OrgID, ID: rid(99), Kind: r.Kind, Source: r.Source, Name: r.Name, CreatedAt: at(20)}
		wantErr(t, name+": CreateResource with a taken name", s.CreateResource(ctx, taken), storage.ErrConflict)
		wantErr(t, name+": CreateAuthIntegration with a taken name",
			s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: a.OrgID, ID: "int-new", Name: a.Name, CreatedAt: at(20)}), storage.ErrConflict)
		dup := u
		dup.ID, dup.Email = "s-new", swapCase(u.Email)
		wantErr(t, name+": CreateUser with a taken email", s.CreateUser(ctx, dup), storage.ErrConflict)
		imported := importUsers(t, s, "org-1", "int-org-1", at(20), storage.UserImport{Email: swapCase(set.imported[1].Email), First: "New"})
		if imported[0].ID != set.imported[1].ID {
			t.Errorf("%s: an import of a stored user's email made user %s, want it to match %s", name, imported[0].ID, set.imported[1].ID)
		}
		noErr(t, name+": DeleteResource", s.DeleteResource(ctx, "org-1", rid(1)))
	}
	for _, org := range []string{"org-1", "org-2"} {
		w, err := want.ListGrants(ctx, org)
		noErr(t, "ListGrants", err)
		g, err := got.ListGrants(ctx, org)
		noErr(t, "ListGrants", err)
		diff(t, "grants of "+org+" after deleting a resource", w, g, equateEmpty)
	}
	// By at(60) the grant of rid(5) has expired (rid(1)'s went with the resource).
	w, err := want.DeleteExpiredGrants(ctx, at(60))
	noErr(t, "DeleteExpiredGrants", err)
	g, err := got.DeleteExpiredGrants(ctx, at(60))
	noErr(t, "DeleteExpiredGrants", err)
	diff(t, "DeleteExpiredGrants of the loaded store", w, g, equateEmpty)
	if len(g.Users) != 1 {
		t.Errorf("DeleteExpiredGrants removed %d grants of the loaded store, want 1", len(g.Users))
	}
}
