package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// The buckets of group grants and of expiring grants.
var (
	bucketGroupGrants = []byte("group_grants") // org, group id, resource id → groupGrantRecord
	// group_grants_by_resource lets DeleteResource and reverse lookups find a resource's group
	// grants without a scan.
	bucketGroupGrantsByResource = []byte("group_grants_by_resource") // org, resource id, group id → group id
	// grant_expiries lists expiring grants by expiry, so that DeleteExpiredGrants reads only
	// what has expired. An entry is a hint, not the truth: revoking or changing a grant leaves
	// its entry, and the sweep removes a grant only if its stored expiry is still the entry's.
	// Stale entries therefore cost nothing but their bytes until their time comes.
	bucketGrantExpiries = []byte("grant_expiries") // expiry as 16 hex digits of Unix ms, kind, org, holder, resource → expiryRef
)

// The kinds of grant an expiry entry names.
const (
	expiryUser  = "user"
	expiryGroup = "group"
)

// sweepBatch bounds the expiry entries one write transaction of DeleteExpiredGrants handles,
// so that a sweep after a long outage does not hold the writer lock for long.
const sweepBatch = 10_000

type groupGrantRecord struct {
	OrgID      string `json:"org_id"`
	GroupID    string `json:"group_id"`
	ResourceID string `json:"resource_id"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at,omitempty"` // 0: never
}

func (r groupGrantRecord) groupGrant() storage.GroupGrant {
	return storage.GroupGrant{OrgID: r.OrgID, GroupID: r.GroupID, ResourceID: r.ResourceID,
		CreatedAt: fromMillis(r.CreatedAt), ExpiresAt: expiryTime(r.ExpiresAt)}
}

// expiryRef is the value of an expiry entry: the grant it names and the expiry it had.
type expiryRef struct {
	Kind       string `json:"kind"`
	OrgID      string `json:"org_id"`
	Holder     string `json:"holder"` // the user or the group
	ResourceID string `json:"resource_id"`
	ExpiresAt  int64  `json:"expires_at"`
}

// expiryMillis and expiryTime keep "never" as 0.
func expiryMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return millis(t)
}

func expiryTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return fromMillis(ms)
}

// expiryPrefix is the first part of an expiry entry's key: fixed width, so that keys sort by
// time. An expiry before 1970 sorts first, which is where the sweep starts.
func expiryPrefix(ms int64) string { return fmt.Sprintf("%016x", max(ms, 0)) }

// indexExpiry adds the expiry entry of a grant that expires at ms; a grant that never expires
// has none.
func indexExpiry(tx *bbolt.Tx, ref expiryRef) error {
	if ref.ExpiresAt == 0 {
		return nil
	}
	return put(tx.Bucket(bucketGrantExpiries), key(expiryPrefix(ref.ExpiresAt), ref.Kind, ref.OrgID, ref.Holder, ref.ResourceID), ref)
}

// SetGrant records the grant or replaces its expiry, in one transaction shared with other
// writers, and returns the grant as it was (nil when new).
func (s *Store) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	return s.SetGrantRecorded(ctx, g, nil)
}

// SetGrantRecorded is SetGrant, and journals with the change the events that record makes of
// the grant as it was: the change and its events are applied together, or neither is (see
// journal.go). record is called once, and must return events with ids from
// storage.EntryIDs; a nil record records nothing.
func (s *Store) SetGrantRecorded(ctx context.Context, g storage.Grant, record func(prev *storage.Grant) []storage.Event) (*storage.Grant, error) {
	var prev *storage.Grant
	err := s.journalChange(ctx, func(tx *bbolt.Tx) (rec journal.Record, err error) {
		if prev, rec, err = s.decideGrant(tx, g); err != nil {
			return rec, err
		}
		rec.Events, err = recordEvents(record, prev)
		return rec, err
	})
	if err != nil {
		return nil, fmt.Errorf("grant %s to %s: %w", g.ResourceID, g.UserID, err)
	}
	return prev, nil
}

// decideGrant reads in tx, and over it the journal's pending changes, what setting g changes:
// the grant as it was (nil when new), and the record of the change (Changed false if g changes
// nothing).
func (s *Store) decideGrant(tx *bbolt.Tx, g storage.Grant) (prev *storage.Grant, rec journal.Record, err error) {
	if tx.Bucket(bucketUsers).Get(key(g.OrgID, g.UserID)) == nil {
		return nil, rec, storage.ErrUserNotFound
	}
	if tx.Bucket(bucketResources).Get(key(g.OrgID, g.ResourceID)) == nil {
		return nil, rec, storage.ErrResourceNotFound
	}
	cur, ok, err := s.currentGrant(tx, g.OrgID, g.UserID, g.ResourceID)
	if err != nil {
		return nil, rec, err
	}
	rec = journal.Record{OrgID: g.OrgID, UserID: g.UserID, ResourceID: g.ResourceID, Changed: true, Held: true,
		CreatedAt: millis(g.CreatedAt), ExpiresAt: expiryMillis(g.ExpiresAt)}
	if ok {
		was := cur.grant()
		prev = &was
		rec.CreatedAt = cur.CreatedAt
		rec.Changed = cur.ExpiresAt != rec.ExpiresAt
	}
	return prev, rec, nil
}

// currentGrant reads the user's grant of the resource as the journal's pending changes leave
// it over tx.
func (s *Store) currentGrant(tx *bbolt.Tx, orgID, userID, resourceID string) (grantRecord, bool, error) {
	if p, ok := s.journal.Grant(orgID, userID, resourceID); ok {
		return pendingRecord(orgID, userID, resourceID, p), p.Held, nil
	}
	return getGrant(tx.Bucket(bucketGrants), key(orgID, userID, resourceID))
}

// journalChange journals the change that decide reads in a read transaction over the journal's
// pending changes, and returns once it is durable; decide's error, if any, is returned and
// nothing is journaled. A record that changes no grant and carries no events is not journaled.
// decide runs under the journal's lock (journal.Journal.Append), which is let go however it
// returns, a panic of the record function included.
func (s *Store) journalChange(ctx context.Context, decide func(*bbolt.Tx) (journal.Record, error)) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return unavailable(s.journal.Append(func() (rec journal.Record, err error) {
		err = s.db.View(func(tx *bbolt.Tx) error {
			var err error
			rec, err = decide(tx)
			return err
		})
		return rec, err
	}))
}

// ResourceGrants returns the resource's grants, ordered by UserID: the order of the
// by-resource index.
func (s *Store) ResourceGrants(ctx context.Context, orgID, resourceID string) ([]storage.Grant, error) {
	var out []storage.Grant
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		grants, prefix := tx.Bucket(bucketGrants), key(orgID, resourceID)
		for _, user := range under(tx.Bucket(bucketGrantsByResource), prefix) {
			rec, ok, err := getGrant(grants, key(orgID, string(user), resourceID))
			if err != nil {
				return err
			}
			if ok {
				out = append(out, rec.grant())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list grants of resource %s: %w", resourceID, err)
	}
	return out, nil
}

// GetOrgGroup returns the organization's group id, whatever its integration, through the
// index that keeps group ids unique in the organization.
func (s *Store) GetOrgGroup(ctx context.Context, orgID, id string) (storage.Group, error) {
	var g storage.Group
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		integration := tx.Bucket(bucketGroupIDs).Get(key(orgID, id))
		if integration == nil {
			return storage.ErrNotFound
		}
		var err error
		g, err = getGroup(tx, key(orgID, string(integration), id))
		return err
	})
	if err != nil {
		return storage.Group{}, fmt.Errorf("get group %s: %w", id, err)
	}
	return g, nil
}

// ListGroups returns every group of the organization, ordered by CreatedAt then ID.
func (s *Store) ListGroups(ctx context.Context, orgID string) ([]storage.Group, error) {
	var recs []groupRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scan[groupRecord](tx.Bucket(bucketGroups), key(orgID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	slices.SortFunc(recs, func(a, b groupRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]storage.Group, len(recs))
	for i, r := range recs {
		out[i] = r.group()
	}
	return out, nil
}

// checkGroupIntegration returns storage.ErrNotFound unless the group's integration exists; a
// plain group has none to check.
func checkGroupIntegration(tx *bbolt.Tx, orgID, integrationID string) error {
	if integrationID == "" {
		return nil
	}
	_, err := getIntegration(tx, orgID, integrationID)
	return err
}

// checkGroupMember returns an error unless user id may be a member of a group of the
// integration: one of its users, or, for a plain group, any user of the organization.
func checkGroupMember(tx *bbolt.Tx, orgID, integrationID, id string) error {
	if integrationID == "" {
		_, err := getUser(tx, orgID, id)
		return err
	}
	_, err := integrationUser(tx, orgID, integrationID, id)
	return err
}

// SetGroupGrant records the group grant or replaces its expiry, in one transaction, and
// returns it as it was (nil when new).
func (s *Store) SetGroupGrant(ctx context.Context, g storage.GroupGrant) (*storage.GroupGrant, error) {
	var prev *storage.GroupGrant
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		prev = nil // a batch may run this more than once
		if tx.Bucket(bucketGroupIDs).Get(key(g.OrgID, g.GroupID)) == nil {
			return storage.ErrGroupNotFound
		}
		if tx.Bucket(bucketResources).Get(key(g.OrgID, g.ResourceID)) == nil {
			return storage.ErrResourceNotFound
		}
		grants, k := tx.Bucket(bucketGroupGrants), key(g.OrgID, g.GroupID, g.ResourceID)
		rec, ok, err := get[groupGrantRecord](grants, k)
		if err != nil {
			return err
		}
		expires := expiryMillis(g.ExpiresAt)
		if ok {
			was := rec.groupGrant()
			prev = &was
			if rec.ExpiresAt == expires {
				return nil
			}
			rec.ExpiresAt = expires
		} else {
			rec = groupGrantRecord{OrgID: g.OrgID, GroupID: g.GroupID, ResourceID: g.ResourceID, CreatedAt: millis(g.CreatedAt), ExpiresAt: expires}
			if err := tx.Bucket(bucketGroupGrantsByResource).Put(key(g.OrgID, g.ResourceID, g.GroupID), []byte(g.GroupID)); err != nil {
				return err
			}
		}
		if err := indexExpiry(tx, expiryRef{Kind: expiryGroup, OrgID: g.OrgID, Holder: g.GroupID, ResourceID: g.ResourceID, ExpiresAt: expires}); err != nil {
			return err
		}
		return put(grants, k, rec)
	})
	if err != nil {
		return nil, fmt.Errorf("grant %s to group %s: %w", g.ResourceID, g.GroupID, err)
	}
	return prev, nil
}

// RevokeGroupGrant removes the group grant, and reports whether there was one.
func (s *Store) RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error) {
	var removed bool
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketGroupIDs).Get(key(orgID, groupID)) == nil {
			return storage.ErrGroupNotFound
		}
		grants := tx.Bucket(bucketGroupGrants)
		removed = grants.Get(key(orgID, groupID, resourceID)) != nil
		if err := tx.Bucket(bucketGroupGrantsByResource).Delete(key(orgID, resourceID, groupID)); err != nil {
			return err
		}
		return grants.Delete(key(orgID, groupID, resourceID))
	})
	if err != nil {
		return false, fmt.Errorf("revoke %s from group %s: %w", resourceID, groupID, err)
	}
	return removed, nil
}

// GroupGrants returns the grants of the groups, ordered by GroupID, then CreatedAt, then
// ResourceID, all read in one transaction.
func (s *Store) GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]storage.GroupGrant, error) {
	var out []storage.GroupGrant
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = groupGrants(tx, orgID, groupIDs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list grants of %d groups: %w", len(groupIDs), err)
	}
	return out, nil
}

// groupGrants reads in tx the grants of the groups, in GroupGrants' order.
func groupGrants(tx *bbolt.Tx, orgID string, groupIDs []string) ([]storage.GroupGrant, error) {
	var out []storage.GroupGrant
	for _, id := range slices.Compact(slices.Sorted(slices.Values(groupIDs))) {
		recs, err := scan[groupGrantRecord](tx.Bucket(bucketGroupGrants), key(orgID, id))
		if err != nil {
			return nil, err
		}
		out = appendGroupGrantsInOrder(out, recs)
	}
	return out, nil
}

// appendGroupGrantsInOrder appends one group's grant records to out as grants, in GroupGrants'
// order within a group: by CreatedAt, then ResourceID.
func appendGroupGrantsInOrder(out []storage.GroupGrant, recs []groupGrantRecord) []storage.GroupGrant {
	slices.SortFunc(recs, func(a, b groupGrantRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ResourceID, b.ResourceID))
	})
	for _, r := range recs {
		out = append(out, r.groupGrant())
	}
	return out
}

// UserFacts reads the user, their grants, groups and the groups' grants in one transaction,
// so that a decision is never made from parts read on either side of a write: a user's
// membership and a group's grant, say, that were never both true.
//
// The user's grants are read with the journal's pending changes over them, as UserGrants reads
// them, rather than after applying the journal: the first check of a user after a grant would
// otherwise wait for it.
func (s *Store) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	var f storage.Facts
	pending := s.journal.Grants(orgID, userID)
	err := s.viewData(ctx, func(tx *bbolt.Tx) error {
		u, err := getUser(tx, orgID, userID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		f.Found, f.User = true, u
		recs, err := userGrants(tx.Bucket(bucketGrants), orgID, userID)
		if err != nil {
			return err
		}
		f.Grants = userGrantsInOrder(overPending(recs, orgID, userID, pending))
		if f.Groups, err = userGroups(tx, orgID, userID); err != nil || len(f.Groups) == 0 {
			return err
		}
		f.GroupGrants, err = groupGrants(tx, orgID, storage.GroupIDs(f.Groups))
		return err
	})
	if err != nil {
		return storage.Facts{}, fmt.Errorf("facts of user %s: %w", userID, err)
	}
	return f, nil
}

// AskedGrants reads in one transaction, by key, the user's grant of each resource asked about,
// the user's groups and their grants of those resources, and, if every one is held, whether
// the user exists and is active.
// The check path calls it for a user not in memory and not about to be kept: a user of a
// million-user organization is read from disk for nearly each question, and the point reads
// cost less than reading every grant.
//
// Like UserFacts, it reads the journal's pending changes of the user's grants over the data file.
func (s *Store) AskedGrants(ctx context.Context, orgID, userID string, resourceIDs []string) (storage.Asked, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(resourceIDs)))
	var a storage.Asked
	pending := s.journal.Grants(orgID, userID)
	for id := range pending {
		if _, asked := slices.BinarySearch(ids, id); !asked {
			delete(pending, id) // Grants' map is a copy
		}
	}
	err := s.viewData(ctx, func(tx *bbolt.Tx) error {
		held := make([]bool, len(ids))
		var grants []grantRecord
		err := eachAsked(tx.Bucket(bucketGrants), orgID, userID, ids, func(i int, k, v []byte) error {
			var r grantRecord // its ids are those of its key, known here
			if err := decodeGrant(v, &r); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			r.OrgID, r.UserID, r.ResourceID = orgID, userID, ids[i]
			grants, held[i] = append(grants, r), true
			return nil
		})
		if err != nil {
			return err
		}
		if len(pending) > 0 {
			grants = overPending(grants, orgID, userID, pending)
			clear(held)
			for _, g := range grants {
				i, _ := slices.BinarySearch(ids, g.ResourceID)
				held[i] = true
			}
		}
		a.Grants = userGrantsInOrder(grants)
		if a.Groups, err = userGroups(tx, orgID, userID); err != nil {
			return err
		}
		for _, g := range a.Groups { // in id order, as GroupGrants orders groups
			var recs []groupGrantRecord
			err := eachAsked(tx.Bucket(bucketGroupGrants), orgID, g.ID, ids, func(i int, k, v []byte) error {
				var r groupGrantRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode %q: %w", k, err)
				}
				recs, held[i] = append(recs, r), true
				return nil
			})
			if err != nil {
				return err
			}
			a.GroupGrants = appendGroupGrantsInOrder(a.GroupGrants, recs)
		}
		if slices.Contains(held, false) {
			return nil
		}
		a.Held = true
		// Of the user's record, the policy reads only whether the user is active.
		u, ok, err := get[struct {
			Active bool `json:"active"`
		}](tx.Bucket(bucketUsers), key(orgID, userID))
		a.Found, a.Active = ok, u.Active
		return err
	})
	if err != nil {
		return storage.Asked{}, fmt.Errorf("grants of %s asked about: %w", userID, err)
	}
	return a, nil
}

// askedPointReads bounds the resources AskedGrants reads one by one, by key, of a holder (the
// user or a group); for more, it scans the holder's grants and keeps those asked about, so
// that a check of a thousand tags costs no more than reading the holder's grants.
const askedPointReads = 16

// eachAsked calls fn with the index in ids (sorted, distinct) and the key and value of each
// record of b under key(orgID, holder, id), by key or by a scan of the holder's (askedPointReads).
func eachAsked(b *bbolt.Bucket, orgID, holder string, ids []string, fn func(i int, k, v []byte) error) error {
	if len(ids) <= askedPointReads {
		for i, id := range ids {
			k := key(orgID, holder, id)
			if v := b.Get(k); v != nil {
				if err := fn(i, k, v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	prefix := key(orgID, holder)
	var parts [1]string
	for k, v := range under(b, prefix) {
		id, ok := splitKey(parts[:0], k[len(prefix):])
		if !ok || len(id) != 1 {
			return fmt.Errorf("decode %q: not a key of three ids", k)
		}
		if i, found := slices.BinarySearch(ids, id[0]); found {
			if err := fn(i, k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// ResourceGroupGrants returns the resource's group grants, ordered by GroupID: the order of
// the by-resource index.
func (s *Store) ResourceGroupGrants(ctx context.Context, orgID, resourceID string) ([]storage.GroupGrant, error) {
	var out []storage.GroupGrant
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		grants, prefix := tx.Bucket(bucketGroupGrants), key(orgID, resourceID)
		for _, group := range under(tx.Bucket(bucketGroupGrantsByResource), prefix) {
			rec, ok, err := get[groupGrantRecord](grants, key(orgID, string(group), resourceID))
			if err != nil {
				return err
			}
			if ok {
				out = append(out, rec.groupGrant())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list group grants of resource %s: %w", resourceID, err)
	}
	return out, nil
}

// deleteGroupGrantsOfGroup removes every grant of a group that is being deleted.
func deleteGroupGrantsOfGroup(tx *bbolt.Tx, orgID, groupID string) error {
	recs, err := scan[groupGrantRecord](tx.Bucket(bucketGroupGrants), key(orgID, groupID))
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := tx.Bucket(bucketGroupGrantsByResource).Delete(key(orgID, r.ResourceID, groupID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGroupGrants).Delete(key(orgID, groupID, r.ResourceID)); err != nil {
			return err
		}
	}
	return nil
}

// deleteGroupGrantsOfResource removes every group grant of a resource that is being deleted,
// finding them through the by-resource index.
func deleteGroupGrantsOfResource(tx *bbolt.Tx, orgID, resourceID string) error {
	return deleteByResource(tx.Bucket(bucketGroupGrantsByResource), tx.Bucket(bucketGroupGrants), orgID, resourceID)
}

// DeleteExpiredGrants walks the expiry index up to now, removing each grant whose stored
// expiry is still the one its entry names, and the entries; sweepBatch entries a transaction.
func (s *Store) DeleteExpiredGrants(ctx context.Context, now time.Time) (storage.ExpiredGrants, error) {
	var out storage.ExpiredGrants
	bound := []byte(expiryPrefix(millis(now)))
	for {
		var users []storage.Grant
		var groups []storage.GroupGrant
		var n int
		err := s.update(ctx, func(tx *bbolt.Tx) error {
			users, groups, n = nil, nil, 0
			idx := tx.Bucket(bucketGrantExpiries)
			var keys [][]byte
			var refs []expiryRef
			c := idx.Cursor()
			for k, v := c.First(); k != nil && n < sweepBatch && bytes.Compare(k[:len(bound)], bound) <= 0; k, v = c.Next() {
				var ref expiryRef
				if err := json.Unmarshal(v, &ref); err != nil {
					return fmt.Errorf("decode %q: %w", k, err)
				}
				keys, refs = append(keys, bytes.Clone(k)), append(refs, ref)
				n++
			}
			for i, ref := range refs {
				switch ref.Kind {
				case expiryUser:
					g, err := deleteExpiredGrant(tx, ref)
					if err != nil {
						return err
					}
					if g != nil {
						users = append(users, *g)
					}
				case expiryGroup:
					g, err := deleteExpiredGroupGrant(tx, ref)
					if err != nil {
						return err
					}
					if g != nil {
						groups = append(groups, *g)
					}
				}
				if err := idx.Delete(keys[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("delete grants expired by %s: %w", now.UTC().Format(time.RFC3339), err)
		}
		out.Users, out.Groups = append(out.Users, users...), append(out.Groups, groups...)
		if n < sweepBatch {
			return out, nil
		}
	}
}

// deleteExpiredGrant removes the user grant ref names if it still expires when ref says, and
// returns it; nil if it was revoked or given another expiry since.
func deleteExpiredGrant(tx *bbolt.Tx, ref expiryRef) (*storage.Grant, error) {
	k := key(ref.OrgID, ref.Holder, ref.ResourceID)
	rec, ok, err := getGrant(tx.Bucket(bucketGrants), k)
	if err != nil || !ok || rec.ExpiresAt != ref.ExpiresAt {
		return nil, err
	}
	if err := tx.Bucket(bucketGrantsByResource).Delete(key(ref.OrgID, ref.ResourceID, ref.Holder)); err != nil {
		return nil, err
	}
	g := rec.grant()
	return &g, tx.Bucket(bucketGrants).Delete(k)
}

// deleteExpiredGroupGrant is deleteExpiredGrant for a group grant.
func deleteExpiredGroupGrant(tx *bbolt.Tx, ref expiryRef) (*storage.GroupGrant, error) {
	k := key(ref.OrgID, ref.Holder, ref.ResourceID)
	rec, ok, err := get[groupGrantRecord](tx.Bucket(bucketGroupGrants), k)
	if err != nil || !ok || rec.ExpiresAt != ref.ExpiresAt {
		return nil, err
	}
	if err := tx.Bucket(bucketGroupGrantsByResource).Delete(key(ref.OrgID, ref.ResourceID, ref.Holder)); err != nil {
		return nil, err
	}
	g := rec.groupGrant()
	return &g, tx.Bucket(bucketGroupGrants).Delete(k)
}

// ListAPIKeys returns the organization's keys, ordered by CreatedAt then ID. Keys are kept by
// id alone (authentication finds them by hash), so this reads them all; an installation has
// a few per organization.
func (s *Store) ListAPIKeys(ctx context.Context, orgID string) ([]storage.APIKey, error) {
	var out []storage.APIKey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		recs, err := scan[apiKeyRecord](tx.Bucket(bucketAPIKeys), nil)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.OrgID == orgID {
				out = append(out, r.apiKey())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	slices.SortFunc(out, func(a, b storage.APIKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
