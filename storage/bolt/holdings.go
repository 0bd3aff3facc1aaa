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

// ScanHoldings reads every user with their own grants, and whether they are in a group, in one
// read transaction: the users in key order, each user's grants and memberships found from the
// user's key by cursors that only move forward.
func (s *Store) ScanHoldings(ctx context.Context, fn func(u storage.ScannedUser) error) error {
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		grants, members := tx.Bucket(bucketGrants).Cursor(), tx.Bucket(bucketGroupsByMember).Cursor()
		var (
			parts     []string
			u         storage.ScannedUser
			resources = internedIDs{} // a store's grants are of few resources, each of many users
		)
		users := tx.Bucket(bucketUsers).Cursor()
		for k, v := users.First(); k != nil; k, v = users.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			ids, ok := splitKey(parts[:0], k)
			if !ok || len(ids) != 2 {
				return fmt.Errorf("decode %q: not a key of two ids", k)
			}
			var rec struct {
				Active bool `json:"active"`
			}
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			u = storage.ScannedUser{OrgID: ids[0], UserID: ids[1], Active: rec.Active, Grants: u.Grants[:0]}
			mk, _ := members.Seek(k)
			u.InGroups = isUnder(mk, k)
			for gk, gv := grants.Seek(k); isUnder(gk, k); gk, gv = grants.Next() {
				id, err := resources.id(gk[len(k):])
				if err != nil {
					return fmt.Errorf("decode %q: %w", gk, err)
				}
				var r grantRecord
				if err := decodeGrant(gv, &r); err != nil {
					return fmt.Errorf("decode %q: %w", gk, err)
				}
				g := storage.ScannedGrant{ResourceID: id}
				if r.ExpiresAt != 0 {
					g.ExpiresAt = fromMillis(r.ExpiresAt)
				}
				u.Grants = append(u.Grants, g)
			}
			if err := fn(u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan holdings: %w", err)
	}
	return nil
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
		return "", errors.New("not a key of three ids")
	}
	return parts[0], nil
}
