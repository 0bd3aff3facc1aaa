package bolt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

type integrationRecord struct {
	OrgID     string `json:"org_id"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Metadata  string `json:"metadata,omitempty"`
	Type      string `json:"type"`
	CreatedAt int64  `json:"created_at"`
}

func (r integrationRecord) integration() storage.AuthIntegration {
	return storage.AuthIntegration{
		OrgID: r.OrgID, ID: r.ID, Name: r.Name, Metadata: r.Metadata, Type: r.Type, CreatedAt: fromMillis(r.CreatedAt),
	}
}

// CreateAuthIntegration stores a new authentication integration. It returns
// storage.ErrConflict if the id is taken in the organization or the organization already has
// one with the same Name.
func (s *Store) CreateAuthIntegration(ctx context.Context, a storage.AuthIntegration) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		integrations, names := tx.Bucket(bucketIntegrations), tx.Bucket(bucketIntegrationNames)
		if integrations.Get(key(a.OrgID, a.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		if names.Get(key(a.OrgID, a.Name)) != nil {
			return fmt.Errorf("name %q taken: %w", a.Name, storage.ErrConflict)
		}
		if err := names.Put(key(a.OrgID, a.Name), []byte(a.ID)); err != nil {
			return err
		}
		return put(integrations, key(a.OrgID, a.ID), integrationRecord{
			OrgID: a.OrgID, ID: a.ID, Name: a.Name, Metadata: a.Metadata, Type: a.Type, CreatedAt: millis(a.CreatedAt),
		})
	})
	if err != nil {
		return fmt.Errorf("create auth integration %s: %w", a.ID, err)
	}
	return nil
}

// GetAuthIntegration returns the organization's integration with this id, or
// storage.ErrNotFound.
func (s *Store) GetAuthIntegration(ctx context.Context, orgID, id string) (storage.AuthIntegration, error) {
	var a storage.AuthIntegration
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		a, err = getIntegration(tx, orgID, id)
		return err
	})
	if err != nil {
		return storage.AuthIntegration{}, fmt.Errorf("get auth integration %s: %w", id, err)
	}
	return a, nil
}

func getIntegration(tx *bbolt.Tx, orgID, id string) (storage.AuthIntegration, error) {
	rec, ok, err := get[integrationRecord](tx.Bucket(bucketIntegrations), key(orgID, id))
	if err != nil {
		return storage.AuthIntegration{}, err
	}
	if !ok {
		return storage.AuthIntegration{}, storage.ErrNotFound
	}
	return rec.integration(), nil
}

// ListAuthIntegrations returns the organization's integrations, ordered by CreatedAt then ID.
func (s *Store) ListAuthIntegrations(ctx context.Context, orgID string) ([]storage.AuthIntegration, error) {
	var recs []integrationRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scan[integrationRecord](tx.Bucket(bucketIntegrations), key(orgID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list auth integrations: %w", err)
	}
	slices.SortFunc(recs, func(a, b integrationRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]storage.AuthIntegration, len(recs))
	for i, r := range recs {
		out[i] = r.integration()
	}
	return out, nil
}

// DeleteAuthIntegration removes the integration, its token, its users and its groups, in one
// transaction.
func (s *Store) DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (storage.RemovedIntegration, error) {
	var out storage.RemovedIntegration
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		a, err := getIntegration(tx, orgID, id)
		if err != nil {
			return err
		}
		out = storage.RemovedIntegration{Integration: a}
		if err := deleteSCIMTokens(tx, orgID, id); err != nil {
			return err
		}
		// Keys are collected first: bbolt's cursor may skip keys if the bucket changes under it.
		var groups []groupRecord
		for k, data := range under(tx.Bucket(bucketGroups), key(orgID, id)) {
			var rec groupRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			groups = append(groups, rec)
		}
		for _, rec := range groups {
			if err := deleteGroup(tx, rec); err != nil {
				return err
			}
			out.Groups = append(out.Groups, rec.ID)
		}
		var userIDs []string
		for _, userID := range under(tx.Bucket(bucketUserEmails), key(orgID, id)) {
			userIDs = append(userIDs, string(userID))
		}
		slices.Sort(userIDs)
		for _, userID := range userIDs {
			u, err := getUser(tx, orgID, userID)
			if err != nil {
				return fmt.Errorf("email index names user %s: %w", userID, err)
			}
			if err := deleteUser(tx, u, millis(now)); err != nil {
				return err
			}
		}
		out.Users = userIDs
		if err := tx.Bucket(bucketIntegrationNames).Delete(key(orgID, a.Name)); err != nil {
			return err
		}
		return tx.Bucket(bucketIntegrations).Delete(key(orgID, id))
	})
	if err != nil {
		return storage.RemovedIntegration{}, fmt.Errorf("delete auth integration %s: %w", id, err)
	}
	return out, nil
}
