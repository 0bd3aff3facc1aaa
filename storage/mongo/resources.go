package mongo

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// resourceDoc is a registered resource in the resources collection, with _id
// key(org_id, id). The unique index (org_id, kind, source, name) enforces one name per kind and
// source in an organization.
type resourceDoc struct {
	Key         string    `bson:"_id"`
	OrgID       string    `bson:"org_id"`
	ID          string    `bson:"id"`
	Kind        string    `bson:"kind"`
	Source      string    `bson:"source"`
	Name        string    `bson:"name"`
	Description string    `bson:"description"`
	Metadata    []metaKV  `bson:"metadata"`
	Secret      []byte    `bson:"secret"`
	CreatedAt   time.Time `bson:"created_at"`
}

// metaKV is one metadata entry. Metadata is stored as a list of pairs rather than as a
// sub-document because its keys are data: a key with a dot or a leading dollar, or an empty
// one, is not a field name every server accepts.
type metaKV struct {
	K string `bson:"k"`
	V string `bson:"v"`
}

// encodeMetadata turns m into pairs sorted by key. A nil map stays nil (stored as null) and an
// empty one becomes an empty list, so that each comes back as it was given.
func encodeMetadata(m map[string]string) []metaKV {
	if m == nil {
		return nil
	}
	kvs := make([]metaKV, 0, len(m))
	for k, v := range m {
		kvs = append(kvs, metaKV{K: k, V: v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].K < kvs[j].K })
	return kvs
}

func decodeMetadata(kvs []metaKV) map[string]string {
	if kvs == nil {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.K] = kv.V
	}
	return m
}

func newResourceDoc(r storage.Resource) resourceDoc {
	return resourceDoc{
		Key:         key(r.OrgID, r.ID),
		OrgID:       r.OrgID,
		ID:          r.ID,
		Kind:        string(r.Kind),
		Source:      r.Source,
		Name:        r.Name,
		Description: r.Description,
		Metadata:    encodeMetadata(r.Metadata),
		Secret:      r.Secret,
		CreatedAt:   r.CreatedAt,
	}
}

func (d resourceDoc) record() storage.Resource {
	return storage.Resource{
		OrgID:       d.OrgID,
		ID:          d.ID,
		Kind:        storage.Kind(d.Kind),
		Source:      d.Source,
		Name:        d.Name,
		Description: d.Description,
		Metadata:    decodeMetadata(d.Metadata),
		Secret:      d.Secret,
		CreatedAt:   d.CreatedAt.UTC(),
	}
}

// resourceFilter selects the organization's resource with this id. It names org_id as well
// as _id so that the organization is checked by the query, not only by the key's layout.
func resourceFilter(orgID, id string) bson.D {
	return bson.D{{Key: "_id", Value: key(orgID, id)}, {Key: "org_id", Value: orgID}}
}

// CreateResource stores a new resource; the _id and the unique name index make a taken id or
// name fail the insert with ErrConflict.
func (s *Store) CreateResource(ctx context.Context, r storage.Resource) error {
	if _, err := s.resources.InsertOne(ctx, newResourceDoc(r)); err != nil {
		return fmt.Errorf("create resource %s: %w", r.ID, mapErr(err))
	}
	return nil
}

// GetResource returns the organization's resource with this id, or ErrNotFound.
func (s *Store) GetResource(ctx context.Context, orgID, id string) (storage.Resource, error) {
	doc, err := findOne[resourceDoc](ctx, s.resources, resourceFilter(orgID, id))
	if err != nil {
		return storage.Resource{}, fmt.Errorf("get resource %s: %w", id, err)
	}
	return doc.record(), nil
}

// GetResources returns the organization's resources named by ids, in the order of ids, each
// once, leaving out ids that name nothing.
func (s *Store) GetResources(ctx context.Context, orgID string, ids []string) ([]storage.Resource, error) {
	keys := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, key(orgID, id))
		}
	}
	byID := make(map[string]resourceDoc, len(keys))
	for _, chunk := range chunks(keys) {
		filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}, {Key: "org_id", Value: orgID}}
		docs, err := findAll[resourceDoc](ctx, s.resources, filter, nil)
		if err != nil {
			return nil, fmt.Errorf("get %d resources: %w", len(ids), err)
		}
		for _, d := range docs {
			byID[d.ID] = d
		}
	}
	out := make([]storage.Resource, 0, len(byID))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d.record())
			delete(byID, id)
		}
	}
	return out, nil
}

// ResourceByName returns the organization's resource of this kind, source and exact name, or
// ErrNotFound.
func (s *Store) ResourceByName(ctx context.Context, orgID string, kind storage.Kind, source, name string) (storage.Resource, error) {
	filter := bson.D{
		{Key: "org_id", Value: orgID},
		{Key: "kind", Value: string(kind)},
		{Key: "source", Value: source},
		{Key: "name", Value: name},
	}
	doc, err := findOne[resourceDoc](ctx, s.resources, filter)
	if err != nil {
		return storage.Resource{}, fmt.Errorf("get %s %s/%q: %w", kind, source, name, err)
	}
	return doc.record(), nil
}

// ListResources returns the organization's resources of one kind, or of every kind if kind is
// empty, ordered by CreatedAt then ID.
func (s *Store) ListResources(ctx context.Context, orgID string, kind storage.Kind) ([]storage.Resource, error) {
	filter := bson.D{{Key: "org_id", Value: orgID}}
	if kind != "" {
		filter = append(filter, bson.E{Key: "kind", Value: string(kind)})
	}
	docs, err := findAll[resourceDoc](ctx, s.resources, filter, bson.D{{Key: "created_at", Value: 1}, {Key: "id", Value: 1}})
	if err != nil {
		return nil, fmt.Errorf("list resources: %w", err)
	}
	out := make([]storage.Resource, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
	}
	return out, nil
}

// DeleteResource removes the resource's grants, then the resource. Without transactions this
// is three steps: a grant inserted between the first clean-up and the delete would outlive the
// resource, so the grants are removed once more afterwards. A grant that still survives a crash
// between steps names a missing resource and so allows nothing. Existence is checked first so
// that an unknown id removes nothing.
func (s *Store) DeleteResource(ctx context.Context, orgID, id string) error {
	ok, err := exists(ctx, s.resources, resourceFilter(orgID, id))
	if err != nil {
		return fmt.Errorf("delete resource %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("delete resource %s: %w", id, storage.ErrNotFound)
	}
	if err := s.deleteResourceGrants(ctx, orgID, id); err != nil {
		return fmt.Errorf("delete resource %s: %w", id, err)
	}
	res, err := s.resources.DeleteOne(ctx, resourceFilter(orgID, id))
	if err != nil {
		return fmt.Errorf("delete resource %s: %w", id, mapErr(err))
	}
	if err := s.deleteResourceGrants(ctx, orgID, id); err != nil {
		return fmt.Errorf("delete resource %s: %w", id, err)
	}
	if res.DeletedCount == 0 {
		// Another request deleted it between the check and here.
		return fmt.Errorf("delete resource %s: %w", id, storage.ErrNotFound)
	}
	return nil
}
