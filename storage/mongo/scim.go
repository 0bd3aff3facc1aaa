package mongo

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// Collections of SCIM provisioning.
const (
	colSCIMTokens = "scim_tokens"
	colGroups     = "groups"
)

// maxCASAttempts bounds how often UpdateUser and UpdateGroup re-read a record that others
// keep changing under them. Providers change one record a few times a minute, so running out
// means something is wrong, and the caller is told to come back later.
const maxCASAttempts = 20

// scimTokenDoc is a SCIM token in the scim_tokens collection. Tokens are looked up by hash
// alone (authentication does not know the organization yet), so _id is the token's own id and
// hash has a unique index.
type scimTokenDoc struct {
	ID            string    `bson:"_id"`
	OrgID         string    `bson:"org_id"`
	IntegrationID string    `bson:"integration_id"`
	Prefix        string    `bson:"prefix"`
	Hash          string    `bson:"hash"`
	CreatedAt     time.Time `bson:"created_at"`
}

// groupDoc is a group in the groups collection, with _id key(org_id, id), a unique index on
// (org_id, integration_id, name_key) where name_key is the lower-cased display name, and its
// members as a list of user ids, which only ever changes by a whole-list $set conditioned on
// version (FerretDB ignores $pull with a condition, and $push would race the same way).
type groupDoc struct {
	Key           string   `bson:"_id"`
	OrgID         string   `bson:"org_id"`
	ID            string   `bson:"id"`
	IntegrationID string   `bson:"integration_id"`
	DisplayName   string   `bson:"display_name"`
	NameKey       string   `bson:"name_key"`
	ExternalID    string   `bson:"external_id"`
	Members       []string `bson:"members"`
	// MemberDisplays is a list, ordered by id, rather than a document keyed by member id: an
	// id may hold "." or "$", which field names may not.
	MemberDisplays []memberDisplayDoc `bson:"member_displays,omitempty"`
	CreatedAt      time.Time          `bson:"created_at"`
	ModifiedAt     time.Time          `bson:"modified_at"`
	Version        int64              `bson:"version"`
}

// memberDisplayDoc is the display name a provider sent with the member id.
type memberDisplayDoc struct {
	ID      string `bson:"id"`
	Display string `bson:"display"`
}

func newGroupDoc(g storage.Group) groupDoc {
	return groupDoc{
		Key: key(g.OrgID, g.ID), OrgID: g.OrgID, ID: g.ID, IntegrationID: g.IntegrationID,
		DisplayName: g.DisplayName, NameKey: strings.ToLower(g.DisplayName), ExternalID: g.ExternalID,
		Members: g.Members, MemberDisplays: memberDisplayDocs(g.MemberDisplays), CreatedAt: g.CreatedAt, ModifiedAt: g.ModifiedAt,
	}
}

func (d groupDoc) record() storage.Group {
	var displays map[string]string
	if len(d.MemberDisplays) > 0 {
		displays = make(map[string]string, len(d.MemberDisplays))
		for _, m := range d.MemberDisplays {
			displays[m.ID] = m.Display
		}
	}
	return storage.Group{
		OrgID: d.OrgID, ID: d.ID, IntegrationID: d.IntegrationID, DisplayName: d.DisplayName,
		ExternalID: d.ExternalID, Members: d.Members, MemberDisplays: displays, CreatedAt: d.CreatedAt.UTC(), ModifiedAt: d.ModifiedAt.UTC(),
	}
}

// memberDisplayDocs turns a group's member displays into their stored list.
func memberDisplayDocs(displays map[string]string) []memberDisplayDoc {
	out := make([]memberDisplayDoc, 0, len(displays))
	for _, id := range slices.Sorted(maps.Keys(displays)) {
		out = append(out, memberDisplayDoc{ID: id, Display: displays[id]})
	}
	return out
}

// newVersion returns a fresh version for a record that changes. Versions are random rather
// than counted so that a writer that does not read the version first (ImportUsers) can still
// invalidate every read made before its write.
func newVersion() int64 { return rand.Int64N(math.MaxInt64-1) + 1 }

// versionFilter matches the version v that was read. Users imported before versions existed
// have none, and read as 0.
func versionFilter(v int64) any {
	if v == 0 {
		return bson.D{{Key: "$in", Value: bson.A{int64(0), nil}}}
	}
	return v
}

func integrationFilter(orgID, integrationID string) bson.D {
	return bson.D{{Key: "org_id", Value: orgID}, {Key: "integration_id", Value: integrationID}}
}

// CreateSCIMIntegration stores the integration, then its token. MongoDB without transactions
// cannot do both at once, so a token that cannot be stored takes the integration away again.
func (s *Store) CreateSCIMIntegration(ctx context.Context, a storage.AuthIntegration, t storage.SCIMToken) error {
	if err := s.CreateAuthIntegration(ctx, a); err != nil {
		return fmt.Errorf("create scim integration: %w", err)
	}
	doc := scimTokenDoc{
		ID: t.ID, OrgID: t.OrgID, IntegrationID: t.IntegrationID, Prefix: t.Prefix, Hash: t.Hash, CreatedAt: t.CreatedAt,
	}
	if _, err := s.db.Collection(colSCIMTokens).InsertOne(ctx, doc); err != nil {
		err = fmt.Errorf("create scim integration %s: token: %w", a.ID, mapErr(err))
		undo := bson.D{{Key: "_id", Value: key(a.OrgID, a.ID)}, {Key: "org_id", Value: a.OrgID}}
		if _, uerr := s.authIntegrations.DeleteOne(context.WithoutCancel(ctx), undo); uerr != nil {
			err = errors.Join(err, fmt.Errorf("remove the integration again: %w", mapErr(uerr)))
		}
		return err
	}
	return nil
}

// SCIMTokenByHash returns the token whose Hash is hash, or ErrNotFound. The hash is left out
// of errors so that logs carry nothing derived from a token.
func (s *Store) SCIMTokenByHash(ctx context.Context, hash string) (storage.SCIMToken, error) {
	d, err := findOne[scimTokenDoc](ctx, s.db.Collection(colSCIMTokens), bson.D{{Key: "hash", Value: hash}})
	if err != nil {
		return storage.SCIMToken{}, fmt.Errorf("get scim token by hash: %w", err)
	}
	return storage.SCIMToken{
		ID: d.ID, OrgID: d.OrgID, IntegrationID: d.IntegrationID, Prefix: d.Prefix, Hash: d.Hash, CreatedAt: d.CreatedAt.UTC(),
	}, nil
}

// SetSCIMToken stores the new token before it removes the old ones, so that the integration
// is never left without one by a failure between the two; a call made again removes them.
func (s *Store) SetSCIMToken(ctx context.Context, orgID, integrationID string, t *storage.SCIMToken) (*storage.SCIMToken, error) {
	a, err := s.GetAuthIntegration(ctx, orgID, integrationID)
	if err == nil && a.Type != storage.IntegrationSCIM {
		err = storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("set scim token of integration %s: %w", integrationID, err)
	}
	tokens := s.db.Collection(colSCIMTokens)
	docs, err := findAll[scimTokenDoc](ctx, tokens, integrationFilter(orgID, integrationID), bson.D{{Key: "created_at", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("set scim token of integration %s: %w", integrationID, err)
	}
	gone := integrationFilter(orgID, integrationID)
	if t != nil {
		doc := scimTokenDoc{ID: t.ID, OrgID: orgID, IntegrationID: integrationID, Prefix: t.Prefix, Hash: t.Hash, CreatedAt: t.CreatedAt}
		if _, err := tokens.InsertOne(ctx, doc); err != nil {
			return nil, fmt.Errorf("set scim token of integration %s: %w", integrationID, mapErr(err))
		}
		gone = append(gone, bson.E{Key: "_id", Value: bson.D{{Key: "$ne", Value: t.ID}}})
	}
	if _, err := tokens.DeleteMany(ctx, gone); err != nil {
		return nil, fmt.Errorf("set scim token of integration %s: remove the old one: %w", integrationID, mapErr(err))
	}
	if len(docs) == 0 {
		return nil, nil
	}
	d := docs[len(docs)-1]
	return &storage.SCIMToken{ID: d.ID, OrgID: d.OrgID, IntegrationID: d.IntegrationID, Prefix: d.Prefix, Hash: d.Hash, CreatedAt: d.CreatedAt.UTC()}, nil
}

func newUserDoc(u storage.User) userDoc {
	return userDoc{
		Key: key(u.OrgID, u.ID), OrgID: u.OrgID, ID: u.ID, Email: u.Email, EmailKey: emailKey(u.Email),
		First: u.First, Last: u.Last, Active: u.Active, IntegrationID: u.IntegrationID, IntegrationName: u.IntegrationName,
		ImportedAt: u.ImportedAt, ModifiedAt: u.ModifiedAt, ExternalID: u.ExternalID, Attributes: u.Attributes,
	}
}

// CreateUser inserts the user; the primary key and the unique email index refuse a taken id
// or email with ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	integ, err := findOne[authIntegrationDoc](ctx, s.authIntegrations,
		bson.D{{Key: "_id", Value: key(u.OrgID, u.IntegrationID)}, {Key: "org_id", Value: u.OrgID}})
	if err != nil {
		return fmt.Errorf("create user %s: auth integration %s: %w", u.ID, u.IntegrationID, err)
	}
	u.IntegrationName = integ.Name
	if _, err := s.users.InsertOne(ctx, newUserDoc(u)); err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, mapErr(err))
	}
	return nil
}

// integrationUser reads the integration's user id; a user of another integration is
// ErrNotFound.
func (s *Store) integrationUser(ctx context.Context, orgID, integrationID, id string) (userDoc, error) {
	d, err := findOne[userDoc](ctx, s.users, userFilter(orgID, id))
	if err != nil {
		return userDoc{}, err
	}
	if d.IntegrationID != integrationID {
		return userDoc{}, storage.ErrNotFound
	}
	return d, nil
}

// UpdateUser reads the user, applies fn, and $sets the result conditioned on the version it
// read, reading again when another writer came first.
func (s *Store) UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*storage.User) error) (storage.User, error) {
	for range maxCASAttempts {
		d, err := s.integrationUser(ctx, orgID, integrationID, id)
		if err != nil {
			return storage.User{}, fmt.Errorf("update user %s: %w", id, err)
		}
		old := d.record()
		u := old
		u.Attributes = bytes.Clone(old.Attributes)
		if err := fn(&u); err != nil {
			return storage.User{}, fmt.Errorf("update user %s: %w", id, err)
		}
		u.OrgID, u.ID, u.IntegrationID, u.IntegrationName, u.ImportedAt =
			old.OrgID, old.ID, old.IntegrationID, old.IntegrationName, old.ImportedAt
		if reflect.DeepEqual(u, old) {
			return u, nil
		}
		if emailKey(u.Email) != d.EmailKey {
			if err := s.emailFree(ctx, orgID, integrationID, u.Email); err != nil {
				return storage.User{}, fmt.Errorf("update user %s: %w", id, err)
			}
		}
		set := bson.D{
			{Key: "email", Value: u.Email},
			{Key: "email_key", Value: emailKey(u.Email)},
			{Key: "first", Value: u.First},
			{Key: "last", Value: u.Last},
			{Key: "active", Value: u.Active},
			{Key: "external_id", Value: u.ExternalID},
			{Key: "attributes", Value: u.Attributes},
			{Key: "modified_at", Value: u.ModifiedAt},
			{Key: "version", Value: newVersion()},
		}
		filter := append(userFilter(orgID, id), bson.E{Key: "version", Value: versionFilter(d.Version)})
		res, err := s.users.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
		if err != nil {
			return storage.User{}, fmt.Errorf("update user %s: %w", id, mapErr(err))
		}
		if res.MatchedCount == 1 {
			return u, nil
		}
	}
	return storage.User{}, fmt.Errorf("update user %s: changed by others %d times in a row: %w", id, maxCASAttempts, storage.ErrUnavailable)
}

// DeleteUser removes the user's grants, the user, its grants again (a grant racing the
// delete may have slipped in between: Grant checks the user, then inserts), and the user from
// its groups. Access ends with the first step.
func (s *Store) DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error {
	if _, err := s.integrationUser(ctx, orgID, integrationID, id); err != nil {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	grants := bson.D{{Key: "org_id", Value: orgID}, {Key: "user_id", Value: id}}
	if _, err := s.grants.DeleteMany(ctx, grants); err != nil {
		return fmt.Errorf("delete user %s: grants: %w", id, mapErr(err))
	}
	res, err := s.users.DeleteOne(ctx, append(userFilter(orgID, id), bson.E{Key: "integration_id", Value: integrationID}))
	if err != nil {
		return fmt.Errorf("delete user %s: %w", id, mapErr(err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete user %s: %w", id, storage.ErrNotFound)
	}
	if _, err := s.grants.DeleteMany(ctx, grants); err != nil {
		return fmt.Errorf("delete user %s: grants: %w", id, mapErr(err))
	}
	groups, err := findAll[groupDoc](ctx, s.db.Collection(colGroups),
		bson.D{{Key: "org_id", Value: orgID}, {Key: "members", Value: id}}, nil)
	if err != nil {
		return fmt.Errorf("delete user %s: find groups: %w", id, err)
	}
	for _, g := range groups {
		_, err := s.UpdateGroup(ctx, orgID, g.IntegrationID, g.ID, func(g *storage.Group) error {
			g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == id })
			delete(g.MemberDisplays, id)
			g.ModifiedAt = now
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("delete user %s: leave group: %w", id, err)
		}
	}
	return nil
}

// emailFree returns ErrConflict if the integration has a user with this email, ignoring
// letter case. The unique index would refuse the write anyway, but FerretDB reports that
// refusal of an update as an internal error rather than as a duplicate key.
func (s *Store) emailFree(ctx context.Context, orgID, integrationID, email string) error {
	filter := append(integrationFilter(orgID, integrationID), bson.E{Key: "email_key", Value: emailKey(email)})
	taken, err := exists(ctx, s.users, filter)
	if err != nil {
		return err
	}
	if taken {
		return fmt.Errorf("email: %w", storage.ErrConflict)
	}
	return nil
}

// UserByEmail returns the integration's user with this email, ignoring letter case.
func (s *Store) UserByEmail(ctx context.Context, orgID, integrationID, email string) (storage.User, error) {
	filter := append(integrationFilter(orgID, integrationID), bson.E{Key: "email_key", Value: emailKey(email)})
	d, err := findOne[userDoc](ctx, s.users, filter)
	if err != nil {
		return storage.User{}, fmt.Errorf("get user by email: %w", err)
	}
	return d.record(), nil
}

// UsersByExternalID returns the integration's users with this external id, ordered by ID.
func (s *Store) UsersByExternalID(ctx context.Context, orgID, integrationID, externalID string) ([]storage.User, error) {
	if externalID == "" {
		return nil, nil // users without one are stored with "", which must not match
	}
	filter := append(integrationFilter(orgID, integrationID), bson.E{Key: "external_id", Value: externalID})
	docs, err := findAll[userDoc](ctx, s.users, filter, bson.D{{Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("get users by external id: %w", err)
	}
	out := make([]storage.User, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}

// IntegrationUsers pages through the integration's users by ID.
func (s *Store) IntegrationUsers(ctx context.Context, orgID, integrationID string, offset, limit int) ([]storage.User, int, error) {
	docs, total, err := findPageByID[userDoc](ctx, s.users, integrationFilter(orgID, integrationID), offset, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list users of integration %s: %w", integrationID, err)
	}
	out := make([]storage.User, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, total, nil
}

// findPageByID counts the documents of col matching filter and reads those of one page in
// the order of their id field.
func findPageByID[T any](ctx context.Context, col *mongo.Collection, filter bson.D, offset, limit int) ([]T, int, error) {
	n, err := col.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if limit == 0 || int64(offset) >= n {
		return nil, int(n), nil
	}
	opts := options.Find().SetSort(bson.D{{Key: "id", Value: 1}}).SetSkip(int64(max(offset, 0)))
	if limit > 0 {
		opts.SetLimit(int64(limit))
	}
	cur, err := col.Find(ctx, filter, opts)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, 0, mapErr(err)
	}
	return docs, int(n), nil
}

// checkMembers returns ErrUnknownMember unless every one of ids is a user of the integration.
func (s *Store) checkMembers(ctx context.Context, orgID, integrationID string, ids []string) error {
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, key(orgID, id))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	found := 0
	for _, chunk := range chunks(keys) {
		filter := append(memberFilter(orgID, integrationID), bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}})
		n, err := s.users.CountDocuments(ctx, filter)
		if err != nil {
			return mapErr(err)
		}
		found += int(n)
	}
	if found != len(keys) {
		return fmt.Errorf("%d of %d: %w", len(keys)-found, len(keys), storage.ErrUnknownMember)
	}
	return nil
}

// CreateGroup inserts the group after checking its integration and members; the primary key
// and the unique name index refuse a taken id or display name with ErrConflict.
func (s *Store) CreateGroup(ctx context.Context, g storage.Group) error {
	if err := s.groupIntegrationExists(ctx, g.OrgID, g.IntegrationID); err != nil {
		return fmt.Errorf("create group %s: %w", g.ID, err)
	}
	if err := s.checkMembers(ctx, g.OrgID, g.IntegrationID, g.Members); err != nil {
		return fmt.Errorf("create group %s: %w", g.ID, err)
	}
	if _, err := s.db.Collection(colGroups).InsertOne(ctx, newGroupDoc(g)); err != nil {
		return fmt.Errorf("create group %s: %w", g.ID, mapErr(err))
	}
	return nil
}

func groupFilter(orgID, integrationID, id string) bson.D {
	return bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}, {Key: "integration_id", Value: integrationID}}
}

// GetGroup returns the integration's group id, or ErrNotFound.
func (s *Store) GetGroup(ctx context.Context, orgID, integrationID, id string) (storage.Group, error) {
	d, err := findOne[groupDoc](ctx, s.db.Collection(colGroups), groupFilter(orgID, integrationID, id))
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group %s: %w", id, err)
	}
	return d.record(), nil
}

// GroupByName returns the integration's group with this display name, ignoring letter case.
func (s *Store) GroupByName(ctx context.Context, orgID, integrationID, name string) (storage.Group, error) {
	filter := append(integrationFilter(orgID, integrationID), bson.E{Key: "name_key", Value: strings.ToLower(name)})
	d, err := findOne[groupDoc](ctx, s.db.Collection(colGroups), filter)
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group by name: %w", err)
	}
	return d.record(), nil
}

// IntegrationGroups pages through the integration's groups by ID.
func (s *Store) IntegrationGroups(ctx context.Context, orgID, integrationID string, offset, limit int) ([]storage.Group, int, error) {
	docs, total, err := findPageByID[groupDoc](ctx, s.db.Collection(colGroups), integrationFilter(orgID, integrationID), offset, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list groups of integration %s: %w", integrationID, err)
	}
	out := make([]storage.Group, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, total, nil
}

// UpdateGroup reads the group, applies fn, checks the members it added, and $sets the result
// conditioned on the version it read, reading again when another writer came first.
func (s *Store) UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*storage.Group) error) (storage.Group, error) {
	groups := s.db.Collection(colGroups)
	for range maxCASAttempts {
		d, err := findOne[groupDoc](ctx, groups, groupFilter(orgID, integrationID, id))
		if err != nil {
			return storage.Group{}, fmt.Errorf("update group %s: %w", id, err)
		}
		old := d.record()
		g := old
		g.Members = slices.Clone(old.Members)
		g.MemberDisplays = maps.Clone(old.MemberDisplays)
		if err := fn(&g); err != nil {
			return storage.Group{}, fmt.Errorf("update group %s: %w", id, err)
		}
		g.OrgID, g.ID, g.IntegrationID, g.CreatedAt = old.OrgID, old.ID, old.IntegrationID, old.CreatedAt
		if len(g.MemberDisplays) == 0 {
			g.MemberDisplays = nil
		}
		if reflect.DeepEqual(g, old) {
			return g, nil
		}
		if nameKey := strings.ToLower(g.DisplayName); nameKey != d.NameKey {
			filter := append(integrationFilter(orgID, integrationID), bson.E{Key: "name_key", Value: nameKey})
			if taken, err := exists(ctx, groups, filter); err != nil || taken {
				return storage.Group{}, fmt.Errorf("update group %s: display name: %w", id, cmp.Or(err, storage.ErrConflict))
			}
		}
		was := make(map[string]bool, len(old.Members))
		for _, m := range old.Members {
			was[m] = true
		}
		added := slices.DeleteFunc(slices.Clone(g.Members), func(m string) bool { return was[m] })
		if err := s.checkMembers(ctx, orgID, integrationID, added); err != nil {
			return storage.Group{}, fmt.Errorf("update group %s: %w", id, err)
		}
		set := bson.D{
			{Key: "display_name", Value: g.DisplayName},
			{Key: "name_key", Value: strings.ToLower(g.DisplayName)},
			{Key: "external_id", Value: g.ExternalID},
			{Key: "members", Value: g.Members},
			{Key: "member_displays", Value: memberDisplayDocs(g.MemberDisplays)},
			{Key: "modified_at", Value: g.ModifiedAt},
			{Key: "version", Value: newVersion()},
		}
		filter := append(groupFilter(orgID, integrationID, id), bson.E{Key: "version", Value: versionFilter(d.Version)})
		res, err := groups.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
		if err != nil {
			return storage.Group{}, fmt.Errorf("update group %s: %w", id, mapErr(err))
		}
		if res.MatchedCount == 1 {
			return g, nil
		}
	}
	return storage.Group{}, fmt.Errorf("update group %s: changed by others %d times in a row: %w", id, maxCASAttempts, storage.ErrUnavailable)
}

// DeleteGroup removes the integration's group id and its group grants, or returns
// ErrNotFound. The grants go after the group too: one racing the delete may have slipped in
// (SetGroupGrant checks the group, then inserts).
func (s *Store) DeleteGroup(ctx context.Context, orgID, integrationID, id string) error {
	res, err := s.db.Collection(colGroups).DeleteOne(ctx, groupFilter(orgID, integrationID, id))
	if err != nil {
		return fmt.Errorf("delete group %s: %w", id, mapErr(err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete group %s: %w", id, storage.ErrNotFound)
	}
	if err := s.deleteGroupGrants(ctx, orgID, bson.E{Key: "group_id", Value: id}); err != nil {
		return fmt.Errorf("delete group %s: %w", id, err)
	}
	return nil
}

// UserGroups returns the groups the organization's user is a member of, ordered by ID.
func (s *Store) UserGroups(ctx context.Context, orgID, userID string) ([]storage.Group, error) {
	docs, err := findAll[groupDoc](ctx, s.db.Collection(colGroups),
		bson.D{{Key: "org_id", Value: orgID}, {Key: "members", Value: userID}}, bson.D{{Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list groups of user %s: %w", userID, err)
	}
	out := make([]storage.Group, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out, nil
}
