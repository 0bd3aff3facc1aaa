package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// authIntegrationDoc is an authentication integration in the auth_integrations collection, with
// _id key(org_id, id) and a unique index on (org_id, name).
type authIntegrationDoc struct {
	Key       string    `bson:"_id"`
	OrgID     string    `bson:"org_id"`
	ID        string    `bson:"id"`
	Name      string    `bson:"name"`
	Metadata  string    `bson:"metadata"`
	Type      string    `bson:"type"`
	CreatedAt time.Time `bson:"created_at"`
}

func (d authIntegrationDoc) record() storage.AuthIntegration {
	return storage.AuthIntegration{
		OrgID:     d.OrgID,
		ID:        d.ID,
		Name:      d.Name,
		Metadata:  d.Metadata,
		Type:      d.Type,
		CreatedAt: d.CreatedAt.UTC(),
	}
}

func newAuthIntegrationDoc(a storage.AuthIntegration) authIntegrationDoc {
	return authIntegrationDoc{
		Key:       key(a.OrgID, a.ID),
		OrgID:     a.OrgID,
		ID:        a.ID,
		Name:      a.Name,
		Metadata:  a.Metadata,
		Type:      a.Type,
		CreatedAt: a.CreatedAt,
	}
}

// CreateAuthIntegration stores a new integration; a taken id or name fails the insert with
// ErrConflict.
func (s *Store) CreateAuthIntegration(ctx context.Context, a storage.AuthIntegration) error {
	if _, err := s.authIntegrations.InsertOne(ctx, newAuthIntegrationDoc(a)); err != nil {
		return fmt.Errorf("create auth integration %s: %w", a.ID, mapErr(err))
	}
	return nil
}

// GetAuthIntegration returns the organization's integration with this id, or ErrNotFound.
func (s *Store) GetAuthIntegration(ctx context.Context, orgID, id string) (storage.AuthIntegration, error) {
	filter := bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}}
	doc, err := findOne[authIntegrationDoc](ctx, s.authIntegrations, filter)
	if err != nil {
		return storage.AuthIntegration{}, fmt.Errorf("get auth integration %s: %w", id, err)
	}
	return doc.record(), nil
}

// ListAuthIntegrations returns the organization's integrations, ordered by CreatedAt then ID.
func (s *Store) ListAuthIntegrations(ctx context.Context, orgID string) ([]storage.AuthIntegration, error) {
	docs, err := findAll[authIntegrationDoc](ctx, s.authIntegrations, bson.D{{Key: "org_id", Value: orgID}},
		bson.D{{Key: "created_at", Value: 1}, {Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list auth integrations: %w", err)
	}
	out := make([]storage.AuthIntegration, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
	}
	return out, nil
}

// DeleteAuthIntegration removes the integration's token, its groups one by one, its users one
// by one (DeleteGroup and DeleteUser, each taking its grants and memberships along), and then
// the integration. Without transactions this is not one step; but every step can be made
// again, and the integration goes last, so a call cut short is finished by the next.
func (s *Store) DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (storage.RemovedIntegration, error) {
	a, err := s.GetAuthIntegration(ctx, orgID, id)
	if err != nil {
		return storage.RemovedIntegration{}, fmt.Errorf("delete auth integration %s: %w", id, err)
	}
	out := storage.RemovedIntegration{Integration: a}
	if _, err := s.db.Collection(colSCIMTokens).DeleteMany(ctx, integrationFilter(orgID, id)); err != nil {
		return out, fmt.Errorf("delete auth integration %s: token: %w", id, mapErr(err))
	}
	groups, err := findAll[groupDoc](ctx, s.db.Collection(colGroups), integrationFilter(orgID, id), bson.D{{Key: "id", Value: 1}})
	if err != nil {
		return out, fmt.Errorf("delete auth integration %s: groups: %w", id, err)
	}
	for _, g := range groups {
		if err := s.DeleteGroup(ctx, orgID, id, g.ID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return out, fmt.Errorf("delete auth integration %s: %w", id, err)
		}
		out.Groups = append(out.Groups, g.ID)
	}
	users, err := findAll[userDoc](ctx, s.users, integrationFilter(orgID, id), bson.D{{Key: "id", Value: 1}})
	if err != nil {
		return out, fmt.Errorf("delete auth integration %s: users: %w", id, err)
	}
	for _, u := range users {
		if err := s.DeleteUser(ctx, orgID, id, u.ID, now); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return out, fmt.Errorf("delete auth integration %s: %w", id, err)
		}
		out.Users = append(out.Users, u.ID)
	}
	res, err := s.authIntegrations.DeleteOne(ctx, bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return out, fmt.Errorf("delete auth integration %s: %w", id, mapErr(err))
	}
	if res.DeletedCount == 0 {
		return out, fmt.Errorf("delete auth integration %s: %w", id, storage.ErrNotFound)
	}
	return out, nil
}
