package mongo

import (
	"testing"

	"github.com/grantry/grantry/storage"
)

// TestOpenExistingDatabase opens a second store on a database that already has its indexes and
// data, as a restart or a second replica does, and finds the first one's data.
func TestOpenExistingDatabase(t *testing.T) {
	db := dbName(t.Name(), 0)
	first, _ := openStore(t, ferretURI, db)
	if err := first.CreateOrg(t.Context(), storage.Org{ID: "o1", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	second, _ := openStore(t, ferretURI, db)
	if org, err := second.OrgByName(t.Context(), "acme"); err != nil || org.ID != "o1" {
		t.Errorf("second store: OrgByName = %+v, %v", org, err)
	}
	// The unique indexes still hold across both.
	if err := second.CreateOrg(t.Context(), storage.Org{ID: "o2", Name: "acme"}); err == nil {
		t.Error("a duplicate name was accepted through the second store")
	}
}
