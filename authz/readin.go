package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grantry/grantry/storage"
)

// ReadInStats are what a read-in held.
type ReadInStats struct {
	// Users and Groups were read and held; Skipped were read but not held, because a write
	// reached them (or an organization changed) while the read-in was under way: each is
	// loaded on its next question.
	Users, Groups, Skipped int
	// Full says that the read-in stopped at the bound on the users held (Config.MaxUsers).
	Full bool
}

// errFull stops a scan that has read as many users as may be held.
var errFull = errors.New("as many users as may be held")

// ReadIn reads every group and user of every organization into memory, as many as may be
// held, so that the first question about each reads nothing from the store. It may run while
// the engine answers: questions asked meanwhile load what they need, and what a write reaches
// while it runs is not held from the read. It does nothing when the engine holds nothing, and
// returns errors.ErrUnsupported when the store cannot read everything in one pass
// (storage.FactsScanner).
func (e *Engine) ReadIn(ctx context.Context) (ReadInStats, error) {
	defer e.reading.Store(false)
	var stats ReadInStats
	if !e.fresh() {
		return stats, nil
	}
	scanner, ok := e.store.(storage.FactsScanner)
	if !ok {
		return stats, errors.ErrUnsupported
	}
	st := e.cache.scanStamp()
	type orgRead struct {
		o   *org
		cat *catalog
	}
	orgs := map[string]orgRead{}
	orgOf := func(id string) (orgRead, error) {
		if r, ok := orgs[id]; ok {
			return r, nil
		}
		o := e.cache.org(id)
		cat, err := e.catalog(ctx, o, id, true)
		if err != nil {
			return orgRead{}, err
		}
		orgs[id] = orgRead{o, cat}
		return orgs[id], nil
	}
	err := scanner.ScanGroups(ctx, func(g storage.ScannedGroup) error {
		r, err := orgOf(g.OrgID)
		if err != nil {
			return err
		}
		gr := &group{id: g.GroupID, name: g.DisplayName, grants: grantsOf(r.cat, len(g.Grants), scanned(g.Grants))}
		if e.cache.keepScannedGroup(r.o, g.GroupID, gr, st, r.cat) {
			stats.Groups++
		} else {
			stats.Skipped++
		}
		return nil
	})
	if err == nil {
		err = scanner.ScanUsers(ctx, func(u storage.ScannedUser) error {
			if stats.Users >= e.cache.maxUsers {
				stats.Full = true
				return errFull
			}
			r, err := orgOf(u.OrgID)
			if err != nil {
				return err
			}
			held := newUser(r.cat, u.User, u.Groups, len(u.Grants), scanned(u.Grants))
			if e.cache.keepScannedUser(r.o, u.OrgID, u.ID, held, st, r.cat) {
				stats.Users++
			} else {
				stats.Skipped++
			}
			return nil
		})
	}
	if err != nil && !errors.Is(err, errFull) {
		return stats, fmt.Errorf("read users and groups in: %w", err)
	}
	return stats, nil
}

// Reading reports whether a read-in is yet to end: questions asked meanwhile may read the
// store.
func (e *Engine) Reading() bool { return e.reading.Load() }

// scanned iterates a scan's grants.
func scanned(gs []storage.ScannedGrant) func(func(string, time.Time)) {
	return func(add func(string, time.Time)) {
		for _, g := range gs {
			add(g.ResourceID, g.ExpiresAt)
		}
	}
}
