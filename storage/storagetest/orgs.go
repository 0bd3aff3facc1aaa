package storagetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/grantry/grantry/storage"
)

func testOrgs(t *testing.T, open opener) {
	t.Run("CreateGet", func(t *testing.T) {
		s := open(t)
		want := createOrg(t, s, "org-1", "Acme Corp", at(0))
		got, err := s.GetOrg(t.Context(), "org-1")
		noErr(t, "GetOrg", err)
		diff(t, "GetOrg", want, got)
		got, err = s.OrgByName(t.Context(), "Acme Corp")
		noErr(t, "OrgByName", err)
		diff(t, "OrgByName", want, got)
	})

	t.Run("NotFound", func(t *testing.T) {
		s := open(t)
		createOrg(t, s, "org-1", "Acme", at(0))
		_, err := s.GetOrg(t.Context(), "org-2")
		wantErr(t, "GetOrg(unknown)", err, storage.ErrNotFound)
		_, err = s.OrgByName(t.Context(), "Other")
		wantErr(t, "OrgByName(unknown)", err, storage.ErrNotFound)
		// The name must match exactly: organization names are not case-folded.
		_, err = s.OrgByName(t.Context(), "acme")
		wantErr(t, "OrgByName(other case)", err, storage.ErrNotFound)
	})

	t.Run("Conflict", func(t *testing.T) {
		tests := []struct {
			name string
			org  storage.Org
		}{
			{"same id", storage.Org{ID: "org-1", Name: "Other", CreatedAt: at(1)}},
			{"same name", storage.Org{ID: "org-2", Name: "Acme", CreatedAt: at(1)}},
			{"same id and name", storage.Org{ID: "org-1", Name: "Acme", CreatedAt: at(1)}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				first := createOrg(t, s, "org-1", "Acme", at(0))
				wantErr(t, "CreateOrg", s.CreateOrg(t.Context(), tt.org), storage.ErrConflict)
				list, err := s.ListOrgs(t.Context())
				noErr(t, "ListOrgs", err)
				diff(t, "ListOrgs after the conflict", []storage.Org{first}, list)
				_, err = s.OrgByName(t.Context(), "Other")
				wantErr(t, "OrgByName of the rejected name", err, storage.ErrNotFound)
			})
		}
	})

	t.Run("ListOrder", func(t *testing.T) {
		s := open(t)
		list, err := s.ListOrgs(t.Context())
		noErr(t, "ListOrgs(empty store)", err)
		diff(t, "ListOrgs(empty store)", []storage.Org(nil), list, equateEmpty)

		// Created out of order; ties on CreatedAt are broken by ID, and one millisecond counts.
		c := createOrg(t, s, "org-c", "c", at(1))
		a := createOrg(t, s, "org-a", "a", at(2))
		b := createOrg(t, s, "org-b", "b", at(1))
		d := createOrg(t, s, "org-d", "d", ms(0, 1))
		e := createOrg(t, s, "org-e", "e", at(0))
		list, err = s.ListOrgs(t.Context())
		noErr(t, "ListOrgs", err)
		diff(t, "ListOrgs", []storage.Org{e, d, b, c, a}, list)
	})
}

// hash returns a distinct lowercase hex SHA-256-shaped string for n.
func hash(n int) string { return fmt.Sprintf("%064x", 0xab00+n) }

func testAPIKeys(t *testing.T, open opener) {
	key := func(id, org string, n int) storage.APIKey {
		return storage.APIKey{ID: id, OrgID: org, Prefix: fmt.Sprintf("gry_%d", n), Hash: hash(n), CreatedAt: at(n)}
	}
	createKey := func(tb testing.TB, s storage.Store, k storage.APIKey) storage.APIKey {
		tb.Helper()
		noErr(tb, "CreateAPIKey("+k.ID+")", s.CreateAPIKey(tb.Context(), k))
		return k
	}
	count := func(tb testing.TB, s storage.Store, want int) {
		tb.Helper()
		n, err := s.CountAPIKeys(tb.Context())
		noErr(tb, "CountAPIKeys", err)
		if n != want {
			tb.Errorf("CountAPIKeys = %d, want %d", n, want)
		}
	}

	t.Run("CreateLookup", func(t *testing.T) {
		s := open(t)
		createOrg(t, s, "org-1", "acme", at(0))
		scoped := key("key-1", "org-1", 1)
		scoped.Scope = "read"
		createKey(t, s, scoped)
		unscoped := createKey(t, s, key("key-2", "org-1", 2))
		for _, want := range []storage.APIKey{scoped, unscoped} {
			got, err := s.APIKeyByHash(t.Context(), want.Hash)
			noErr(t, "APIKeyByHash", err)
			diff(t, "APIKeyByHash", want, got)
		}
		_, err := s.APIKeyByHash(t.Context(), hash(3))
		wantErr(t, "APIKeyByHash(unknown)", err, storage.ErrNotFound)
		// A hash is looked up exactly; hex in upper case is another hash.
		_, err = s.APIKeyByHash(t.Context(), strings.ToUpper(hash(1)))
		wantErr(t, "APIKeyByHash(upper case)", err, storage.ErrNotFound)
	})

	t.Run("Conflict", func(t *testing.T) {
		tests := []struct {
			name string
			key  storage.APIKey
		}{
			{"same id", key("key-1", "org-1", 2)},
			{"same hash", storage.APIKey{ID: "key-2", OrgID: "org-1", Prefix: "gry_2", Hash: hash(1), CreatedAt: at(2)}},
			{"same hash in another org", storage.APIKey{ID: "key-2", OrgID: "org-2", Prefix: "gry_2", Hash: hash(1), CreatedAt: at(2)}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				createOrg(t, s, "org-1", "acme", at(0))
				createOrg(t, s, "org-2", "other", at(0))
				first := createKey(t, s, key("key-1", "org-1", 1))
				wantErr(t, "CreateAPIKey", s.CreateAPIKey(t.Context(), tt.key), storage.ErrConflict)
				count(t, s, 1)
				got, err := s.APIKeyByHash(t.Context(), first.Hash)
				noErr(t, "APIKeyByHash", err)
				diff(t, "APIKeyByHash of the first key", first, got)
				_, err = s.APIKeyByHash(t.Context(), hash(2))
				wantErr(t, "APIKeyByHash of the rejected key", err, storage.ErrNotFound)
			})
		}
	})

	t.Run("UnknownOrg", func(t *testing.T) {
		s := open(t)
		createOrg(t, s, "org-1", "acme", at(0))
		wantErr(t, "CreateAPIKey(unknown org)", s.CreateAPIKey(t.Context(), key("key-1", "org-2", 1)), storage.ErrNotFound)
		count(t, s, 0)
		_, err := s.APIKeyByHash(t.Context(), hash(1))
		wantErr(t, "APIKeyByHash of the rejected key", err, storage.ErrNotFound)
	})

	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		createOrg(t, s, "org-1", "acme", at(0))
		k1 := createKey(t, s, key("key-1", "org-1", 1))
		k2 := createKey(t, s, key("key-2", "org-1", 2))
		noErr(t, "DeleteAPIKey", s.DeleteAPIKey(t.Context(), k1.ID))
		_, err := s.APIKeyByHash(t.Context(), k1.Hash)
		wantErr(t, "APIKeyByHash of a deleted key", err, storage.ErrRevoked)
		wantErr(t, "APIKeyByHash of a deleted key", err, storage.ErrNotFound)
		// A revoked key stays revoked: its hash is never stored again, under any id or
		// organization, as a restart with the same bootstrap key would try.
		createOrg(t, s, "org-2", "other", at(0))
		for _, again := range []storage.APIKey{key("key-1", "org-1", 1), key("key-3", "org-2", 1)} {
			wantErr(t, "CreateAPIKey(a revoked hash)", s.CreateAPIKey(t.Context(), again), storage.ErrRevoked)
		}
		_, err = s.APIKeyByHash(t.Context(), k1.Hash)
		wantErr(t, "APIKeyByHash of a key stored again", err, storage.ErrRevoked)
		createKey(t, s, key("key-1", "org-1", 4)) // its id is free again; a new hash is a new key
		got, err := s.APIKeyByHash(t.Context(), k2.Hash)
		noErr(t, "APIKeyByHash of the other key", err)
		diff(t, "APIKeyByHash of the other key", k2, got)
		count(t, s, 2)

		noErr(t, "DeleteAPIKey(the new key-1)", s.DeleteAPIKey(t.Context(), k1.ID))
		wantErr(t, "DeleteAPIKey(deleted)", s.DeleteAPIKey(t.Context(), k1.ID), storage.ErrNotFound)
		wantErr(t, "DeleteAPIKey(unknown)", s.DeleteAPIKey(t.Context(), "key-9"), storage.ErrNotFound)
		count(t, s, 1)
	})

	t.Run("Count", func(t *testing.T) {
		s := open(t)
		count(t, s, 0)
		createOrg(t, s, "org-1", "acme", at(0))
		createOrg(t, s, "org-2", "other", at(0))
		createKey(t, s, key("key-1", "org-1", 1))
		createKey(t, s, key("key-2", "org-2", 2))
		createKey(t, s, key("key-3", "org-1", 3))
		count(t, s, 3)
	})
}
