package bolt

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

type userRecord struct {
	OrgID           string `json:"org_id"`
	ID              string `json:"id"`
	Email           string `json:"email"`
	First           string `json:"first"`
	Last            string `json:"last"`
	Active          bool   `json:"active"`
	IntegrationID   string `json:"integration_id"`
	IntegrationName string `json:"integration_name"`
	ImportedAt      int64  `json:"imported_at"`
	ModifiedAt      int64  `json:"modified_at"`
	ExternalID      string `json:"external_id,omitempty"`
	Attributes      []byte `json:"attributes,omitempty"`
}

func (r userRecord) user() storage.User {
	return storage.User{
		OrgID: r.OrgID, ID: r.ID, Email: r.Email, First: r.First, Last: r.Last, Active: r.Active,
		IntegrationID: r.IntegrationID, IntegrationName: r.IntegrationName,
		ImportedAt: fromMillis(r.ImportedAt), ModifiedAt: fromMillis(r.ModifiedAt),
		ExternalID: r.ExternalID, Attributes: r.Attributes,
	}
}

// emailKey is the key of the index that matches users by email within an integration. The email
// is lower-cased because the match ignores letter case.
func emailKey(orgID, integrationID, email string) []byte {
	return key(orgID, integrationID, strings.ToLower(email))
}

// ImportUsers upserts users into the organization from one of its integrations and returns the
// stored users in the order of the input, as storage.UserStore describes. The whole import is
// one transaction: on an id conflict, or attributes for a SCIM integration, nothing is changed.
// Items are applied in order, each seeing what the earlier ones wrote, which is how a later item
// with the same email wins; every place in the result holds the user as stored at the end.
func (s *Store) ImportUsers(ctx context.Context, orgID, integrationID string, items []storage.UserImport, now time.Time) ([]storage.User, error) {
	var out []storage.User
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		integration, err := getIntegration(tx, orgID, integrationID)
		if err != nil {
			return fmt.Errorf("auth integration %s: %w", integrationID, err)
		}
		users, emails := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails)
		ids := make([]string, len(items))
		for i, item := range items {
			// Errors name the item by its place, not its email, which is personal data and
			// would end up in logs.
			if item.Attributes != nil && integration.Type == storage.IntegrationSCIM {
				return fmt.Errorf("item %d: %w", i, storage.ErrSCIMAttributes)
			}
			id, err := importUser(users, emails, integration, item, millis(now))
			if err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
			ids[i] = id
		}
		out = make([]storage.User, len(ids))
		for i, id := range ids {
			if out[i], err = getUser(tx, orgID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import %d users: %w", len(items), err)
	}
	return out, nil
}

// importUser applies one item of an import and returns the id of the user it matched or created.
func importUser(users, emails *bbolt.Bucket, integration storage.AuthIntegration, item storage.UserImport, now int64) (string, error) {
	orgID := integration.OrgID
	ek := emailKey(orgID, integration.ID, item.Email)
	if id := emails.Get(ek); id != nil {
		rec, ok, err := get[userRecord](users, key(orgID, string(id)))
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("email index names missing user %s", id)
		}
		if item.ID != "" && item.ID != rec.ID {
			return "", fmt.Errorf("id %s given for user %s: %w", item.ID, rec.ID, storage.ErrConflict)
		}
		attrs := rec.Attributes
		if item.Attributes != nil {
			attrs = storage.ImportedAttributes(item.Attributes)
		}
		if rec.Email == item.Email && rec.First == item.First && rec.Last == item.Last && bytes.Equal(rec.Attributes, attrs) {
			return rec.ID, nil
		}
		rec.Email, rec.First, rec.Last, rec.Attributes, rec.ModifiedAt = item.Email, item.First, item.Last, attrs, now
		return rec.ID, put(users, key(orgID, rec.ID), rec)
	}

	id := item.ID
	if id == "" {
		id = uid.New()
	}
	if users.Get(key(orgID, id)) != nil {
		return "", fmt.Errorf("user id %s taken: %w", id, storage.ErrConflict)
	}
	if err := emails.Put(ek, []byte(id)); err != nil {
		return "", err
	}
	return id, put(users, key(orgID, id), userRecord{
		OrgID: orgID, ID: id, Email: item.Email, First: item.First, Last: item.Last, Active: true,
		IntegrationID: integration.ID, IntegrationName: integration.Name, ImportedAt: now, ModifiedAt: now,
		Attributes: storage.ImportedAttributes(item.Attributes),
	})
}

// GetUser returns the organization's user with this id, or storage.ErrNotFound.
func (s *Store) GetUser(ctx context.Context, orgID, id string) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		u, err = getUser(tx, orgID, id)
		return err
	})
	if err != nil {
		return storage.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return u, nil
}

func getUser(tx *bbolt.Tx, orgID, id string) (storage.User, error) {
	rec, ok, err := get[userRecord](tx.Bucket(bucketUsers), key(orgID, id))
	if err != nil {
		return storage.User{}, err
	}
	if !ok {
		return storage.User{}, storage.ErrNotFound
	}
	return rec.user(), nil
}

// ListUsers returns the organization's users, ordered by ImportedAt then ID.
func (s *Store) ListUsers(ctx context.Context, orgID string) ([]storage.User, error) {
	var recs []userRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scan[userRecord](tx.Bucket(bucketUsers), key(orgID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	slices.SortFunc(recs, func(a, b userRecord) int {
		return cmp.Or(cmp.Compare(a.ImportedAt, b.ImportedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]storage.User, len(recs))
	for i, r := range recs {
		out[i] = r.user()
	}
	return out, nil
}
