package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// ScanUsers reads every user with their own grants and their groups' ids in one read
// transaction: the users in key order (organization, then id), each decoded as GetUser decodes
// it, and each user's grants and memberships found from the user's key by cursors that only
// move forward.
func (s *Store) ScanUsers(ctx context.Context, fn func(u storage.ScannedUser) error) error {
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		grants, members := tx.Bucket(bucketGrants).Cursor(), tx.Bucket(bucketGroupsByMember).Cursor()
		var (
			u         storage.ScannedUser
			resources = internedIDs{} // a store's grants are of few resources, each of many users
			groupIDs  = internedIDs{}
		)
		users := tx.Bucket(bucketUsers).Cursor()
		for k, v := users.First(); k != nil; k, v = users.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var rec userRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			u = storage.ScannedUser{User: rec.user(), Groups: u.Groups[:0], Grants: u.Grants[:0]}
			for mk, _ := members.Seek(k); isUnder(mk, k); mk, _ = members.Next() {
				id, err := groupIDs.id(mk[len(k):])
				if err != nil {
					return fmt.Errorf("decode %q: %w", mk, err)
				}
				u.Groups = append(u.Groups, id)
			}
			var err error
			if u.Grants, err = scanGrantsUnder(grants, k, resources, u.Grants, decodeGrantExpiry); err != nil {
				return err
			}
			if err := fn(u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan users: %w", err)
	}
	return nil
}

// ScanGroups reads every group with its grants in one read transaction: the groups in
// the order of their organization's and their ids (the group_ids index), each group's grants
// found by a cursor that only moves forward.
func (s *Store) ScanGroups(ctx context.Context, fn func(g storage.ScannedGroup) error) error {
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		grants := tx.Bucket(bucketGroupGrants).Cursor()
		var (
			parts     []string
			g         storage.ScannedGroup
			resources = internedIDs{}
		)
		groups := tx.Bucket(bucketGroupIDs).Cursor()
		for k, integration := groups.First(); k != nil; k, integration = groups.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			ids, ok := splitKey(parts[:0], k)
			if !ok || len(ids) != 2 {
				return fmt.Errorf("decode %q: not a key of two ids", k)
			}
			rec, err := getGroup(tx, key(ids[0], string(integration), ids[1]))
			if err != nil {
				return fmt.Errorf("group %q: %w", k, err)
			}
			g = storage.ScannedGroup{OrgID: ids[0], GroupID: ids[1], DisplayName: rec.DisplayName, Grants: g.Grants[:0]}
			if g.Grants, err = scanGrantsUnder(grants, k, resources, g.Grants, decodeGroupGrantExpiry); err != nil {
				return err
			}
			if err := fn(g); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan groups: %w", err)
	}
	return nil
}

// scanGrantsUnder appends to out the grants under holder's key k (a user's in grants, a
// group's in group_grants) that c finds by seeking k and moving forward, each with its
// expiry, which expiry decodes from the stored value (Unix milliseconds, 0: never).
func scanGrantsUnder(c *bbolt.Cursor, k []byte, resources internedIDs, out []storage.ScannedGrant, expiry func(v []byte) (int64, error)) ([]storage.ScannedGrant, error) {
	for gk, gv := c.Seek(k); isUnder(gk, k); gk, gv = c.Next() {
		id, err := resources.id(gk[len(k):])
		if err != nil {
			return nil, fmt.Errorf("decode %q: %w", gk, err)
		}
		ms, err := expiry(gv)
		if err != nil {
			return nil, fmt.Errorf("decode %q: %w", gk, err)
		}
		g := storage.ScannedGrant{ResourceID: id}
		if ms != 0 {
			g.ExpiresAt = fromMillis(ms)
		}
		out = append(out, g)
	}
	return out, nil
}

// decodeGrantExpiry is the expiry of a user's grant stored as v.
func decodeGrantExpiry(v []byte) (int64, error) {
	var r grantRecord
	err := decodeGrant(v, &r)
	return r.ExpiresAt, err
}

// decodeGroupGrantExpiry is the expiry of a group's grant stored as v.
func decodeGroupGrantExpiry(v []byte) (int64, error) {
	var r groupGrantRecord
	err := json.Unmarshal(v, &r)
	return r.ExpiresAt, err
}

// internedIDs gives each id one string, however many keys spell it.
type internedIDs map[string]string

// id returns the id that k, a key's last part, spells: interned when it needs no escape.
func (ids internedIDs) id(k []byte) (string, error) {
	if n := len(k) - 1; n >= 0 && k[n] == 0 && bytes.IndexByte(k[:n], 0) < 0 {
		if id, ok := ids[string(k[:n])]; ok {
			return id, nil
		}
		id := string(k[:n])
		ids[id] = id
		return id, nil
	}
	parts, ok := splitKey(nil, k)
	if !ok || len(parts) != 1 {
		return "", errors.New("not a key ending in one id")
	}
	return parts[0], nil
}
