package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// The journal (package journal). A grant or a revoke of a user's access is acknowledged once it
// is written to a log file beside the data file and that file is synced, and applied to the
// data file later, a second's changes in one transaction: a change undone before it was
// applied (a grant, then its revoke) writes no page of grants at all, and the events of a
// second share the pages of their indexes. Written into the data file at once, each change
// would rewrite a leaf somewhere in a large tree, and its branches, for the grant, its index by
// resource, the event and the event's indexes by user and by resource, and take bbolt's two
// syncs.
//
// The reads of one user's grants (UserGrants, UserFacts) read the journal's
// pending changes over the data file. Every other read and every other write applies the
// journal first (Store.view, Store.update, the batcher), so it sees the data file as if each
// change had been written into it when it was acknowledged.

var bucketJournal = []byte("journal") // "applied" → the sequence number of the last change applied, 8 bytes big-endian

var appliedKey = []byte("applied")

// openJournal opens the journal beside the data file, path.0 and path.1, and applies what it
// holds beyond the last change applied. applyAfter zero is the journal's own delay.
func (s *Store) openJournal(path string, noSync bool, applyAfter time.Duration) (*journal.Journal, error) {
	return journal.Open(journal.Config{
		Path: path, NoSync: noSync, ApplyAfter: applyAfter,
		Applied: s.journalApplied,
		Apply:   s.applyJournal,
	})
}

// journalApplied reads the sequence number of the last change applied; 0 if none.
func (s *Store) journalApplied() (applied uint64, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketJournal).Get(appliedKey); len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return applied, err
}

// applyJournal writes recs into the data file in one transaction.
func (s *Store) applyJournal(recs []journal.Record) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if s.applyFault != nil {
			if err := s.applyFault(); err != nil {
				return err
			}
		}
		return applyRecords(tx, recs)
	})
}

// applyRecords writes recs, in order, into the data file within tx, and records the last one's
// sequence number as applied. Of several changes to one grant only the last is written, and
// not even that if it leaves the grant as the data file has it.
func applyRecords(tx *bbolt.Tx, recs []journal.Record) error {
	grants, byResource := tx.Bucket(bucketGrants), tx.Bucket(bucketGrantsByResource)
	last := make(map[string]int, len(recs)) // key(org, user, resource) → index of its last change
	for i, r := range recs {
		if r.Changed {
			last[string(key(r.OrgID, r.UserID, r.ResourceID))] = i
		}
	}
	for i, r := range recs {
		for _, e := range r.Events {
			if err := appendEvent(tx, e); err != nil {
				return fmt.Errorf("record events: %w", err)
			}
		}
		if !r.Changed {
			continue
		}
		if r.Held {
			ref := expiryRef{Kind: expiryUser, OrgID: r.OrgID, Holder: r.UserID, ResourceID: r.ResourceID, ExpiresAt: r.ExpiresAt}
			if err := indexExpiry(tx, ref); err != nil {
				return err
			}
		}
		k := key(r.OrgID, r.UserID, r.ResourceID)
		if last[string(k)] != i {
			continue
		}
		had := grants.Get(k) != nil
		switch {
		case r.Held:
			if !had {
				if err := byResource.Put(key(r.OrgID, r.ResourceID, r.UserID), []byte(r.UserID)); err != nil {
					return err
				}
			}
			if err := put(grants, k, grantValue(r.CreatedAt, r.ExpiresAt)); err != nil {
				return err
			}
		case had:
			if err := byResource.Delete(key(r.OrgID, r.ResourceID, r.UserID)); err != nil {
				return err
			}
			if err := grants.Delete(k); err != nil {
				return err
			}
		}
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], recs[len(recs)-1].Seq)
	return tx.Bucket(bucketJournal).Put(appliedKey, v[:])
}

// JournalPending is how many grants and revokes are journaled and not yet applied to the data
// file: about a second's at most, unless applying fails.
func (s *Store) JournalPending() int { return s.journal.Pending() }

// JournalApplyFailures counts the applies of the journal that failed. The changes stay
// journaled, and every read that needs them fails until an apply succeeds.
func (s *Store) JournalApplyFailures() uint64 { return s.journal.ApplyFailures() }
