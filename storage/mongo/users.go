package mongo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// userDoc is a user in the users collection, with _id key(org_id, id). EmailKey is the
// lower-cased email: the unique index (org_id, integration_id, email_key) makes "one user per
// email within an integration, ignoring case" hold even against racing imports.
type userDoc struct {
	Key             string    `bson:"_id"`
	OrgID           string    `bson:"org_id"`
	ID              string    `bson:"id"`
	Email           string    `bson:"email"`
	EmailKey        string    `bson:"email_key"`
	First           string    `bson:"first"`
	Last            string    `bson:"last"`
	Active          bool      `bson:"active"`
	IntegrationID   string    `bson:"integration_id"`
	IntegrationName string    `bson:"integration_name"`
	ImportedAt      time.Time `bson:"imported_at"`
	ModifiedAt      time.Time `bson:"modified_at"`
	ExternalID      string    `bson:"external_id"`
	Attributes      []byte    `bson:"attributes"`
	// Version changes with every write, so that UpdateUser can write conditionally on it.
	Version int64 `bson:"version"`
}

func (d userDoc) record() storage.User {
	return storage.User{
		OrgID:           d.OrgID,
		ID:              d.ID,
		Email:           d.Email,
		First:           d.First,
		Last:            d.Last,
		Active:          d.Active,
		IntegrationID:   d.IntegrationID,
		IntegrationName: d.IntegrationName,
		ImportedAt:      d.ImportedAt.UTC(),
		ModifiedAt:      d.ModifiedAt.UTC(),
		ExternalID:      d.ExternalID,
		Attributes:      d.Attributes,
	}
}

// emailKey is what emails are matched on.
func emailKey(email string) string { return strings.ToLower(email) }

func userFilter(orgID, id string) bson.D {
	return bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}}
}

// userExists returns nil if the organization has the user, and an error wrapping
// ErrUserNotFound if not.
func (s *Store) userExists(ctx context.Context, orgID, id string) error {
	ok, err := exists(ctx, s.users, userFilter(orgID, id))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", id, storage.ErrUserNotFound)
	}
	return nil
}

// GetUser returns the organization's user with this id, or ErrNotFound.
func (s *Store) GetUser(ctx context.Context, orgID, id string) (storage.User, error) {
	doc, err := findOne[userDoc](ctx, s.users, userFilter(orgID, id))
	if err != nil {
		return storage.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return doc.record(), nil
}

// ListUsers returns the organization's users, ordered by ImportedAt then ID.
func (s *Store) ListUsers(ctx context.Context, orgID string) ([]storage.User, error) {
	docs, err := findAll[userDoc](ctx, s.users, bson.D{{Key: "org_id", Value: orgID}},
		bson.D{{Key: "imported_at", Value: 1}, {Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]storage.User, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
	}
	return out, nil
}

// updateBatch bounds the statements of one update command. FerretDB v1 keeps a backend
// connection open for each statement of an update command until the command ends, out of a pool
// of 100, so a command of about a hundred statements waits forever for a connection.
const updateBatch = 32

// importEntry is one user an import touches: its document as it will be stored, and as it was
// read (nil for a new user).
type importEntry struct {
	doc    userDoc
	orig   *userDoc
	queued bool // in the list of stored users to update
}

// ImportUsers upserts users into the organization from one of its integrations; see
// storage.UserStore for the rules. Without transactions it works in two phases: it reads every
// user the import could match or collide with, applies the items in order to that copy (so
// later items win, and every conflict is found before anything is written), then inserts the
// new users and $sets the changed ones by _id. A user created by a racing import between the
// phases makes the insert fail on the unique email or id, which is reported as ErrConflict;
// only then may part of the import have been applied.
func (s *Store) ImportUsers(ctx context.Context, orgID, integrationID string, users []storage.UserImport, now time.Time) ([]storage.User, error) {
	integ, err := findOne[authIntegrationDoc](ctx, s.authIntegrations,
		bson.D{{Key: "_id", Value: key(orgID, integrationID)}, {Key: "org_id", Value: orgID}})
	if err != nil {
		return nil, fmt.Errorf("import users: auth integration %s: %w", integrationID, err)
	}
	byEmail, taken, err := s.loadImportUsers(ctx, orgID, integrationID, users)
	if err != nil {
		return nil, fmt.Errorf("import users: %w", err)
	}

	touched := make([]*importEntry, len(users))
	var created, matched []*importEntry
	for i, u := range users {
		if u.Attributes != nil && integ.Type == storage.IntegrationSCIM {
			return nil, fmt.Errorf("import users: item %d: %w", i, storage.ErrSCIMAttributes)
		}
		k := emailKey(u.Email)
		e, ok := byEmail[k]
		if ok {
			if u.ID != "" && u.ID != e.doc.ID {
				return nil, fmt.Errorf("import users: item %d: id %q differs from %q, the user with this email: %w",
					i, u.ID, e.doc.ID, storage.ErrConflict)
			}
			if e.orig != nil && !e.queued {
				e.queued = true
				matched = append(matched, e)
			}
			e.doc.Email, e.doc.First, e.doc.Last = u.Email, u.First, u.Last
			if u.Attributes != nil {
				e.doc.Attributes = storage.ImportedAttributes(u.Attributes)
			}
		} else {
			id := u.ID
			if id == "" {
				id = uid.New()
			} else if taken[id] {
				return nil, fmt.Errorf("import users: item %d: id %q: %w", i, u.ID, storage.ErrConflict)
			}
			taken[id] = true
			e = &importEntry{doc: userDoc{
				Key:             key(orgID, id),
				OrgID:           orgID,
				ID:              id,
				Email:           u.Email,
				EmailKey:        k,
				First:           u.First,
				Last:            u.Last,
				Active:          true,
				IntegrationID:   integrationID,
				IntegrationName: integ.Name,
				ImportedAt:      now,
				ModifiedAt:      now,
				Attributes:      storage.ImportedAttributes(u.Attributes),
			}}
			byEmail[k] = e
			created = append(created, e)
		}
		touched[i] = e
	}

	if len(created) > 0 {
		docs := make([]any, len(created))
		for i, e := range created {
			docs[i] = e.doc
		}
		if _, err := s.users.InsertMany(ctx, docs); err != nil {
			return nil, fmt.Errorf("import users: insert %d: %w", len(docs), mapErr(err))
		}
	}
	var updates []mongo.WriteModel
	for _, e := range matched {
		d, o := &e.doc, e.orig
		if d.Email == o.Email && d.First == o.First && d.Last == o.Last && bytes.Equal(d.Attributes, o.Attributes) {
			continue // unchanged, or changed back by a later item: ModifiedAt stays
		}
		d.ModifiedAt = now
		set := bson.D{
			{Key: "email", Value: d.Email},
			{Key: "first", Value: d.First},
			{Key: "last", Value: d.Last},
			{Key: "attributes", Value: d.Attributes},
			{Key: "modified_at", Value: d.ModifiedAt},
			{Key: "version", Value: newVersion()},
		}
		updates = append(updates, mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: d.Key}, {Key: "org_id", Value: orgID}}).
			SetUpdate(bson.D{{Key: "$set", Value: set}}))
	}
	for len(updates) > 0 {
		batch := updates[:min(len(updates), updateBatch)]
		updates = updates[len(batch):]
		if _, err := s.users.BulkWrite(ctx, batch, options.BulkWrite().SetOrdered(false)); err != nil {
			return nil, fmt.Errorf("import users: update %d: %w", len(batch), mapErr(err))
		}
	}

	out := make([]storage.User, len(users))
	for i, e := range touched {
		out[i] = e.doc.record()
	}
	return out, nil
}

// loadImportUsers reads what an import of users could match or collide with: the
// integration's users with the items' emails, keyed by email key, and which of the items'
// explicit ids the organization already uses (the matched users' ids included).
func (s *Store) loadImportUsers(ctx context.Context, orgID, integrationID string, users []storage.UserImport) (map[string]*importEntry, map[string]bool, error) {
	var emailKeys, idKeys []string
	seenEmail := make(map[string]bool, len(users))
	seenID := make(map[string]bool)
	for _, u := range users {
		if k := emailKey(u.Email); !seenEmail[k] {
			seenEmail[k] = true
			emailKeys = append(emailKeys, k)
		}
		if u.ID != "" && !seenID[u.ID] {
			seenID[u.ID] = true
			idKeys = append(idKeys, key(orgID, u.ID))
		}
	}

	byEmail := make(map[string]*importEntry, len(users))
	taken := make(map[string]bool, len(users))
	for _, chunk := range chunks(emailKeys) {
		filter := bson.D{
			{Key: "org_id", Value: orgID},
			{Key: "integration_id", Value: integrationID},
			{Key: "email_key", Value: bson.D{{Key: "$in", Value: chunk}}},
		}
		docs, err := findAll[userDoc](ctx, s.users, filter, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("find users by email: %w", err)
		}
		for _, d := range docs {
			orig := d
			byEmail[d.EmailKey] = &importEntry{doc: d, orig: &orig}
			taken[d.ID] = true
		}
	}
	for _, chunk := range chunks(idKeys) {
		filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}, {Key: "org_id", Value: orgID}}
		docs, err := findAll[userDoc](ctx, s.users, filter, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("find users by id: %w", err)
		}
		for _, d := range docs {
			taken[d.ID] = true
		}
	}
	return byEmail, taken, nil
}
