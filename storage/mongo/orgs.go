package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// orgDoc is an organization in the orgs collection. Its _id is the organization's id; org_id
// repeats it so that every document of the database names its organization the same way.
type orgDoc struct {
	ID        string    `bson:"_id"`
	OrgID     string    `bson:"org_id"`
	Name      string    `bson:"name"`
	CreatedAt time.Time `bson:"created_at"`
}

func (d orgDoc) record() storage.Org {
	return storage.Org{ID: d.ID, Name: d.Name, CreatedAt: d.CreatedAt.UTC()}
}

// CreateOrg stores a new organization. The _id and the unique index on name make a taken id or
// name fail the insert itself, so two replicas cannot both create the same name.
func (s *Store) CreateOrg(ctx context.Context, org storage.Org) error {
	doc := orgDoc{ID: org.ID, OrgID: org.ID, Name: org.Name, CreatedAt: org.CreatedAt}
	if _, err := s.orgs.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("create org %s: %w", org.ID, mapErr(err))
	}
	return nil
}

// GetOrg returns the organization with this id, or ErrNotFound.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	doc, err := findOne[orgDoc](ctx, s.orgs, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return storage.Org{}, fmt.Errorf("get org %s: %w", id, err)
	}
	return doc.record(), nil
}

// OrgByName returns the organization with this exact name, or ErrNotFound.
func (s *Store) OrgByName(ctx context.Context, name string) (storage.Org, error) {
	doc, err := findOne[orgDoc](ctx, s.orgs, bson.D{{Key: "name", Value: name}})
	if err != nil {
		return storage.Org{}, fmt.Errorf("get org by name %q: %w", name, err)
	}
	return doc.record(), nil
}

// ListOrgs returns every organization, ordered by CreatedAt then ID.
func (s *Store) ListOrgs(ctx context.Context) ([]storage.Org, error) {
	docs, err := findAll[orgDoc](ctx, s.orgs, bson.D{}, bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list orgs: %w", err)
	}
	out := make([]storage.Org, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
	}
	return out, nil
}
