package mongo

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/storagetest"
)

func TestLoader(t *testing.T) {
	var n atomic.Int64
	storagetest.RunLoader(t, func(t *testing.T) (storage.Store, func(int) storage.Loader) {
		s, _ := openStore(t, ferretURI, dbName(t.Name(), n.Add(1)))
		return s, func(batch int) storage.Loader { return s.NewLoader(batch) }
	})
}

// TestLoaderWritesTheStoresDocuments checks the documents themselves: those a Loader writes are
// field for field those the store's methods write, derived fields (the users' email key, an
// absent expiry) included.
func TestLoaderWritesTheStoresDocuments(t *testing.T) {
	written, wdb := openStore(t, ferretURI, dbName(t.Name(), 1))
	loaded, ldb := openStore(t, ferretURI, dbName(t.Name(), 2))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	integ := storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "dir", Metadata: "m", Type: storage.IntegrationImport, CreatedAt: now}
	scim := storage.AuthIntegration{OrgID: "org-1", ID: "scim/1", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: now}
	res := storage.Resource{OrgID: "org-1", ID: "res-1", Kind: storage.KindDataset, Source: "pinecone", Name: "idx",
		Metadata: map[string]string{"a.b": "1"}, Secret: []byte("\x00sealed"), CreatedAt: now}
	imported := storage.User{OrgID: "org-1", ID: "u-1", Email: "Ann@Example.com", First: "Ann", Last: "A", Active: true,
		IntegrationID: "int-1", IntegrationName: "dir", ImportedAt: now, ModifiedAt: now}
	provisioned := storage.User{OrgID: "org-1", ID: "u/2", Email: "bob@example.com", First: "Bob", IntegrationID: "scim/1",
		IntegrationName: "okta", ImportedAt: now, ModifiedAt: now.Add(time.Second), ExternalID: "ext-2", Attributes: []byte(`{"x":1}`)}
	grants := []storage.Grant{
		{OrgID: "org-1", UserID: "u-1", ResourceID: "res-1", CreatedAt: now},
		{OrgID: "org-1", UserID: "u/2", ResourceID: "res-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	}

	must(t, written.CreateAuthIntegration(ctx, integ))
	must(t, written.CreateAuthIntegration(ctx, scim))
	must(t, written.CreateResource(ctx, res))
	_, err := written.ImportUsers(ctx, "org-1", "int-1", []storage.UserImport{{ID: "u-1", Email: imported.Email, First: "Ann", Last: "A"}}, now)
	must(t, err)
	must(t, written.CreateUser(ctx, provisioned))
	for _, g := range grants {
		_, err := written.SetGrant(ctx, g)
		must(t, err)
	}

	l := loaded.NewLoader(0)
	must(t, l.AddIntegration(ctx, integ))
	must(t, l.AddIntegration(ctx, scim))
	must(t, l.AddResource(ctx, res))
	must(t, l.AddUser(ctx, imported))
	must(t, l.AddUser(ctx, provisioned))
	for _, g := range grants {
		must(t, l.AddGrant(ctx, g))
	}
	must(t, l.Flush(ctx))

	for _, col := range []string{colAuthIntegrations, colResources, colUsers, colGrants} {
		want, got := rawDocuments(t, wdb.Collection(col)), rawDocuments(t, ldb.Collection(col))
		if len(want) == 0 {
			t.Errorf("%s: no documents written", col)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: loaded documents differ from those the store writes (-want +got):\n%s", col, d)
		}
	}
}

// rawDocuments returns every document of col, ordered by _id, as extended JSON.
func rawDocuments(tb testing.TB, col *mongo.Collection) []string {
	tb.Helper()
	cur, err := col.Find(tb.Context(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	must(tb, err)
	var docs []bson.Raw
	must(tb, cur.All(tb.Context(), &docs))
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.String()
	}
	return out
}

// TestLoaderTouchesAndConflicts checks that Flush sets a new revision of each organization it
// wrote to, so that other processes drop what they cached of it, and that the unique indexes
// refuse a taken id as the store's methods do.
func TestLoaderTouchesAndConflicts(t *testing.T) {
	s, db := openStore(t, ferretURI, dbName(t.Name(), 0))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	revisions := func() map[string]string {
		cur, err := db.Collection(colRevisions).Find(ctx, bson.D{})
		must(t, err)
		var docs []struct {
			OrgID string `bson:"_id"`
			Rev   string `bson:"rev"`
		}
		must(t, cur.All(ctx, &docs))
		out := map[string]string{}
		for _, d := range docs {
			out[d.OrgID] = d.Rev
		}
		return out
	}

	l := s.NewLoader(0)
	for _, org := range []string{"org-1", "org-2"} {
		must(t, l.AddIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-1", Name: "dir", CreatedAt: now}))
	}
	if len(revisions()) != 0 {
		t.Fatal("revisions set before Flush")
	}
	must(t, l.Flush(ctx))
	first := revisions()
	if len(first) != 2 || first["org-1"] == "" || first["org-2"] == "" {
		t.Fatalf("revisions after Flush = %v, want one of org-1 and one of org-2", first)
	}

	must(t, l.AddUser(ctx, storage.User{OrgID: "org-1", ID: "u-1", Email: "a@example.com", IntegrationID: "int-1", ImportedAt: now, ModifiedAt: now}))
	must(t, l.Flush(ctx))
	second := revisions()
	if second["org-1"] == first["org-1"] || second["org-2"] != first["org-2"] {
		t.Errorf("revisions after a Flush of org-1 = %v, were %v: want org-1's alone to change", second, first)
	}

	for i, u := range []storage.User{
		{OrgID: "org-1", ID: "u-1", Email: "other@example.com", IntegrationID: "int-1"},
		{OrgID: "org-1", ID: "u-2", Email: "A@example.com", IntegrationID: "int-1"},
	} {
		must(t, l.AddUser(ctx, u))
		if err := l.Flush(ctx); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("Flush of taken user %d: error = %v, want ErrConflict", i, err)
		}
		l = s.NewLoader(0) // a Loader whose Flush failed is of no further use
	}
	if users, err := s.ListUsers(ctx, "org-1"); err != nil || len(users) != 1 {
		t.Errorf("ListUsers after refused loads = %v, %v; want the one user", users, err)
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		k    string
		want []string
		ok   bool
	}{
		{"org/g-1", []string{"org", "g-1"}, true},
		{key("o/1", "a%2Fb", "%"), []string{"o/1", "a%2Fb", "%"}, true},
		{"", []string{""}, true},
		{"org/%41", nil, false},
		{"org/a%2", nil, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.k), func(t *testing.T) {
			got, ok := splitKey(tc.k)
			if ok != tc.ok || (ok && !cmp.Equal(got, tc.want)) {
				t.Errorf("splitKey(%q) = %q, %v; want %q, %v", tc.k, got, ok, tc.want, tc.ok)
			}
		})
	}
}
