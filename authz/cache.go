package authz

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// cache holds the facts the policy reads: each organization's catalog (its resources and
// integrations), and users and groups, each loaded from the store on first need and kept until
// a write changes it.
//
// It is never staler than the store for writes made through this process: every write drops
// what it changes before it is acknowledged (store.go). Writes of other processes arrive through
// the store's change feed, which drops the same: the users and groups they reached, or the
// whole organization (sync.go). A load that races a
// drop of what it loads is used for the one question that made it and not kept: each load
// takes a stamp of what could drop it before reading the store, and keeps what it read only if
// the stamp is unchanged after.
//
// Users and groups are held up to maxUsers each; past that, an arbitrary one of the shard is
// let go to make room, and loaded again when next needed.
type cache struct {
	maxUsers int
	seed     maphash.Seed
	// usersHeld and groupsHeld count what every organization holds, against maxUsers.
	usersHeld, groupsHeld atomic.Int64

	mu   sync.RWMutex // of orgs
	orgs map[string]*org
	all  atomic.Uint64 // moves to drop everything at once
	// orgChanges moves with every change of any organization as a whole (its generation, its
	// catalog, its groups), and userDrops with every drop of a user, by the user's hash: for a
	// read-in, which reads organizations it does not know yet.
	orgChanges atomic.Uint64
	userDrops  [scanBuckets]atomic.Uint64

	hits, misses atomic.Uint64
}

// orgShards spreads an organization's users (and groups) over locks, so that concurrent
// questions rarely wait for each other; scanBuckets spreads a read-in's stamp.
const (
	orgShards   = 16
	scanBuckets = 64
)

// org is what the cache holds of one organization: as a whole, its generation and catalog;
// and its users and groups, by id.
type org struct {
	gen atomic.Uint64 // moves on every change that may reach any of its facts

	mu  sync.Mutex // serialises changes of cat
	cat atomic.Pointer[catalog]
	// catChanges moves on every change of the catalog, and groupDrops on every drop of one of
	// the organization's groups, so that a load that raced one is not kept.
	catChanges, groupDrops atomic.Uint64

	users  [orgShards]shard[*user]
	groups [orgShards]shard[*group]
}

// shard holds some of an organization's users (or groups), by id.
type shard[V any] struct {
	mu      sync.RWMutex
	entries map[string]entry[V]
	// dropped counts the drops of this shard's entries, so that a load that started before one
	// is not kept.
	dropped uint64
}

// entry is a held user or group, or the fact that there is none (v nil), at the generation of
// its organization it was read at.
type entry[V any] struct {
	gen uint64
	v   V
}

func newCache(maxUsers int) *cache {
	return &cache{maxUsers: maxUsers, seed: maphash.MakeSeed(), orgs: map[string]*org{}}
}

func (c *cache) org(id string) *org {
	c.mu.RLock()
	o, ok := c.orgs[id]
	c.mu.RUnlock()
	if ok {
		return o
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok = c.orgs[id]; !ok {
		o = &org{}
		c.orgs[id] = o
	}
	return o
}

// gen is the generation of an organization's facts: it moves when the organization's, or the
// whole cache's, does (both only grow, so their sum changes whenever either does).
func (c *cache) gen(o *org) uint64 { return o.gen.Load() + c.all.Load() }

func (c *cache) hash(id string) uint64 { return maphash.String(c.seed, id) }

// stamp is what a load must find unchanged to keep what it read: taken before the store is
// read, it moves with any drop that could reach what the load reads.
type stamp struct {
	gen, dropped, cat, groups uint64
}

// A user or group is kept only if the catalog its grants were resolved against is the one held:
// a resource's removal marks it gone in the held catalog alone (store.go).

// unchanged reports whether nothing that st guards against happened since it was taken;
// shardDropped is the shard's count of drops, read under its lock.
func (c *cache) unchanged(o *org, st stamp, shardDropped uint64) bool {
	return st.gen == c.gen(o) && st.dropped == shardDropped && st.cat == o.catChanges.Load() && st.groups == o.groupDrops.Load()
}

// lookup returns the held value of id, if it is of the organization's generation.
func lookup[V any](c *cache, sh *shard[V], o *org, id string) (V, bool) {
	g := c.gen(o)
	sh.mu.RLock()
	e, ok := sh.entries[id]
	sh.mu.RUnlock()
	if ok && e.gen == g {
		return e.v, true
	}
	var zero V
	return zero, false
}

// keep holds v as id's value if nothing that could change it happened since st was taken, and
// reports whether it did. A group's drops are counted by its organization (groupDrops), so that
// a group read with a user is kept on the user's stamp: its shard's are not looked at. held
// counts what is held of v's kind, against maxUsers.
func keep[V any](c *cache, sh *shard[V], o *org, id string, v V, st stamp, byShard bool, cat *catalog, held *atomic.Int64) bool {
	if c.maxUsers <= 0 || o.cat.Load() != cat {
		return false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	dropped := st.dropped
	if byShard {
		dropped = sh.dropped
	}
	if !c.unchanged(o, st, dropped) {
		return false
	}
	if _, ok := sh.entries[id]; !ok {
		if held.Load() >= int64(c.maxUsers) {
			if len(sh.entries) == 0 {
				return false // room is held by other shards
			}
			for old := range sh.entries { // an arbitrary one makes room
				delete(sh.entries, old)
				break
			}
		} else {
			held.Add(1)
		}
	}
	if sh.entries == nil {
		sh.entries = map[string]entry[V]{}
	}
	sh.entries[id] = entry[V]{gen: st.gen, v: v}
	return true
}

// drop lets id's value go.
func drop[V any](sh *shard[V], id string, held *atomic.Int64) {
	sh.mu.Lock()
	sh.dropped++
	if _, ok := sh.entries[id]; ok {
		delete(sh.entries, id)
		held.Add(-1)
	}
	sh.mu.Unlock()
}

func (o *org) userShard(c *cache, id string) *shard[*user] {
	return &o.users[c.hash(id)%orgShards]
}

func (o *org) groupShard(c *cache, id string) *shard[*group] {
	return &o.groups[c.hash(id)%orgShards]
}

// user returns the held user, if held: nil for one held as not existing.
func (c *cache) user(o *org, userID string) (*user, bool) {
	return lookup(c, o.userShard(c, userID), o, userID)
}

// userStamp is the stamp a load of the user takes.
func (c *cache) userStamp(o *org, userID string) stamp {
	sh := o.userShard(c, userID)
	sh.mu.RLock()
	dropped := sh.dropped
	sh.mu.RUnlock()
	return stamp{gen: c.gen(o), dropped: dropped, cat: o.catChanges.Load(), groups: o.groupDrops.Load()}
}

// keepUser holds u, whose grants were resolved against cat.
func (c *cache) keepUser(o *org, userID string, u *user, st stamp, cat *catalog) bool {
	return keep(c, o.userShard(c, userID), o, userID, u, st, true, cat, &c.usersHeld)
}

// group returns the held group, if held: nil for one held as not existing.
func (c *cache) group(o *org, groupID string) (*group, bool) {
	return lookup(c, o.groupShard(c, groupID), o, groupID)
}

// groupStamp is the stamp a load of a group takes.
func (c *cache) groupStamp(o *org) stamp {
	return stamp{gen: c.gen(o), cat: o.catChanges.Load(), groups: o.groupDrops.Load()}
}

// keepGroup holds g, whose grants were resolved against cat.
func (c *cache) keepGroup(o *org, groupID string, g *group, st stamp, cat *catalog) bool {
	return keep(c, o.groupShard(c, groupID), o, groupID, g, st, false, cat, &c.groupsHeld)
}

// dropUser lets the organization's user go.
func (c *cache) dropUser(orgID, userID string) {
	o := c.org(orgID)
	c.userDrops[maphash.String(c.seed, orgID+"\x00"+userID)%scanBuckets].Add(1)
	drop(o.userShard(c, userID), userID, &c.usersHeld)
}

// dropGroup lets the organization's group go. The organization's count of group drops moves
// first, so that a load stamped before the drop either finds it moved and keeps nothing, or
// kept what it read before and sees it dropped now.
func (c *cache) dropGroup(orgID, groupID string) {
	o := c.org(orgID)
	o.groupDrops.Add(1)
	c.orgChanges.Add(1)
	drop(o.groupShard(c, groupID), groupID, &c.groupsHeld)
}

// dropOrg lets everything of the organization go: its entries are recognised as stale by their
// generation on their next use (and replaced, or let go to make room), and its catalog is read
// again.
func (c *cache) dropOrg(orgID string) {
	o := c.org(orgID)
	o.mu.Lock()
	o.gen.Add(1)
	o.catChanges.Add(1)
	c.orgChanges.Add(1)
	o.cat.Store(nil)
	o.mu.Unlock()
}

// dropAll lets everything go, as when changes may have been missed.
func (c *cache) dropAll() {
	c.all.Add(1)
	c.orgChanges.Add(1)
}

// catalog returns the organization's catalog if it is held and of its generation.
func (c *cache) catalog(o *org) (*catalog, bool) {
	if cat := o.cat.Load(); cat != nil && cat.gen == c.gen(o) {
		return cat, true
	}
	return nil, false
}

// catalogStamp is the stamp a load of the organization's catalog takes.
func (c *cache) catalogStamp(o *org) stamp {
	return stamp{gen: c.gen(o), cat: o.catChanges.Load(), groups: o.groupDrops.Load()}
}

// keepCatalog holds cat, read with st, unless the catalog changed since, and returns the
// catalog to use: the one another load kept meanwhile, whose numbering of resources the users
// held are resolved against, rather than cat; cat itself otherwise.
func (c *cache) keepCatalog(o *org, cat *catalog, st stamp) *catalog {
	o.mu.Lock()
	defer o.mu.Unlock()
	if held := o.cat.Load(); held != nil && held.gen == c.gen(o) {
		return held
	}
	if st.gen != c.gen(o) || st.cat != o.catChanges.Load() {
		return cat
	}
	cat.gen = st.gen
	o.cat.Store(cat)
	return cat
}

// changeCatalog applies change to the organization's held catalog, if one is held, and makes
// any load under way not keep what it read.
func (c *cache) changeCatalog(orgID string, change func(*catalog) *catalog) {
	o := c.org(orgID)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.catChanges.Add(1)
	c.orgChanges.Add(1)
	if cat := o.cat.Load(); cat != nil && cat.gen == c.gen(o) {
		o.cat.Store(change(cat))
	}
}

// len is how many users are held.
func (c *cache) len() int { return int(c.usersHeld.Load()) }

// scanStamp is what a read-in must find unchanged to hold what it read: taken before its scans
// begin, it moves with any change of any organization as a whole and with any drop of a user of
// each bucket.
type scanStamp struct {
	orgChanges uint64
	users      [scanBuckets]uint64
}

func (c *cache) scanStamp() scanStamp {
	st := scanStamp{orgChanges: c.orgChanges.Load()}
	for i := range c.userDrops {
		st.users[i] = c.userDrops[i].Load()
	}
	return st
}

// keepScannedGroup holds a group a read-in read, resolved against cat, unless an organization
// changed since st was taken.
func (c *cache) keepScannedGroup(o *org, groupID string, g *group, st scanStamp, cat *catalog) bool {
	gs := c.groupStamp(o) // before the check, so that a change after it moves gs's counts
	if c.orgChanges.Load() != st.orgChanges {
		return false
	}
	return c.keepGroup(o, groupID, g, gs, cat)
}

// keepScannedUser holds a user a read-in read, resolved against cat, unless an organization
// changed or a user of the user's bucket was dropped since st was taken.
func (c *cache) keepScannedUser(o *org, orgID, userID string, u *user, st scanStamp, cat *catalog) bool {
	us := c.userStamp(o, userID) // before the checks, as keepScannedGroup's
	bucket := maphash.String(c.seed, orgID+"\x00"+userID) % scanBuckets
	if c.orgChanges.Load() != st.orgChanges || c.userDrops[bucket].Load() != st.users[bucket] {
		return false
	}
	return c.keepUser(o, userID, u, us, cat)
}
