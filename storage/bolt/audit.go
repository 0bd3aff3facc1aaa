package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// GetAPIKey returns the key with this id, or storage.ErrNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (storage.APIKey, error) {
	var k storage.APIKey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		r, ok, err := get[apiKeyRecord](tx.Bucket(bucketAPIKeys), key(id))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		k = r.apiKey()
		return nil
	})
	if err != nil {
		return storage.APIKey{}, fmt.Errorf("get api key %s: %w", id, err)
	}
	return k, nil
}
