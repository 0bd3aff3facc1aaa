package mongo

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// ReplaceSecret sets the resource's secret and metadata with one $set by _id. It returns
// ErrNotFound if the organization has no resource with this id.
func (s *Store) ReplaceSecret(ctx context.Context, orgID, id string, secret []byte, metadata map[string]string) error {
	update := bson.D{{Key: "$set", Value: bson.D{
		{Key: "secret", Value: secret},
		{Key: "metadata", Value: encodeMetadata(metadata)},
	}}}
	res, err := s.resources.UpdateOne(ctx, resourceFilter(orgID, id), update)
	if err != nil {
		return fmt.Errorf("replace secret of resource %s: %w", id, mapErr(err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("replace secret of resource %s: %w", id, storage.ErrNotFound)
	}
	return nil
}

// SwapSecret sets the resource's secret to next with one $set by _id whose filter also requires
// the secret to be old, so the check and the write are one atomic step. It returns ErrNotFound
// if there is no such resource, and ErrConflict if its secret has changed.
func (s *Store) SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error {
	filter := append(resourceFilter(orgID, id), bson.E{Key: "secret", Value: old})
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "secret", Value: next}}}}
	res, err := s.resources.UpdateOne(ctx, filter, update)
	if err != nil {
		return fmt.Errorf("swap secret of resource %s: %w", id, mapErr(err))
	}
	if res.MatchedCount > 0 {
		return nil
	}
	// Nothing matched: either the resource is gone or its secret changed.
	found, err := exists(ctx, s.resources, resourceFilter(orgID, id))
	switch {
	case err != nil:
		return fmt.Errorf("swap secret of resource %s: %w", id, err)
	case found:
		return fmt.Errorf("swap secret of resource %s: secret changed since it was read: %w", id, storage.ErrConflict)
	default:
		return fmt.Errorf("swap secret of resource %s: %w", id, storage.ErrNotFound)
	}
}

// ResourcesWithSecrets returns every organization's resources that have a secret, ordered by
// OrgID then ID. It reads every resource in _id order, which the primary index serves without
// an in-memory sort, and keeps those with a secret in the program rather than in the query: it
// serves a rare administrative task, and a filter on a binary field's existence is not among
// the operations FerretDB is known to get right.
func (s *Store) ResourcesWithSecrets(ctx context.Context) ([]storage.Resource, error) {
	cur, err := s.resources.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list resources with secrets: %w", mapErr(err))
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []storage.Resource
	for cur.Next(ctx) {
		var d resourceDoc
		if err := cur.Decode(&d); err != nil {
			return nil, fmt.Errorf("list resources with secrets: %w", err)
		}
		if len(d.Secret) > 0 {
			out = append(out, d.record())
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("list resources with secrets: %w", mapErr(err))
	}
	// The escaping in _id can order ids differently from their text.
	slices.SortFunc(out, func(a, b storage.Resource) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
