package mongo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// apiKeyDoc is an API key in the api_keys collection. Keys are looked up by id or hash alone
// (authentication does not know the organization yet), so _id is the key's own id, unique
// across organizations, and hash has a unique index.
type apiKeyDoc struct {
	ID        string    `bson:"_id"`
	OrgID     string    `bson:"org_id"`
	Prefix    string    `bson:"prefix"`
	Hash      string    `bson:"hash"`
	Scope     string    `bson:"scope"`
	CreatedAt time.Time `bson:"created_at"`
}

// colRevokedAPIKeys keeps the hashes of deleted keys, as _id, with when they were revoked: a
// revoked key is never stored again (storage.ErrRevoked).
const colRevokedAPIKeys = "revoked_api_keys"

type revokedAPIKeyDoc struct {
	Hash      string    `bson:"_id"`
	RevokedAt time.Time `bson:"revoked_at"`
}

// revoked reports whether hash was a deleted key's.
func (s *Store) revoked(ctx context.Context, hash string) (bool, error) {
	return exists(ctx, s.db.Collection(colRevokedAPIKeys), bson.D{{Key: "_id", Value: hash}})
}

func (d apiKeyDoc) record() storage.APIKey {
	return storage.APIKey{
		ID:        d.ID,
		OrgID:     d.OrgID,
		Prefix:    d.Prefix,
		Hash:      d.Hash,
		Scope:     d.Scope,
		CreatedAt: d.CreatedAt.UTC(),
	}
}

// CreateAPIKey stores a new key after checking its organization exists; organizations are
// never deleted, so the check cannot go stale before the insert.
func (s *Store) CreateAPIKey(ctx context.Context, key storage.APIKey) error {
	ok, err := exists(ctx, s.orgs, bson.D{{Key: "_id", Value: key.OrgID}})
	if err != nil {
		return fmt.Errorf("create api key %s: %w", key.ID, err)
	}
	if !ok {
		return fmt.Errorf("create api key %s: org %s: %w", key.ID, key.OrgID, storage.ErrNotFound)
	}
	if revoked, err := s.revoked(ctx, key.Hash); err != nil || revoked {
		return fmt.Errorf("create api key %s: %w", key.ID, cmp.Or(err, storage.ErrRevoked))
	}
	doc := apiKeyDoc{
		ID:        key.ID,
		OrgID:     key.OrgID,
		Prefix:    key.Prefix,
		Hash:      key.Hash,
		Scope:     key.Scope,
		CreatedAt: key.CreatedAt,
	}
	if _, err := s.apiKeys.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("create api key %s: %w", key.ID, mapErr(err))
	}
	return nil
}

// APIKeyByHash returns the key whose Hash is hash, or ErrNotFound. The hash is left out of
// errors so that logs carry nothing derived from a key.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (storage.APIKey, error) {
	doc, err := findOne[apiKeyDoc](ctx, s.apiKeys, bson.D{{Key: "hash", Value: hash}})
	if errors.Is(err, storage.ErrNotFound) {
		if revoked, rerr := s.revoked(ctx, hash); rerr != nil || revoked {
			err = cmp.Or(rerr, storage.ErrRevoked)
		}
	}
	if err != nil {
		return storage.APIKey{}, fmt.Errorf("get api key by hash: %w", err)
	}
	return doc.record(), nil
}

// DeleteAPIKey records the key's hash as revoked, then removes the key, or returns
// ErrNotFound if no key has this id. In that order, a failure between the two leaves a key
// that still works and that a retry revokes, never a deleted key that could come back.
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	doc, err := findOne[apiKeyDoc](ctx, s.apiKeys, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", id, err)
	}
	_, err = s.db.Collection(colRevokedAPIKeys).InsertOne(ctx, revokedAPIKeyDoc{Hash: doc.Hash, RevokedAt: time.Now().UTC().Truncate(time.Millisecond)})
	if err != nil && !errors.Is(mapErr(err), storage.ErrConflict) {
		return fmt.Errorf("delete api key %s: revoke its hash: %w", id, mapErr(err))
	}
	res, err := s.apiKeys.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", id, mapErr(err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete api key %s: %w", id, storage.ErrNotFound)
	}
	return nil
}

// CountAPIKeys returns how many keys exist across all organizations. It counts with the
// driver's CountDocuments (an aggregate of $match and $group) because the count command's
// estimate may be wrong after an unclean shutdown.
func (s *Store) CountAPIKeys(ctx context.Context) (int, error) {
	n, err := s.apiKeys.CountDocuments(ctx, bson.D{})
	if err != nil {
		return 0, fmt.Errorf("count api keys: %w", mapErr(err))
	}
	return int(n), nil
}
