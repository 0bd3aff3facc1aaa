package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// GetAPIKey returns the key with this id, or ErrNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (storage.APIKey, error) {
	doc, err := findOne[apiKeyDoc](ctx, s.apiKeys, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return storage.APIKey{}, fmt.Errorf("get api key %s: %w", id, err)
	}
	return doc.record(), nil
}
