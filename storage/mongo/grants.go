package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// grantDoc is one grant in the grants collection, with _id key(org_id, user_id, resource_id):
// each grant is its own document, so granting is an insert that the primary key makes
// idempotent, and revoking is a delete by _id, with no array updates.
type grantDoc struct {
	Key        string    `bson:"_id"`
	OrgID      string    `bson:"org_id"`
	UserID     string    `bson:"user_id"`
	ResourceID string    `bson:"resource_id"`
	CreatedAt  time.Time `bson:"created_at"`
	// ExpiresAt is absent for a grant that never expires (access.go).
	ExpiresAt *time.Time `bson:"expires_at,omitempty"`
}

func newGrantDoc(g storage.Grant) grantDoc {
	return grantDoc{
		Key: key(g.OrgID, g.UserID, g.ResourceID), OrgID: g.OrgID, UserID: g.UserID, ResourceID: g.ResourceID,
		CreatedAt: g.CreatedAt, ExpiresAt: expiryPtr(g.ExpiresAt),
	}
}

func (d grantDoc) record() storage.Grant {
	return storage.Grant{
		OrgID:      d.OrgID,
		UserID:     d.UserID,
		ResourceID: d.ResourceID,
		CreatedAt:  d.CreatedAt.UTC(),
		ExpiresAt:  expiryTime(d.ExpiresAt),
	}
}

// RevokeGrant removes the grant if there is one, and reports whether there was: whether this
// delete, of any racing ones, removed the document. It returns ErrUserNotFound if the user does
// not exist in the organization.
func (s *Store) RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error) {
	if err := s.userExists(ctx, orgID, userID); err != nil {
		return false, fmt.Errorf("revoke %s from %s: %w", resourceID, userID, err)
	}
	filter := bson.D{{Key: "_id", Value: key(orgID, userID, resourceID)}, {Key: "org_id", Value: orgID}}
	res, err := s.grants.DeleteOne(ctx, filter)
	if err != nil {
		return false, fmt.Errorf("revoke %s from %s: %w", resourceID, userID, mapErr(err))
	}
	return res.DeletedCount > 0, nil
}

// UserGrants returns the user's grants, ordered by CreatedAt then ResourceID; an unknown user
// has none.
func (s *Store) UserGrants(ctx context.Context, orgID, userID string) ([]storage.Grant, error) {
	filter := bson.D{{Key: "org_id", Value: orgID}, {Key: "user_id", Value: userID}}
	sort := bson.D{{Key: "created_at", Value: 1}, {Key: "resource_id", Value: 1}}
	grants, err := s.findGrants(ctx, filter, sort)
	if err != nil {
		return nil, fmt.Errorf("list grants of %s: %w", userID, err)
	}
	return grants, nil
}

// ListGrants returns every grant of the organization, ordered by UserID, then CreatedAt, then
// ResourceID.
func (s *Store) ListGrants(ctx context.Context, orgID string) ([]storage.Grant, error) {
	filter := bson.D{{Key: "org_id", Value: orgID}}
	sort := bson.D{{Key: "user_id", Value: 1}, {Key: "created_at", Value: 1}, {Key: "resource_id", Value: 1}}
	grants, err := s.findGrants(ctx, filter, sort)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return grants, nil
}

func (s *Store) findGrants(ctx context.Context, filter, sort bson.D) ([]storage.Grant, error) {
	docs, err := findAll[grantDoc](ctx, s.grants, filter, sort)
	if err != nil {
		return nil, err
	}
	out := make([]storage.Grant, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
	}
	return out, nil
}

// deleteResourceGrants removes every grant and group grant of the organization's resource id.
func (s *Store) deleteResourceGrants(ctx context.Context, orgID, resourceID string) error {
	filter := bson.D{{Key: "org_id", Value: orgID}, {Key: "resource_id", Value: resourceID}}
	if _, err := s.grants.DeleteMany(ctx, filter); err != nil {
		return fmt.Errorf("delete grants: %w", mapErr(err))
	}
	return s.deleteGroupGrants(ctx, orgID, bson.E{Key: "resource_id", Value: resourceID})
}
