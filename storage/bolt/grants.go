package bolt

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// grantRecord is a user's grant. Its key, key(org, user, resource), is what names it: the
// value written holds only the times, and the ids are read back from the key. Records that
// earlier versions wrote also hold the ids in the value; they are read the same way. Without
// the ids a value is a fraction of the size, so a user's grants take fewer pages, and a user's
// first check reads fewer of them from disk.
type grantRecord struct {
	OrgID      string `json:"org_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	ResourceID string `json:"resource_id,omitempty"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at,omitempty"` // 0: never
}

// grantValue is what is written of a grant under its key.
func grantValue(createdAt, expiresAt int64) grantRecord {
	return grantRecord{CreatedAt: createdAt, ExpiresAt: expiresAt}
}

// getGrant reads the grant at k, key(org, user, resource), in b; ok is false if there is none.
func getGrant(b *bbolt.Bucket, k []byte) (r grantRecord, ok bool, err error) {
	data := b.Get(k)
	if data == nil {
		return r, false, nil
	}
	r, err = readGrant(k, data)
	return r, err == nil, err
}

// readGrant decodes the grant stored as data under k, taking its ids from k.
func readGrant(k, data []byte) (grantRecord, error) {
	var r grantRecord
	if err := decodeGrant(data, &r); err != nil {
		return r, fmt.Errorf("decode %q: %w", k, err)
	}
	var ids [3]string
	parts, ok := splitKey(ids[:0], k)
	if !ok || len(parts) != 3 {
		return r, fmt.Errorf("decode %q: not a key of three ids", k)
	}
	r.OrgID, r.UserID, r.ResourceID = parts[0], parts[1], parts[2]
	return r, nil
}

func (r grantRecord) grant() storage.Grant {
	return storage.Grant{OrgID: r.OrgID, UserID: r.UserID, ResourceID: r.ResourceID, CreatedAt: fromMillis(r.CreatedAt),
		ExpiresAt: expiryTime(r.ExpiresAt)}
}

// RevokeGrant removes the grant if there is one, and reports whether there was. It returns
// storage.ErrUserNotFound if the user does not exist in the organization.
func (s *Store) RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error) {
	return s.RevokeRecorded(ctx, orgID, userID, resourceID, nil)
}

// RevokeRecorded is RevokeGrant, and journals with the change the events that record makes
// of whether a grant was removed, as SetGrantRecorded does.
func (s *Store) RevokeRecorded(ctx context.Context, orgID, userID, resourceID string, record func(removed bool) []storage.Event) (bool, error) {
	var removed bool
	err := s.journalChange(ctx, func(tx *bbolt.Tx) (rec journal.Record, err error) {
		if tx.Bucket(bucketUsers).Get(key(orgID, userID)) == nil {
			return rec, storage.ErrUserNotFound
		}
		if _, removed, err = s.currentGrant(tx, orgID, userID, resourceID); err != nil {
			return rec, err
		}
		rec = journal.Record{OrgID: orgID, UserID: userID, ResourceID: resourceID, Changed: removed}
		rec.Events, err = recordEvents(record, removed)
		return rec, err
	})
	if err != nil {
		return false, fmt.Errorf("revoke %s from %s: %w", resourceID, userID, err)
	}
	return removed, nil
}

// deleteGrantsOf removes every grant of the resource, finding them through the by-resource
// index.
func deleteGrantsOf(tx *bbolt.Tx, orgID, resourceID string) error {
	return deleteByResource(tx.Bucket(bucketGrantsByResource), tx.Bucket(bucketGrants), orgID, resourceID)
}

// deleteByResource removes every record of primary, under key(org, holder, resource), that
// grants resourceID, and its entry in byResource, under key(org, resource, holder) with the
// holder (a user or a group) as value.
func deleteByResource(byResource, primary *bbolt.Bucket, orgID, resourceID string) error {
	prefix := key(orgID, resourceID)
	// Keys are collected first: bbolt's cursor may skip keys if the bucket changes under it.
	var indexKeys [][]byte
	var holders []string
	for k, holder := range under(byResource, prefix) {
		indexKeys = append(indexKeys, bytes.Clone(k))
		holders = append(holders, string(holder))
	}
	for i, holder := range holders {
		if err := primary.Delete(key(orgID, holder, resourceID)); err != nil {
			return err
		}
		if err := byResource.Delete(indexKeys[i]); err != nil {
			return err
		}
	}
	return nil
}

// UserGrants returns the user's grants, ordered by CreatedAt then ResourceID. A user with no
// grants, or no such user, yields an empty list.
//
// It reads the journal's pending changes of the user's grants over the data file rather than
// applying the journal: a revoke answers with the user's grants, and would otherwise wait for
// the apply of every change before it. The pending changes are taken before the data file is
// read, so a change applied in between is found in both, alike.
func (s *Store) UserGrants(ctx context.Context, orgID, userID string) ([]storage.Grant, error) {
	pending := s.journal.Grants(orgID, userID)
	var recs []grantRecord
	err := s.viewData(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = userGrants(tx.Bucket(bucketGrants), orgID, userID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list grants of %s: %w", userID, err)
	}
	return userGrantsInOrder(overPending(recs, orgID, userID, pending)), nil
}

// overPending returns one user's grant records as the journal's pending changes of them,
// journal.Grants, leave them.
func overPending(recs []grantRecord, orgID, userID string, pending map[string]journal.Grant) []grantRecord {
	if len(pending) == 0 {
		return recs
	}
	recs = slices.DeleteFunc(recs, func(r grantRecord) bool {
		_, changed := pending[r.ResourceID]
		return changed
	})
	for id, p := range pending {
		if p.Held {
			recs = append(recs, pendingRecord(orgID, userID, id, p))
		}
	}
	return recs
}

// pendingRecord is the record of a grant as a pending change leaves it.
func pendingRecord(orgID, userID, resourceID string, p journal.Grant) grantRecord {
	return grantRecord{OrgID: orgID, UserID: userID, ResourceID: resourceID, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}
}

// userGrantsInOrder returns one user's grant records as grants, in UserGrants' order.
func userGrantsInOrder(recs []grantRecord) []storage.Grant {
	slices.SortFunc(recs, func(a, b grantRecord) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ResourceID, b.ResourceID))
	})
	return grantsOf(recs)
}

// ListGrants returns every grant of the organization, ordered by UserID, then CreatedAt, then
// ResourceID.
func (s *Store) ListGrants(ctx context.Context, orgID string) ([]storage.Grant, error) {
	var recs []grantRecord
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		recs, err = scanGrants(tx.Bucket(bucketGrants), key(orgID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	slices.SortFunc(recs, func(a, b grantRecord) int {
		return cmp.Or(
			cmp.Compare(a.UserID, b.UserID),
			cmp.Compare(a.CreatedAt, b.CreatedAt),
			cmp.Compare(a.ResourceID, b.ResourceID),
		)
	})
	return grantsOf(recs), nil
}

func grantsOf(recs []grantRecord) []storage.Grant {
	out := make([]storage.Grant, len(recs))
	for i, r := range recs {
		out[i] = r.grant()
	}
	return out
}
