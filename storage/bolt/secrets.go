package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// ReplaceSecret sets the resource's Secret and Metadata in one transaction. It returns
// storage.ErrNotFound if the organization has no resource with this id.
func (s *Store) ReplaceSecret(ctx context.Context, orgID, id string, secret []byte, metadata map[string]string) error {
	err := s.updateResource(ctx, orgID, id, func(rec *resourceRecord) error {
		rec.Secret, rec.Metadata = bytes.Clone(secret), maps.Clone(metadata)
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace secret of resource %s: %w", id, err)
	}
	return nil
}

// SwapSecret sets the resource's Secret to next if it is still old, in one transaction. It
// returns storage.ErrNotFound if there is no such resource, and storage.ErrConflict if its
// secret has changed.
func (s *Store) SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error {
	err := s.updateResource(ctx, orgID, id, func(rec *resourceRecord) error {
		if !bytes.Equal(rec.Secret, old) {
			return fmt.Errorf("secret changed since it was read: %w", storage.ErrConflict)
		}
		rec.Secret = bytes.Clone(next)
		return nil
	})
	if err != nil {
		return fmt.Errorf("swap secret of resource %s: %w", id, err)
	}
	return nil
}

// updateResource reads the organization's resource id, lets change alter it, and writes it
// back, all in one transaction.
func (s *Store) updateResource(ctx context.Context, orgID, id string, change func(*resourceRecord) error) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		resources := tx.Bucket(bucketResources)
		rec, ok, err := get[resourceRecord](resources, key(orgID, id))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		if err := change(&rec); err != nil {
			return err
		}
		return put(resources, key(orgID, id), rec)
	})
}

// ResourcesWithSecrets returns every organization's resources that have a secret, ordered by
// OrgID then ID. It reads the whole resources bucket: it serves a rare administrative task.
func (s *Store) ResourcesWithSecrets(ctx context.Context) ([]storage.Resource, error) {
	var out []storage.Resource
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketResources).ForEach(func(k, data []byte) error {
			var rec resourceRecord
			if err := json.Unmarshal(data, &rec); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			if len(rec.Secret) > 0 {
				out = append(out, rec.resource())
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list resources with secrets: %w", err)
	}
	slices.SortFunc(out, func(a, b storage.Resource) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
