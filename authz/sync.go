package authz

import (
	"time"

	"github.com/grantry/grantry/storage"
)

// maxStaleness is how long what the engine holds of a shared store is trusted after the
// change feed last confirmed it has seen every change: well inside the second within which a
// change made by another process must show, and it bounds how long a question may still be
// answered from memory after the store stops answering unnoticed.
const maxStaleness = 500 * time.Millisecond

// fresh reports whether held facts may answer: always on a store no other process changes;
// on a shared one, only within maxStaleness of the change feed's last confirmation.
func (e *Engine) fresh() bool {
	if e.cache.maxUsers <= 0 {
		return false
	}
	return !e.shared || time.Now().UnixNano()-e.lastSync.Load() <= int64(maxStaleness)
}

// Changed drops what the engine holds of what another process's write reached: the users and
// groups c names, or everything of the organization when c.Org, as the write dropped here
// would have (store.go). The store's change feed calls it (storage.ChangeFeed.WatchChanges).
func (e *Engine) Changed(c storage.Change) {
	if c.Org {
		e.cache.dropOrg(c.OrgID)
		return
	}
	for _, id := range c.Users {
		e.cache.dropUser(c.OrgID, id)
	}
	for _, id := range c.Groups {
		e.cache.dropGroup(c.OrgID, id)
	}
}

// Synced tells the engine what the store's change feed knows: fresh, that it has reported every
// change made until now, so that held facts may be trusted for maxStaleness more (if they had
// gone unconfirmed for longer, everything held is dropped first: changes may have been
// missed); not fresh, that it cannot know, so that nothing held is trusted until it is fresh
// again and every question reads the store.
func (e *Engine) Synced(fresh bool) {
	if !fresh {
		e.lastSync.Store(0)
		return
	}
	now := time.Now().UnixNano()
	if last := e.lastSync.Swap(now); now-last > int64(maxStaleness) {
		e.cache.dropAll()
	}
}
