package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// colGroupGrants holds group grants, one document each, as grants holds users' grants.
const colGroupGrants = "group_grants"

// sweepBatch bounds how many expired grants DeleteExpiredGrants reads at a time.
const sweepBatch = 1000

// groupGrantDoc is one group grant, with _id key(org_id, group_id, resource_id): granting is an
// insert that the primary key makes idempotent, as for users' grants.
type groupGrantDoc struct {
	Key        string    `bson:"_id"`
	OrgID      string    `bson:"org_id"`
	GroupID    string    `bson:"group_id"`
	ResourceID string    `bson:"resource_id"`
	CreatedAt  time.Time `bson:"created_at"`
	// ExpiresAt is absent for a grant that never expires, as it is on every grant stored
	// before grants could expire.
	ExpiresAt *time.Time `bson:"expires_at,omitempty"`
}

func (d groupGrantDoc) record() storage.GroupGrant {
	return storage.GroupGrant{OrgID: d.OrgID, GroupID: d.GroupID, ResourceID: d.ResourceID,
		CreatedAt: d.CreatedAt.UTC(), ExpiresAt: expiryTime(d.ExpiresAt)}
}

func (d groupGrantDoc) docID() string      { return d.Key }
func (d groupGrantDoc) expiry() *time.Time { return d.ExpiresAt }
func (d grantDoc) docID() string           { return d.Key }
func (d grantDoc) expiry() *time.Time      { return d.ExpiresAt }

// expiryPtr and expiryTime keep "never" as an absent field.
func expiryPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func expiryTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// orgFilter selects the organization's documents that also match more.
func orgFilter(orgID string, more ...bson.E) bson.D {
	return append(bson.D{{Key: "org_id", Value: orgID}}, more...)
}

// expiringDoc is a grant document of either collection.
type expiringDoc interface {
	docID() string
	expiry() *time.Time
}

// expiryFilter matches a stored expiry equal to t, or absent when t is zero. $in with null
// matches a missing field on MongoDB and FerretDB alike, as versionFilter relies on.
func expiryFilter(t time.Time) bson.E {
	if t.IsZero() {
		return bson.E{Key: "expires_at", Value: bson.D{{Key: "$in", Value: bson.A{nil}}}}
	}
	return bson.E{Key: "expires_at", Value: t}
}

// setExpiring inserts doc, whose _id is id; when the primary key says it exists, it sets the
// stored document's expires_at to expires (removes it when zero) with a $set or $unset
// conditioned on the expiry it read, reading again when another writer came first. It returns
// the stored document as it was, or nil when the insert won.
func setExpiring[T expiringDoc](ctx context.Context, col *mongo.Collection, id, orgID string, doc T, expires time.Time) (*T, error) {
	for range maxCASAttempts {
		_, err := col.InsertOne(ctx, doc)
		if err == nil {
			return nil, nil
		}
		if err := mapErr(err); !errors.Is(err, storage.ErrConflict) {
			return nil, err
		}
		filter := bson.D{{Key: "_id", Value: id}, {Key: "org_id", Value: orgID}}
		old, err := findOne[T](ctx, col, filter)
		if errors.Is(err, storage.ErrNotFound) {
			continue // revoked since the insert failed: insert again
		}
		if err != nil {
			return nil, err
		}
		was := expiryTime(old.expiry())
		if was.Equal(expires) {
			return &old, nil
		}
		update := bson.D{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: expires}}}}
		if expires.IsZero() {
			update = bson.D{{Key: "$unset", Value: bson.D{{Key: "expires_at", Value: ""}}}}
		}
		res, err := col.UpdateOne(ctx, append(filter, expiryFilter(was)), update)
		if err != nil {
			return nil, mapErr(err)
		}
		if res.MatchedCount == 1 {
			return &old, nil
		}
	}
	return nil, fmt.Errorf("changed by others %d times in a row: %w", maxCASAttempts, storage.ErrUnavailable)
}

// SetGrant records the grant, or replaces its expiry, after checking that the user and the
// resource exist, and returns the grant as it was (nil when new). A resource deleted between
// the check and the insert leaves no grant behind: DeleteResource clears its grants again
// after removing it.
func (s *Store) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	if err := s.userExists(ctx, g.OrgID, g.UserID); err != nil {
		return nil, fmt.Errorf("grant %s to %s: %w", g.ResourceID, g.UserID, err)
	}
	if err := s.resourceExists(ctx, g.OrgID, g.ResourceID); err != nil {
		return nil, fmt.Errorf("grant %s to %s: %w", g.ResourceID, g.UserID, err)
	}
	doc := newGrantDoc(g)
	old, err := setExpiring(ctx, s.grants, doc.Key, g.OrgID, doc, g.ExpiresAt)
	if err != nil {
		return nil, fmt.Errorf("grant %s to %s: %w", g.ResourceID, g.UserID, err)
	}
	if old == nil {
		return nil, nil
	}
	prev := old.record()
	return &prev, nil
}

func (s *Store) resourceExists(ctx context.Context, orgID, id string) error {
	ok, err := exists(ctx, s.resources, resourceFilter(orgID, id))
	if err != nil {
		return err
	}
	if !ok {
		return storage.ErrResourceNotFound
	}
	return nil
}

// ResourceGrants returns the resource's grants, ordered by UserID.
func (s *Store) ResourceGrants(ctx context.Context, orgID, resourceID string) ([]storage.Grant, error) {
	grants, err := s.findGrants(ctx, orgFilter(orgID, bson.E{Key: "resource_id", Value: resourceID}), bson.D{{Key: "user_id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list grants of resource %s: %w", resourceID, err)
	}
	return grants, nil
}

func (s *Store) groups() *mongo.Collection      { return s.db.Collection(colGroups) }
func (s *Store) groupGrants() *mongo.Collection { return s.db.Collection(colGroupGrants) }

// GetOrgGroup returns the organization's group id, whatever its integration: groups' _id is
// the organization and the group id alone.
func (s *Store) GetOrgGroup(ctx context.Context, orgID, id string) (storage.Group, error) {
	d, err := findOne[groupDoc](ctx, s.groups(), bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group %s: %w", id, err)
	}
	return d.record(), nil
}

// ListGroups returns every group of the organization, ordered by CreatedAt then ID.
func (s *Store) ListGroups(ctx context.Context, orgID string) ([]storage.Group, error) {
	docs, err := findAll[groupDoc](ctx, s.groups(), orgFilter(orgID), bson.D{{Key: "created_at", Value: 1}, {Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]storage.Group, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// groupIntegrationExists returns ErrNotFound unless the group's integration exists; a plain
// group has none to check.
func (s *Store) groupIntegrationExists(ctx context.Context, orgID, integrationID string) error {
	if integrationID == "" {
		return nil
	}
	ok, err := exists(ctx, s.authIntegrations, bson.D{{Key: "_id", Value: key(orgID, integrationID)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("auth integration %s: %w", integrationID, storage.ErrNotFound)
	}
	return nil
}

// memberFilter selects the users who may be members of a group of the integration: its own,
// or, for a plain group, every user of the organization.
func memberFilter(orgID, integrationID string) bson.D {
	if integrationID == "" {
		return orgFilter(orgID)
	}
	return integrationFilter(orgID, integrationID)
}

func (s *Store) groupExists(ctx context.Context, orgID, id string) error {
	ok, err := exists(ctx, s.groups(), bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return err
	}
	if !ok {
		return storage.ErrGroupNotFound
	}
	return nil
}

// SetGroupGrant records the group grant, or replaces its expiry, after checking that the group
// and the resource exist. A group or resource deleted in between leaves no grant behind: both
// deletions clear their group grants again after removing the record.
func (s *Store) SetGroupGrant(ctx context.Context, g storage.GroupGrant) (*storage.GroupGrant, error) {
	if err := s.groupExists(ctx, g.OrgID, g.GroupID); err != nil {
		return nil, fmt.Errorf("grant %s to group %s: %w", g.ResourceID, g.GroupID, err)
	}
	if err := s.resourceExists(ctx, g.OrgID, g.ResourceID); err != nil {
		return nil, fmt.Errorf("grant %s to group %s: %w", g.ResourceID, g.GroupID, err)
	}
	doc := groupGrantDoc{
		Key: key(g.OrgID, g.GroupID, g.ResourceID), OrgID: g.OrgID, GroupID: g.GroupID, ResourceID: g.ResourceID,
		CreatedAt: g.CreatedAt, ExpiresAt: expiryPtr(g.ExpiresAt),
	}
	old, err := setExpiring(ctx, s.groupGrants(), doc.Key, g.OrgID, doc, g.ExpiresAt)
	if err != nil {
		return nil, fmt.Errorf("grant %s to group %s: %w", g.ResourceID, g.GroupID, err)
	}
	if old == nil {
		return nil, nil
	}
	prev := old.record()
	return &prev, nil
}

// RevokeGroupGrant deletes the group grant by _id, and reports whether this delete removed it.
func (s *Store) RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error) {
	if err := s.groupExists(ctx, orgID, groupID); err != nil {
		return false, fmt.Errorf("revoke %s from group %s: %w", resourceID, groupID, err)
	}
	res, err := s.groupGrants().DeleteOne(ctx, bson.D{{Key: "_id", Value: key(orgID, groupID, resourceID)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return false, fmt.Errorf("revoke %s from group %s: %w", resourceID, groupID, mapErr(err))
	}
	return res.DeletedCount > 0, nil
}

// UserFacts is storage.UserFactsOf: the user's parts read one after the other, as the check
// path has always read them from MongoDB (whose multi-document transactions need a replica set
// and FerretDB lacks).
func (s *Store) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	f, err := storage.UserFactsOf(ctx, s, orgID, userID)
	if err != nil {
		return storage.Facts{}, fmt.Errorf("facts of user %s: %w", userID, err)
	}
	return f, nil
}

// GroupGrants returns the grants of the groups, ordered by GroupID, then CreatedAt, then
// ResourceID: one find by equality per group, which FerretDB serves as well as MongoDB.
func (s *Store) GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]storage.GroupGrant, error) {
	ids := sortedUnique(groupIDs)
	var out []storage.GroupGrant
	for _, id := range ids {
		docs, err := findAll[groupGrantDoc](ctx, s.groupGrants(), orgFilter(orgID, bson.E{Key: "group_id", Value: id}),
			bson.D{{Key: "created_at", Value: 1}, {Key: "resource_id", Value: 1}})
		if err != nil {
			return nil, fmt.Errorf("list grants of group %s: %w", id, err)
		}
		for _, d := range docs {
			out = append(out, d.record())
		}
	}
	return out, nil
}

// ResourceGroupGrants returns the resource's group grants, ordered by GroupID.
func (s *Store) ResourceGroupGrants(ctx context.Context, orgID, resourceID string) ([]storage.GroupGrant, error) {
	docs, err := findAll[groupGrantDoc](ctx, s.groupGrants(), orgFilter(orgID, bson.E{Key: "resource_id", Value: resourceID}),
		bson.D{{Key: "group_id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list group grants of resource %s: %w", resourceID, err)
	}
	out := make([]storage.GroupGrant, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// deleteGroupGrants removes the organization's group grants that match more (a group's, or a
// resource's).
func (s *Store) deleteGroupGrants(ctx context.Context, orgID string, more bson.E) error {
	if _, err := s.groupGrants().DeleteMany(ctx, orgFilter(orgID, more)); err != nil {
		return fmt.Errorf("delete group grants: %w", mapErr(err))
	}
	return nil
}

// DeleteExpiredGrants finds expired grants of both collections and deletes each by _id
// conditioned on the expiry it was found with, so that a grant extended in between is kept
// and the grants reported are exactly those removed.
func (s *Store) DeleteExpiredGrants(ctx context.Context, now time.Time) (storage.ExpiredGrants, error) {
	var out storage.ExpiredGrants
	users, err := deleteExpired[grantDoc](ctx, s.grants, now)
	for _, d := range users {
		out.Users = append(out.Users, d.record())
	}
	if err != nil {
		return out, fmt.Errorf("delete grants expired by %s: %w", now.UTC().Format(time.RFC3339), err)
	}
	groups, err := deleteExpired[groupGrantDoc](ctx, s.groupGrants(), now)
	for _, d := range groups {
		out.Groups = append(out.Groups, d.record())
	}
	if err != nil {
		return out, fmt.Errorf("delete group grants expired by %s: %w", now.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

func deleteExpired[T expiringDoc](ctx context.Context, col *mongo.Collection, now time.Time) ([]T, error) {
	filter := bson.D{{Key: "expires_at", Value: bson.D{{Key: "$lte", Value: now}}}}
	var removed []T
	for {
		cur, err := col.Find(ctx, filter, options.Find().SetLimit(sweepBatch))
		if err != nil {
			return removed, mapErr(err)
		}
		var docs []T
		if err := cur.All(ctx, &docs); err != nil {
			return removed, mapErr(err)
		}
		for _, d := range docs {
			res, err := col.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.docID()}, expiryFilter(expiryTime(d.expiry()))})
			if err != nil {
				return removed, mapErr(err)
			}
			if res.DeletedCount == 1 {
				removed = append(removed, d)
			}
		}
		if len(docs) < sweepBatch {
			return removed, nil
		}
	}
}

// ListAPIKeys returns the organization's keys, ordered by CreatedAt then ID.
func (s *Store) ListAPIKeys(ctx context.Context, orgID string) ([]storage.APIKey, error) {
	docs, err := findAll[apiKeyDoc](ctx, s.apiKeys, orgFilter(orgID), bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	out := make([]storage.APIKey, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// sortedUnique returns the distinct values, sorted.
func sortedUnique(values []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(values)))
}
