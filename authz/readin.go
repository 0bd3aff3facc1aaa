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
// while it runs is not held from the read. On a shared store it first waits for the change
// feed to confirm it is up to date (Synced). It does nothing when the engine holds nothing.
func (e *Engine) ReadIn(ctx context.Context) (ReadInStats, error) {
	defer e.reading.Store(false)
	var stats ReadInStats
	if e.cache.maxUsers <= 0 {
		return stats, nil
	}
	// On a shared store, what is read is used only once the change feed has confirmed it sees
	// every change, and a read that began before the feed's first look could miss a change the
	// feed takes for its starting point: the read waits for that first confirmation.
	for !e.fresh() {
		select {
		case <-ctx.Done():
			return stats, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
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
		cat, err := e.catalog(ctx, o, id)
		if err != nil {
			return orgRead{}, err
		}
		orgs[id] = orgRead{o, cat}
		return orgs[id], nil
	}
	err := e.store.ScanGroups(ctx, func(g storage.ScannedGroup) error {
		r, err := orgOf(g.OrgID)
		if err != nil {
			return err
		}
		gr := &group{name: g.DisplayName, grants: grantsOf(r.cat, len(g.Grants), scanned(g.Grants))}
		if e.cache.keepScannedGroup(r.o, g.GroupID, gr, st, r.cat) {
			stats.Groups++
		} else {
			stats.Skipped++
		}
		return nil
	})
	if err == nil {
		err = e.store.ScanUsers(ctx, func(u storage.ScannedUser) error {
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
