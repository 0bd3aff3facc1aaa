package bolt

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

type orgRecord struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"created_at"`
}

func (r orgRecord) org() storage.Org {
	return storage.Org{ID: r.ID, Name: r.Name, CreatedAt: fromMillis(r.CreatedAt)}
}

type apiKeyRecord struct {
	ID        string `json:"id"`
	OrgID     string `json:"org_id"`
	Prefix    string `json:"prefix"`
	Hash      string `json:"hash"`
	Scope     string `json:"scope,omitempty"`
	CreatedAt int64  `json:"created_at"`
}

func (r apiKeyRecord) apiKey() storage.APIKey {
	return storage.APIKey{
		ID: r.ID, OrgID: r.OrgID, Prefix: r.Prefix, Hash: r.Hash, Scope: r.Scope, CreatedAt: fromMillis(r.CreatedAt),
	}
}

// CreateOrg stores a new organization. It returns storage.ErrConflict if the id or the name is
// taken.
func (s *Store) CreateOrg(ctx context.Context, org storage.Org) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		orgs, names := tx.Bucket(bucketOrgs), tx.Bucket(bucketOrgNames)
		if orgs.Get(key(org.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		if names.Get(key(org.Name)) != nil {
			return fmt.Errorf("name %q taken: %w", org.Name, storage.ErrConflict)
		}
		if err := names.Put(key(org.Name), []byte(org.ID)); err != nil {
			return err
		}
		return put(orgs, key(org.ID), orgRecord{ID: org.ID, Name: org.Name, CreatedAt: millis(org.CreatedAt)})
	})
	if err != nil {
		return fmt.Errorf("create org %s: %w", org.ID, err)
	}
	return nil
}

// GetOrg returns the organization with this id, or storage.ErrNotFound.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	var org storage.Org
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		org, err = getOrg(tx, id)
		return err
	})
	if err != nil {
		return storage.Org{}, fmt.Errorf("get org %s: %w", id, err)
	}
	return org, nil
}

func getOrg(tx *bbolt.Tx, id string) (storage.Org, error) {
	r, ok, err := get[orgRecord](tx.Bucket(bucketOrgs), key(id))
	if err != nil {
		return storage.Org{}, err
	}
	if !ok {
		return storage.Org{}, storage.ErrNotFound
	}
	return r.org(), nil
}

// OrgByName returns the organization with this exact name, or storage.ErrNotFound.
func (s *Store) OrgByName(ctx context.Context, name string) (storage.Org, error) {
	var org storage.Org
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketOrgNames).Get(key(name))
		if id == nil {
			return storage.ErrNotFound
		}
		var err error
		org, err = getOrg(tx, string(id))
		return err
	})
	if err != nil {
		return storage.Org{}, fmt.Errorf("get org named %q: %w", name, err)
	}
	return org, nil
}

// ListOrgs returns every organization, ordered by CreatedAt then ID.
func (s *Store) ListOrgs(ctx context.Context) ([]storage.Org, error) {
	var recs []orgRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scan[orgRecord](tx.Bucket(bucketOrgs), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list orgs: %w", err)
	}
	slices.SortFunc(recs, func(a, b orgRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	orgs := make([]storage.Org, len(recs))
	for i, r := range recs {
		orgs[i] = r.org()
	}
	return orgs, nil
}

// CreateAPIKey stores a new key. It returns storage.ErrNotFound if key.OrgID names no
// organization, storage.ErrConflict if the id or the hash is taken, and storage.ErrRevoked if
// the hash was a deleted key's.
func (s *Store) CreateAPIKey(ctx context.Context, k storage.APIKey) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketOrgs).Get(key(k.OrgID)) == nil {
			return fmt.Errorf("org %s: %w", k.OrgID, storage.ErrNotFound)
		}
		if tx.Bucket(bucketRevokedAPIKeys).Get(key(k.Hash)) != nil {
			return storage.ErrRevoked
		}
		keys, hashes := tx.Bucket(bucketAPIKeys), tx.Bucket(bucketAPIKeyHashes)
		if keys.Get(key(k.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		// The hash is not put in the message: it identifies a secret.
		if hashes.Get(key(k.Hash)) != nil {
			return fmt.Errorf("hash taken: %w", storage.ErrConflict)
		}
		if err := hashes.Put(key(k.Hash), []byte(k.ID)); err != nil {
			return err
		}
		return put(keys, key(k.ID), apiKeyRecord{
			ID: k.ID, OrgID: k.OrgID, Prefix: k.Prefix, Hash: k.Hash, Scope: k.Scope, CreatedAt: millis(k.CreatedAt),
		})
	})
	if err != nil {
		return fmt.Errorf("create api key %s: %w", k.ID, err)
	}
	return nil
}

// APIKeyByHash returns the key whose Hash is hash, or storage.ErrNotFound.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (storage.APIKey, error) {
	var k storage.APIKey
	// The journal holds no keys, and the key cache reads them again and again: they are read
	// without applying it.
	err := s.viewData(ctx, func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketAPIKeyHashes).Get(key(hash))
		if id == nil {
			if tx.Bucket(bucketRevokedAPIKeys).Get(key(hash)) != nil {
				return storage.ErrRevoked
			}
			return storage.ErrNotFound
		}
		r, ok, err := get[apiKeyRecord](tx.Bucket(bucketAPIKeys), key(string(id)))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("hash index names missing key %s", id)
		}
		k = r.apiKey()
		return nil
	})
	if err != nil {
		return storage.APIKey{}, fmt.Errorf("get api key by hash: %w", err)
	}
	return k, nil
}

// DeleteAPIKey removes a key so that it no longer authenticates, and keeps its hash as revoked,
// in one transaction. It returns storage.ErrNotFound if no key has this id.
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		keys := tx.Bucket(bucketAPIKeys)
		r, ok, err := get[apiKeyRecord](keys, key(id))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		if err := tx.Bucket(bucketAPIKeyHashes).Delete(key(r.Hash)); err != nil {
			return err
		}
		revoked := strconv.FormatInt(time.Now().UnixMilli(), 10)
		if err := tx.Bucket(bucketRevokedAPIKeys).Put(key(r.Hash), []byte(revoked)); err != nil {
			return err
		}
		return keys.Delete(key(id))
	})
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", id, err)
	}
	return nil
}

// CountAPIKeys returns how many keys exist across all organizations.
func (s *Store) CountAPIKeys(ctx context.Context) (int, error) {
	var n int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketAPIKeys).Stats().KeyN
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count api keys: %w", err)
	}
	return n, nil
}
