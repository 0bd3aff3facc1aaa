package bolt

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// TestGrantValues checks how grants are stored: a grant written now holds only its times, its
// ids being in its key, and a grant written by an earlier version, with its ids in the value
// too, reads, changes and goes as before.
func TestGrantValues(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	const org, resource = "org-1", "00000000-0000-4000-8000-000000000001"
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-1", Name: "directory", Type: "import"}))
	_, err = s.ImportUsers(ctx, org, "int-1", []storage.UserImport{{ID: "new", Email: "new@x"}, {ID: "old", Email: "old@x"}}, at)
	must(err)
	must(s.CreateResource(ctx, storage.Resource{OrgID: org, ID: resource, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m", CreatedAt: at}))
	must(storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "new", ResourceID: resource, CreatedAt: at}))
	// What versions before this one wrote, through a loader or Grant: the ids in the value.
	old := `{"org_id":"org-1","user_id":"old","resource_id":"` + resource + `","created_at":1767225600000,"expires_at":1893456000000}`
	must(s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketGrantsByResource).Put(key(org, resource, "old"), []byte("old")); err != nil {
			return err
		}
		return tx.Bucket(bucketGrants).Put(key(org, "old", resource), []byte(old))
	}))

	must(s.journal.Settle()) // what follows reads the data file itself
	must(s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketGrants).Get(key(org, "new", resource))
		if want := `{"created_at":1767225600000}`; string(v) != want {
			t.Errorf("stored value of a new grant = %s, want %s", v, want)
		}
		return nil
	}))

	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	wantOld := storage.Grant{OrgID: org, UserID: "old", ResourceID: resource, CreatedAt: at, ExpiresAt: expires}
	wantNew := storage.Grant{OrgID: org, UserID: "new", ResourceID: resource, CreatedAt: at}
	list, err := s.ListGrants(ctx, org)
	must(err)
	if want := []storage.Grant{wantNew, wantOld}; !slices.Equal(list, want) {
		t.Errorf("ListGrants = %+v, want %+v", list, want)
	}
	byResource, err := s.ResourceGrants(ctx, org, resource)
	must(err)
	if want := []storage.Grant{wantNew, wantOld}; !slices.Equal(byResource, want) {
		t.Errorf("ResourceGrants = %+v, want %+v", byResource, want)
	}

	// Changing the old grant's expiry reports it as it was, and writes it in the new form.
	prev, err := s.SetGrant(ctx, storage.Grant{OrgID: org, UserID: "old", ResourceID: resource, CreatedAt: at.Add(time.Hour)})
	must(err)
	if prev == nil || *prev != wantOld {
		t.Errorf("SetGrant over the old grant: previous = %+v, want %+v", prev, wantOld)
	}
	mine, err := s.UserGrants(ctx, org, "old")
	must(err)
	if want := []storage.Grant{{OrgID: org, UserID: "old", ResourceID: resource, CreatedAt: at}}; !slices.Equal(mine, want) {
		t.Errorf("UserGrants after the change = %+v, want %+v", mine, want)
	}
	must(s.journal.Settle())
	must(s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketGrants).Get(key(org, "old", resource)); bytes.Contains(v, []byte("user_id")) {
			t.Errorf("stored value of the changed grant = %s, want the times alone", v)
		}
		return nil
	}))

	removed, err := s.RevokeGrant(ctx, org, "old", resource)
	must(err)
	if !removed {
		t.Error("RevokeGrant of the old grant: removed = false")
	}
	if mine, err = s.UserGrants(ctx, org, "old"); err != nil || len(mine) != 0 {
		t.Errorf("UserGrants after the revoke = %+v, %v; want none", mine, err)
	}
}

// TestReadGrantRefusesForeignKeys checks that a grant under a key that does not hold three ids
// is an error, not a grant with ids made up.
func TestReadGrantRefusesForeignKeys(t *testing.T) {
	for _, k := range [][]byte{key("org", "user"), key("org", "user", "resource", "more"), []byte("org\x00user\x00resource")} {
		if r, err := readGrant(k, []byte(`{"created_at":1}`)); err == nil {
			t.Errorf("readGrant(%q) = %+v, want an error", k, r)
		}
	}
}
