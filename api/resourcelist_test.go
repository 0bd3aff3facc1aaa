package api

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// TestResourceList: a user's resource_list holds their own grants in the order they were given,
// each with its resource's name, without those expired or whose resource was deleted, read the
// same from the store (the cache off, or a resource not yet known to it) and from the cache.
func TestResourceList(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	store, id := adaStore(t, adaNow) // grants 0, 1 (expires later), 2 (expired), 5 (deleted); 3 through a group
	must := fatalOn(t)
	// Later grants come later, whatever their ids: 4 before 0 would be id order.
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(4), CreatedAt: adaNow.Add(time.Second)}))
	want := []resourceRef{{id(0), "m0"}, {id(1), "m1"}, {id(4), "m4"}}
	// A grant of a resource deleted since it was read, which the store's own deletion (of 5)
	// never leaves behind.
	gone := grantsAlso{store, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(6), CreatedAt: adaNow}}
	for _, entries := range []int{-1, 0} { // the cache off, and on (DefaultCacheEntries)
		s := New(Config{Store: gone, CacheEntries: entries, Now: func() time.Time { return adaNow }})
		for read := range 2 { // with the cache on, the second read is the cache's
			got, err := s.resourceList(ctx, org, "ada")
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("cache entries %d, read %d: resourceList = %v, %v; want %v", entries, read, got, err, want)
			}
		}
	}
}

// grantsAlso is a store whose UserGrants also gives grant, first.
type grantsAlso struct {
	storage.Store
	grant storage.Grant
}

func (s grantsAlso) UserGrants(ctx context.Context, orgID, userID string) ([]storage.Grant, error) {
	gs, err := s.Store.UserGrants(ctx, orgID, userID)
	return append([]storage.Grant{s.grant}, gs...), err
}

// BenchmarkResourceList is remove_from_user's answer past the revoke: the resource_list of a
// user of 50 grants, from the embedded store and the cached resources.
func BenchmarkResourceList(b *testing.B) {
	const org = "org-1"
	ctx := context.Background()
	store := bolttest.Open(b)
	must := fatalOn(b)
	must(store.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: adaNow}))
	must(store.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int", Name: "hr", Type: "import", CreatedAt: adaNow}))
	_, err := store.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "ada", Email: "ada@x"}}, adaNow)
	must(err)
	for i := range 100 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		must(store.CreateResource(ctx, storage.Resource{OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("model-", i), CreatedAt: adaNow}))
		if i%2 == 0 {
			must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id, CreatedAt: adaNow.Add(time.Duration(i) * time.Second)}))
		}
	}
	s := New(Config{Store: store, Now: func() time.Time { return adaNow }})
	b.ReportAllocs()
	for b.Loop() {
		if refs, err := s.resourceList(ctx, org, "ada"); err != nil || len(refs) != 50 {
			b.Fatalf("resourceList = %d refs, %v; want 50", len(refs), err)
		}
	}
}
