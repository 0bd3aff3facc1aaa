package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The buckets of SCIM provisioning. A write transaction of bbolt is exclusive, so the
// read-modify-write of UpdateUser and UpdateGroup needs no version: reading and writing in one
// transaction is already atomic.
var (
	bucketSCIMTokens = []byte("scim_tokens") // hash → scimTokenRecord
	// user_external_ids finds an integration's users by their provider's id without a scan.
	bucketUserExternalIDs = []byte("user_external_ids") // org, integration id, external id, user id → user id
	bucketGroups          = []byte("groups")            // org, integration id, id → groupRecord
	bucketGroupNames      = []byte("group_names")       // org, integration id, lower-cased name → group id
	// groups_by_member finds a user's groups, which DeleteUser and UserGroups need.
	bucketGroupsByMember = []byte("groups_by_member") // org, user id, group id → the group's key in groups
	// group_ids keeps group ids unique in the organization, whatever their integration.
	bucketGroupIDs = []byte("group_ids") // org, id → integration id
)

type scimTokenRecord struct {
	ID            string `json:"id"`
	OrgID         string `json:"org_id"`
	IntegrationID string `json:"integration_id"`
	Prefix        string `json:"prefix"`
	Hash          string `json:"hash"`
	CreatedAt     int64  `json:"created_at"`
}

type groupRecord struct {
	OrgID         string   `json:"org_id"`
	ID            string   `json:"id"`
	IntegrationID string   `json:"integration_id"`
	DisplayName   string   `json:"display_name"`
	ExternalID    string   `json:"external_id,omitempty"`
	Members       []string `json:"members,omitempty"`
	// MemberDisplays are by member id.
	MemberDisplays map[string]string `json:"member_displays,omitempty"`
	CreatedAt      int64             `json:"created_at"`
	ModifiedAt     int64             `json:"modified_at"`
}

func newGroupRecord(g storage.Group) groupRecord {
	return groupRecord{
		OrgID: g.OrgID, ID: g.ID, IntegrationID: g.IntegrationID, DisplayName: g.DisplayName,
		ExternalID: g.ExternalID, Members: g.Members, MemberDisplays: nilIfEmpty(g.MemberDisplays),
		CreatedAt: millis(g.CreatedAt), ModifiedAt: millis(g.ModifiedAt),
	}
}

func (r groupRecord) group() storage.Group {
	return storage.Group{
		OrgID: r.OrgID, ID: r.ID, IntegrationID: r.IntegrationID, DisplayName: r.DisplayName,
		ExternalID: r.ExternalID, Members: r.Members, MemberDisplays: r.MemberDisplays,
		CreatedAt: fromMillis(r.CreatedAt), ModifiedAt: fromMillis(r.ModifiedAt),
	}
}

// nilIfEmpty is m, or nil when m is empty, so that a record reads the same either way.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (r groupRecord) key() []byte { return key(r.OrgID, r.IntegrationID, r.ID) }
func (r groupRecord) nameKey() []byte {
	return key(r.OrgID, r.IntegrationID, strings.ToLower(r.DisplayName))
}

func externalIDKey(orgID, integrationID, externalID, userID string) []byte {
	return key(orgID, integrationID, externalID, userID)
}

// CreateSCIMIntegration stores a new integration and its token in one transaction.
func (s *Store) CreateSCIMIntegration(ctx context.Context, a storage.AuthIntegration, t storage.SCIMToken) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		integrations, names, tokens := tx.Bucket(bucketIntegrations), tx.Bucket(bucketIntegrationNames), tx.Bucket(bucketSCIMTokens)
		if integrations.Get(key(a.OrgID, a.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		if names.Get(key(a.OrgID, a.Name)) != nil {
			return fmt.Errorf("name %q taken: %w", a.Name, storage.ErrConflict)
		}
		// Neither the hash nor the token's id is put in the message: the hash identifies a
		// secret.
		if tokens.Get(key(t.Hash)) != nil {
			return fmt.Errorf("token hash taken: %w", storage.ErrConflict)
		}
		if err := names.Put(key(a.OrgID, a.Name), []byte(a.ID)); err != nil {
			return err
		}
		if err := put(integrations, key(a.OrgID, a.ID), integrationRecord{
			OrgID: a.OrgID, ID: a.ID, Name: a.Name, Metadata: a.Metadata, Type: a.Type, CreatedAt: millis(a.CreatedAt),
		}); err != nil {
			return err
		}
		return put(tokens, key(t.Hash), scimTokenRecord{
			ID: t.ID, OrgID: t.OrgID, IntegrationID: t.IntegrationID, Prefix: t.Prefix, Hash: t.Hash, CreatedAt: millis(t.CreatedAt),
		})
	})
	if err != nil {
		return fmt.Errorf("create scim integration %s: %w", a.ID, err)
	}
	return nil
}

// SCIMTokenByHash returns the token whose Hash is hash, or storage.ErrNotFound.
func (s *Store) SCIMTokenByHash(ctx context.Context, hash string) (storage.SCIMToken, error) {
	var t storage.SCIMToken
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		r, ok, err := get[scimTokenRecord](tx.Bucket(bucketSCIMTokens), key(hash))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		t = storage.SCIMToken{
			ID: r.ID, OrgID: r.OrgID, IntegrationID: r.IntegrationID, Prefix: r.Prefix, Hash: r.Hash, CreatedAt: fromMillis(r.CreatedAt),
		}
		return nil
	})
	if err != nil {
		return storage.SCIMToken{}, fmt.Errorf("get scim token by hash: %w", err)
	}
	return t, nil
}

// CreateUser stores a new user of a SCIM integration.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		integration, err := getIntegration(tx, u.OrgID, u.IntegrationID)
		if err != nil {
			return fmt.Errorf("auth integration %s: %w", u.IntegrationID, err)
		}
		users, emails := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails)
		if users.Get(key(u.OrgID, u.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		ek := emailKey(u.OrgID, u.IntegrationID, u.Email)
		if emails.Get(ek) != nil {
			return fmt.Errorf("email taken: %w", storage.ErrConflict)
		}
		if err := emails.Put(ek, []byte(u.ID)); err != nil {
			return err
		}
		if u.ExternalID != "" {
			if err := tx.Bucket(bucketUserExternalIDs).Put(externalIDKey(u.OrgID, u.IntegrationID, u.ExternalID, u.ID), []byte(u.ID)); err != nil {
				return err
			}
		}
		u.IntegrationName = integration.Name
		return put(users, key(u.OrgID, u.ID), newUserRecord(u))
	})
	if err != nil {
		return fmt.Errorf("create user %s: %w", u.ID, err)
	}
	return nil
}

func newUserRecord(u storage.User) userRecord {
	return userRecord{
		OrgID: u.OrgID, ID: u.ID, Email: u.Email, First: u.First, Last: u.Last, Active: u.Active,
		IntegrationID: u.IntegrationID, IntegrationName: u.IntegrationName,
		ImportedAt: millis(u.ImportedAt), ModifiedAt: millis(u.ModifiedAt),
		ExternalID: u.ExternalID, Attributes: u.Attributes,
	}
}

// integrationUser reads the integration's user id; a user of another integration is
// storage.ErrNotFound.
func integrationUser(tx *bbolt.Tx, orgID, integrationID, id string) (storage.User, error) {
	u, err := getUser(tx, orgID, id)
	if err != nil {
		return storage.User{}, err
	}
	if u.IntegrationID != integrationID {
		return storage.User{}, storage.ErrNotFound
	}
	return u, nil
}

// UpdateUser changes the integration's user id as fn says, in one transaction.
func (s *Store) UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*storage.User) error) (storage.User, error) {
	var out storage.User
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		old, err := integrationUser(tx, orgID, integrationID, id)
		if err != nil {
			return err
		}
		u := old
		u.Attributes = bytes.Clone(old.Attributes)
		if err := fn(&u); err != nil {
			return err
		}
		u.OrgID, u.ID, u.IntegrationID, u.IntegrationName, u.ImportedAt =
			old.OrgID, old.ID, old.IntegrationID, old.IntegrationName, old.ImportedAt
		out = u
		if reflect.DeepEqual(newUserRecord(u), newUserRecord(old)) {
			return nil
		}
		emails, externalIDs := tx.Bucket(bucketUserEmails), tx.Bucket(bucketUserExternalIDs)
		if oldKey, newKey := emailKey(orgID, integrationID, old.Email), emailKey(orgID, integrationID, u.Email); !bytes.Equal(oldKey, newKey) {
			if emails.Get(newKey) != nil {
				return fmt.Errorf("email taken: %w", storage.ErrConflict)
			}
			if err := emails.Delete(oldKey); err != nil {
				return err
			}
			if err := emails.Put(newKey, []byte(id)); err != nil {
				return err
			}
		}
		if old.ExternalID != u.ExternalID {
			if old.ExternalID != "" {
				if err := externalIDs.Delete(externalIDKey(orgID, integrationID, old.ExternalID, id)); err != nil {
					return err
				}
			}
			if u.ExternalID != "" {
				if err := externalIDs.Put(externalIDKey(orgID, integrationID, u.ExternalID, id), []byte(id)); err != nil {
					return err
				}
			}
		}
		return put(tx.Bucket(bucketUsers), key(orgID, id), newUserRecord(u))
	})
	if err != nil {
		return storage.User{}, fmt.Errorf("update user %s: %w", id, err)
	}
	return out, nil
}

// DeleteUser removes the integration's user id with its grants, index entries and group
// memberships, in one transaction.
func (s *Store) DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		u, err := integrationUser(tx, orgID, integrationID, id)
		if err != nil {
			return err
		}
		return deleteUser(tx, u, millis(now))
	})
	if err != nil {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	return nil
}

// deleteUser removes u with its grants, index entries and group memberships.
func deleteUser(tx *bbolt.Tx, u storage.User, now int64) error {
	if err := deleteGrantsOfUser(tx, u.OrgID, u.ID); err != nil {
		return err
	}
	if err := leaveGroups(tx, u.OrgID, u.ID, now); err != nil {
		return err
	}
	if err := tx.Bucket(bucketUserEmails).Delete(emailKey(u.OrgID, u.IntegrationID, u.Email)); err != nil {
		return err
	}
	if u.ExternalID != "" {
		if err := tx.Bucket(bucketUserExternalIDs).Delete(externalIDKey(u.OrgID, u.IntegrationID, u.ExternalID, u.ID)); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketUsers).Delete(key(u.OrgID, u.ID))
}

// deleteGrantsOfUser removes every grant of the user and its by-resource index entries.
func deleteGrantsOfUser(tx *bbolt.Tx, orgID, userID string) error {
	recs, err := userGrants(tx.Bucket(bucketGrants), orgID, userID)
	if err != nil {
		return err
	}
	for _, g := range recs {
		if err := tx.Bucket(bucketGrantsByResource).Delete(key(orgID, g.ResourceID, userID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGrants).Delete(key(orgID, userID, g.ResourceID)); err != nil {
			return err
		}
	}
	return nil
}

// leaveGroups takes the user out of every group it is a member of.
func leaveGroups(tx *bbolt.Tx, orgID, userID string, now int64) error {
	byMember, groups := tx.Bucket(bucketGroupsByMember), tx.Bucket(bucketGroups)
	prefix := key(orgID, userID)
	// Keys are collected first: bbolt's cursor may skip keys if the bucket changes under it.
	var indexKeys, groupKeys [][]byte
	for k, groupKey := range under(byMember, prefix) {
		indexKeys = append(indexKeys, bytes.Clone(k))
		groupKeys = append(groupKeys, bytes.Clone(groupKey))
	}
	for i, gk := range groupKeys {
		rec, ok, err := get[groupRecord](groups, gk)
		if err != nil {
			return err
		}
		if ok {
			rec.Members = slices.DeleteFunc(rec.Members, func(m string) bool { return m == userID })
			delete(rec.MemberDisplays, userID)
			rec.MemberDisplays = nilIfEmpty(rec.MemberDisplays)
			rec.ModifiedAt = now
			if err := put(groups, gk, rec); err != nil {
				return err
			}
		}
		if err := byMember.Delete(indexKeys[i]); err != nil {
			return err
		}
	}
	return nil
}

// UserByEmail returns the integration's user with this email, ignoring letter case.
func (s *Store) UserByEmail(ctx context.Context, orgID, integrationID, email string) (storage.User, error) {
	var u storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketUserEmails).Get(emailKey(orgID, integrationID, email))
		if id == nil {
			return storage.ErrNotFound
		}
		var err error
		u, err = getUser(tx, orgID, string(id))
		return err
	})
	if err != nil {
		return storage.User{}, fmt.Errorf("get user by email: %w", err)
	}
	return u, nil
}

// UsersByExternalID returns the integration's users with this external id, ordered by ID.
func (s *Store) UsersByExternalID(ctx context.Context, orgID, integrationID, externalID string) ([]storage.User, error) {
	var out []storage.User
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := key(orgID, integrationID, externalID)
		for _, id := range under(tx.Bucket(bucketUserExternalIDs), prefix) {
			u, err := getUser(tx, orgID, string(id))
			if err != nil {
				return fmt.Errorf("external id index names user %s: %w", id, err)
			}
			out = append(out, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get users by external id: %w", err)
	}
	return out, nil
}

// IntegrationUsers pages through the integration's users by ID. The ids come from the email
// index, which holds exactly the integration's users, so only the page's records are decoded.
func (s *Store) IntegrationUsers(ctx context.Context, orgID, integrationID string, offset, limit int) ([]storage.User, int, error) {
	var out []storage.User
	var total int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ids []string
		prefix := key(orgID, integrationID)
		for _, id := range under(tx.Bucket(bucketUserEmails), prefix) {
			ids = append(ids, string(id))
		}
		slices.Sort(ids)
		total = len(ids)
		for _, id := range pageOf(ids, offset, limit) {
			u, err := getUser(tx, orgID, id)
			if err != nil {
				return fmt.Errorf("email index names user %s: %w", id, err)
			}
			out = append(out, u)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list users of integration %s: %w", integrationID, err)
	}
	return out, total, nil
}

// pageOf returns the part of items that skips offset and holds at most limit (all the rest if
// limit is negative).
func pageOf[T any](items []T, offset, limit int) []T {
	if offset >= len(items) {
		return nil
	}
	items = items[max(offset, 0):]
	if limit >= 0 && limit < len(items) {
		items = items[:limit]
	}
	return items
}

// CreateGroup stores a new group in one transaction.
func (s *Store) CreateGroup(ctx context.Context, g storage.Group) error {
	rec := newGroupRecord(g)
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if err := checkGroupIntegration(tx, g.OrgID, g.IntegrationID); err != nil {
			return fmt.Errorf("auth integration %s: %w", g.IntegrationID, err)
		}
		ids, names := tx.Bucket(bucketGroupIDs), tx.Bucket(bucketGroupNames)
		if ids.Get(key(g.OrgID, g.ID)) != nil {
			return fmt.Errorf("id taken: %w", storage.ErrConflict)
		}
		if names.Get(rec.nameKey()) != nil {
			return fmt.Errorf("display name taken: %w", storage.ErrConflict)
		}
		if err := joinGroup(tx, rec, nil); err != nil {
			return err
		}
		if err := ids.Put(key(g.OrgID, g.ID), []byte(g.IntegrationID)); err != nil {
			return err
		}
		if err := names.Put(rec.nameKey(), []byte(g.ID)); err != nil {
			return err
		}
		return put(tx.Bucket(bucketGroups), rec.key(), rec)
	})
	if err != nil {
		return fmt.Errorf("create group %s: %w", g.ID, err)
	}
	return nil
}

// joinGroup checks that the members of rec that were not in before are users of its
// integration, and indexes them; members of before that rec lacks leave the index.
func joinGroup(tx *bbolt.Tx, rec groupRecord, before []string) error {
	byMember := tx.Bucket(bucketGroupsByMember)
	was, is := setOf(before), setOf(rec.Members)
	for _, m := range rec.Members {
		if was[m] {
			continue
		}
		if err := checkGroupMember(tx, rec.OrgID, rec.IntegrationID, m); err != nil {
			return fmt.Errorf("member %s: %w", m, storage.ErrUnknownMember)
		}
		if err := byMember.Put(key(rec.OrgID, m, rec.ID), rec.key()); err != nil {
			return err
		}
	}
	for _, m := range before {
		if !is[m] {
			if err := byMember.Delete(key(rec.OrgID, m, rec.ID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// setOf is the set of ids, so that comparing two large member lists is linear.
func setOf(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// GetGroup returns the integration's group id, or storage.ErrNotFound.
func (s *Store) GetGroup(ctx context.Context, orgID, integrationID, id string) (storage.Group, error) {
	var g storage.Group
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		g, err = getGroup(tx, key(orgID, integrationID, id))
		return err
	})
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group %s: %w", id, err)
	}
	return g, nil
}

func getGroup(tx *bbolt.Tx, k []byte) (storage.Group, error) {
	rec, ok, err := get[groupRecord](tx.Bucket(bucketGroups), k)
	if err != nil {
		return storage.Group{}, err
	}
	if !ok {
		return storage.Group{}, storage.ErrNotFound
	}
	return rec.group(), nil
}

// GroupByName returns the integration's group with this display name, ignoring letter case.
func (s *Store) GroupByName(ctx context.Context, orgID, integrationID, name string) (storage.Group, error) {
	var g storage.Group
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketGroupNames).Get(key(orgID, integrationID, strings.ToLower(name)))
		if id == nil {
			return storage.ErrNotFound
		}
		var err error
		g, err = getGroup(tx, key(orgID, integrationID, string(id)))
		return err
	})
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group by name: %w", err)
	}
	return g, nil
}

// IntegrationGroups pages through the integration's groups by ID, which is their key order.
func (s *Store) IntegrationGroups(ctx context.Context, orgID, integrationID string, offset, limit int) ([]storage.Group, int, error) {
	var recs []groupRecord
	var total int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := key(orgID, integrationID)
		for k, data := range under(tx.Bucket(bucketGroups), prefix) {
			if total >= max(offset, 0) && (limit < 0 || len(recs) < limit) {
				var rec groupRecord
				if err := json.Unmarshal(data, &rec); err != nil {
					return fmt.Errorf("decode %q: %w", k, err)
				}
				recs = append(recs, rec)
			}
			total++
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list groups of integration %s: %w", integrationID, err)
	}
	out := make([]storage.Group, len(recs))
	for i, r := range recs {
		out[i] = r.group()
	}
	return out, total, nil
}

// UpdateGroup changes the integration's group id as fn says, in one transaction.
func (s *Store) UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*storage.Group) error) (storage.Group, error) {
	var out storage.Group
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		k := key(orgID, integrationID, id)
		old, err := getGroup(tx, k)
		if err != nil {
			return err
		}
		g := old
		g.Members = slices.Clone(old.Members)
		g.MemberDisplays = maps.Clone(old.MemberDisplays)
		if err := fn(&g); err != nil {
			return err
		}
		g.OrgID, g.ID, g.IntegrationID, g.CreatedAt = old.OrgID, old.ID, old.IntegrationID, old.CreatedAt
		g.MemberDisplays = nilIfEmpty(g.MemberDisplays)
		out = g
		rec, oldRec := newGroupRecord(g), newGroupRecord(old)
		if reflect.DeepEqual(rec, oldRec) {
			return nil
		}
		if names := tx.Bucket(bucketGroupNames); !bytes.Equal(rec.nameKey(), oldRec.nameKey()) {
			if names.Get(rec.nameKey()) != nil {
				return fmt.Errorf("display name taken: %w", storage.ErrConflict)
			}
			if err := names.Delete(oldRec.nameKey()); err != nil {
				return err
			}
			if err := names.Put(rec.nameKey(), []byte(id)); err != nil {
				return err
			}
		}
		if err := joinGroup(tx, rec, old.Members); err != nil {
			return err
		}
		return put(tx.Bucket(bucketGroups), k, rec)
	})
	if err != nil {
		return storage.Group{}, fmt.Errorf("update group %s: %w", id, err)
	}
	return out, nil
}

// DeleteGroup removes the integration's group id and its index entries.
func (s *Store) DeleteGroup(ctx context.Context, orgID, integrationID, id string) error {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		rec, ok, err := get[groupRecord](tx.Bucket(bucketGroups), key(orgID, integrationID, id))
		if err != nil {
			return err
		}
		if !ok {
			return storage.ErrNotFound
		}
		return deleteGroup(tx, rec)
	})
	if err != nil {
		return fmt.Errorf("delete group %s: %w", id, err)
	}
	return nil
}

// deleteGroup removes the group of rec with its index entries and its grants.
func deleteGroup(tx *bbolt.Tx, rec groupRecord) error {
	for _, m := range rec.Members {
		if err := tx.Bucket(bucketGroupsByMember).Delete(key(rec.OrgID, m, rec.ID)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketGroupNames).Delete(rec.nameKey()); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGroupIDs).Delete(key(rec.OrgID, rec.ID)); err != nil {
		return err
	}
	if err := deleteGroupGrantsOfGroup(tx, rec.OrgID, rec.ID); err != nil {
		return err
	}
	return tx.Bucket(bucketGroups).Delete(rec.key())
}

// UserGroups returns the groups the organization's user is a member of, ordered by ID.
func (s *Store) UserGroups(ctx context.Context, orgID, userID string) ([]storage.Group, error) {
	var out []storage.Group
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = userGroups(tx, orgID, userID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list groups of user %s: %w", userID, err)
	}
	return out, nil
}

// userGroups reads the groups of the organization's user in tx, ordered by id.
func userGroups(tx *bbolt.Tx, orgID, userID string) ([]storage.Group, error) {
	var out []storage.Group
	for _, groupKey := range under(tx.Bucket(bucketGroupsByMember), key(orgID, userID)) {
		g, err := getGroup(tx, groupKey)
		if err != nil {
			return nil, fmt.Errorf("member index names group %q: %w", groupKey, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// SetSCIMToken replaces the integration's token in one transaction.
func (s *Store) SetSCIMToken(ctx context.Context, orgID, integrationID string, t *storage.SCIMToken) (*storage.SCIMToken, error) {
	var old *storage.SCIMToken
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		a, err := getIntegration(tx, orgID, integrationID)
		if err == nil && a.Type != storage.IntegrationSCIM {
			err = storage.ErrNotFound
		}
		if err != nil {
			return err
		}
		keys, recs, err := scimTokensOf(tx, orgID, integrationID)
		if err != nil {
			return err
		}
		for i, k := range keys {
			r := recs[i]
			old = &storage.SCIMToken{ID: r.ID, OrgID: r.OrgID, IntegrationID: r.IntegrationID, Prefix: r.Prefix, Hash: r.Hash, CreatedAt: fromMillis(r.CreatedAt)}
			if err := tx.Bucket(bucketSCIMTokens).Delete(k); err != nil {
				return err
			}
		}
		if t == nil {
			return nil
		}
		tokens := tx.Bucket(bucketSCIMTokens)
		if tokens.Get(key(t.Hash)) != nil {
			return fmt.Errorf("token hash taken: %w", storage.ErrConflict)
		}
		return put(tokens, key(t.Hash), scimTokenRecord{
			ID: t.ID, OrgID: orgID, IntegrationID: integrationID, Prefix: t.Prefix, Hash: t.Hash, CreatedAt: millis(t.CreatedAt),
		})
	})
	if err != nil {
		return nil, fmt.Errorf("set scim token of integration %s: %w", integrationID, err)
	}
	return old, nil
}

// scimTokensOf returns the keys and records of the integration's tokens: a scan of the token
// bucket, which holds one token for each SCIM integration.
func scimTokensOf(tx *bbolt.Tx, orgID, integrationID string) (keys [][]byte, recs []scimTokenRecord, err error) {
	err = tx.Bucket(bucketSCIMTokens).ForEach(func(k, data []byte) error {
		var r scimTokenRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("decode scim token: %w", err)
		}
		if r.OrgID == orgID && r.IntegrationID == integrationID {
			keys, recs = append(keys, bytes.Clone(k)), append(recs, r)
		}
		return nil
	})
	return keys, recs, err
}

// deleteSCIMTokens removes the tokens of the organization's integration.
func deleteSCIMTokens(tx *bbolt.Tx, orgID, integrationID string) error {
	keys, _, err := scimTokensOf(tx, orgID, integrationID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketSCIMTokens).Delete(k); err != nil {
			return err
		}
	}
	return nil
}
