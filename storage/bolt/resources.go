package bolt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

type resourceRecord struct {
	OrgID       string            `json:"org_id"`
	ID          string            `json:"id"`
	Kind        storage.Kind      `json:"kind"`
	Source      string            `json:"source"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Secret      []byte            `json:"secret,omitempty"`
	CreatedAt   int64             `json:"created_at"`
}

func newResourceRecord(r storage.Resource) resourceRecord {
	return resourceRecord{
		OrgID: r.OrgID, ID: r.ID, Kind: r.Kind, Source: r.Source, Name: r.Name, Description: r.Description,
		Metadata: r.Metadata, Secret: r.Secret, CreatedAt: millis(r.CreatedAt),
	}
}

func (r resourceRecord) resource() storage.Resource {
	return storage.Resource{
		OrgID: r.OrgID, ID: r.ID, Kind: r.Kind, Source: r.Source, Name: r.Name, Description: r.Description,
		Metadata: r.Metadata, Secret: r.Secret, CreatedAt: fromMillis(r.CreatedAt),
	}
}

func (r resourceRecord) nameKey() []byte { return key(r.OrgID, string(r.Kind), r.Source, r.Name) }

// CreateResource stores a new resource. It returns storage.ErrConflict if r.ID is taken in the
// organization, or if the organization already has a resource of the same Kind, Source and
// Name.
func (s *Store) CreateResource(ctx context.Context, r storage.Resource) error {
	rec := newResourceRecord(r)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		resources, names := tx.Bucket(bucketResources), tx.Bucket(bucketResourceNames)
		if resources.Get(key(r.OrgID, r.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		if names.Get(rec.nameKey()) != nil {
			return fmt.Errorf("%s %q of %s taken: %w", r.Kind, r.Name, r.Source, storage.ErrConflict)
		}
		if err := names.Put(rec.nameKey(), []byte(r.ID)); err != nil {
			return err
		}
		return put(resources, key(r.OrgID, r.ID), rec)
	})
	if err != nil {
		return fmt.Errorf("create resource %s: %w", r.ID, err)
	}
	return nil
}

// GetResource returns the organization's resource with this id, of any kind, or
// storage.ErrNotFound.
func (s *Store) GetResource(ctx context.Context, orgID, id string) (storage.Resource, error) {
	var r storage.Resource
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		r, err = getResource(tx, orgID, id)
		return err
	})
	if err != nil {
		return storage.Resource{}, fmt.Errorf("get resource %s: %w", id, err)
	}
	return r, nil
}

func getResource(tx *bbolt.Tx, orgID, id string) (storage.Resource, error) {
	rec, ok, err := get[resourceRecord](tx.Bucket(bucketResources), key(orgID, id))
	if err != nil {
		return storage.Resource{}, err
	}
	if !ok {
		return storage.Resource{}, storage.ErrNotFound
	}
	return rec.resource(), nil
}

// GetResources returns those of ids that name resources of the organization, in the order of
// ids, each once. Ids that name nothing are left out.
func (s *Store) GetResources(ctx context.Context, orgID string, ids []string) ([]storage.Resource, error) {
	var out []storage.Resource
	// The journal holds no resources: a revoke's answer reads their names without applying it.
	err := s.viewData(ctx, func(tx *bbolt.Tx) error {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			r, err := getResource(tx, orgID, id)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get %d resources: %w", len(ids), err)
	}
	return out, nil
}

// ResourceByName returns the organization's resource of this kind, source and exact name, or
// storage.ErrNotFound.
func (s *Store) ResourceByName(ctx context.Context, orgID string, kind storage.Kind, source, name string) (storage.Resource, error) {
	var r storage.Resource
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketResourceNames).Get(key(orgID, string(kind), source, name))
		if id == nil {
			return storage.ErrNotFound
		}
		var err error
		r, err = getResource(tx, orgID, string(id))
		return err
	})
	if err != nil {
		return storage.Resource{}, fmt.Errorf("get %s %q of %s: %w", kind, name, source, err)
	}
	return r, nil
}

// ListResources returns the organization's resources of one kind (every kind if kind is empty),
// ordered by CreatedAt then ID.
func (s *Store) ListResources(ctx context.Context, orgID string, kind storage.Kind) ([]storage.Resource, error) {
	var recs []resourceRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scan[resourceRecord](tx.Bucket(bucketResources), key(orgID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list resources of kind %q: %w", kind, err)
	}
	if kind != "" {
		recs = slices.DeleteFunc(recs, func(r resourceRecord) bool { return r.Kind != kind })
	}
	slices.SortFunc(recs, func(a, b resourceRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]storage.Resource, len(recs))
	for i, r := range recs {
		out[i] = r.resource()
	}
	return out, nil
}

// DeleteResource removes every grant of the resource and then the resource itself, in one
// transaction. It returns storage.ErrNotFound if the organization has no resource with this id.
func (s *Store) DeleteResource(ctx context.Context, orgID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		resources := tx.Bucket(bucketResources)
		rec, ok, err := get[resourceRecord](resources, key(orgID, id))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		if err := deleteGrantsOf(tx, orgID, id); err != nil {
			return err
		}
		if err := deleteGroupGrantsOfResource(tx, orgID, id); err != nil {
			return err
		}
		if err := tx.Bucket(bucketResourceNames).Delete(rec.nameKey()); err != nil {
			return err
		}
		return resources.Delete(key(orgID, id))
	})
	if err != nil {
		return fmt.Errorf("delete resource %s: %w", id, err)
	}
	return nil
}
