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
	users    [shards]shard[*user]
	groups   [shards]shard[*group]

	mu   sync.RWMutex // of orgs
	orgs map[string]*org
	all  atomic.Uint64 // moves to drop everything at once
	// orgChanges moves with every change of any organization as a whole (its generation, its
	// catalog, its groups), for a read-in, which reads organizations it does not know yet.
	orgChanges atomic.Uint64

	hits, misses atomic.Uint64
}

const shards = 64

// org is what the cache knows of one organization as a whole.
type org struct {
	gen atomic.Uint64 // moves on every change that may reach any of its facts

	mu  sync.Mutex // serialises changes of cat
	cat atomic.Pointer[catalog]
	// catChanges moves on every change of the catalog, and groupDrops on every drop of one of
	// the organization's groups, so that a load that raced one is not kept.
	catChanges, groupDrops atomic.Uint64
}

type key struct{ org, id string }

// shard holds some of the users (or groups) of every organization.
type shard[V any] struct {
	mu      sync.RWMutex
	entries map[key]entry[V]
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
	c := &cache{maxUsers: maxUsers, seed: maphash.MakeSeed(), orgs: map[string]*org{}}
	for i := range c.users {
		c.users[i].entries = map[key]entry[*user]{}
		c.groups[i].entries = map[key]entry[*group]{}
	}
	return c
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

func (c *cache) shardOf(k key) int {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.org)
	h.WriteByte(0)
	h.WriteString(k.id)
	return int(h.Sum64() % shards)
}

// stamp is what a load must find unchanged to keep what it read: taken before the store is
// read, it moves with any drop that could reach what the load reads.
type stamp struct {
	gen, dropped, cat, groups uint64
}

// A user or group is kept only if the catalog its grants were resolved against is the one held:
// a resource's removal marks it gone in the held catalog alone (store.go).

// stampOf takes the stamp of a load of what sh holds, of the organization o.
func stampOf[V any](c *cache, sh *shard[V], o *org) stamp {
	sh.mu.RLock()
	dropped := sh.dropped
	sh.mu.RUnlock()
	return stamp{gen: c.gen(o), dropped: dropped, cat: o.catChanges.Load(), groups: o.groupDrops.Load()}
}

// unchanged reports whether nothing that st guards against happened since it was taken;
// shardDropped is the shard's count of drops, read under its lock.
func (c *cache) unchanged(o *org, st stamp, shardDropped uint64) bool {
	return st.gen == c.gen(o) && st.dropped == shardDropped && st.cat == o.catChanges.Load() && st.groups == o.groupDrops.Load()
}

// lookup returns the held value of k, if it is of the organization's generation.
func lookup[V any](c *cache, sh *shard[V], o *org, k key) (V, bool) {
	g := c.gen(o)
	sh.mu.RLock()
	e, ok := sh.entries[k]
	sh.mu.RUnlock()
	if ok && e.gen == g {
		return e.v, true
	}
	var zero V
	return zero, false
}

// keep holds v as k's value if nothing that could change it happened since st was taken, and
// reports whether it did. A group's drops are counted by its organization (groupDrops), so that
// a group read with a user is kept on the user's stamp: its shard's are not looked at.
func keep[V any](c *cache, sh *shard[V], o *org, k key, v V, st stamp, byShard bool, cat *catalog) bool {
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
	if _, held := sh.entries[k]; !held && len(sh.entries) >= c.maxUsers/shards+1 {
		for old := range sh.entries { // an arbitrary one makes room
			delete(sh.entries, old)
			break
		}
	}
	sh.entries[k] = entry[V]{gen: st.gen, v: v}
	return true
}

// drop lets k's value go.
func drop[V any](sh *shard[V], k key) {
	sh.mu.Lock()
	sh.dropped++
	delete(sh.entries, k)
	sh.mu.Unlock()
}

func (c *cache) userShard(orgID, userID string) (*shard[*user], key) {
	k := key{orgID, userID}
	return &c.users[c.shardOf(k)], k
}

func (c *cache) groupShard(orgID, groupID string) (*shard[*group], key) {
	k := key{orgID, groupID}
	return &c.groups[c.shardOf(k)], k
}

// user returns the held user, if held: nil for one held as not existing.
func (c *cache) user(o *org, orgID, userID string) (*user, bool) {
	sh, k := c.userShard(orgID, userID)
	return lookup(c, sh, o, k)
}

// userStamp is the stamp a load of the user takes.
func (c *cache) userStamp(o *org, orgID, userID string) stamp {
	sh, _ := c.userShard(orgID, userID)
	return stampOf(c, sh, o)
}

// keepUser holds u, whose grants were resolved against cat.
func (c *cache) keepUser(o *org, orgID, userID string, u *user, st stamp, cat *catalog) bool {
	sh, k := c.userShard(orgID, userID)
	return keep(c, sh, o, k, u, st, true, cat)
}

// group returns the held group, if held: nil for one held as not existing.
func (c *cache) group(o *org, orgID, groupID string) (*group, bool) {
	sh, k := c.groupShard(orgID, groupID)
	return lookup(c, sh, o, k)
}

// groupStamp is the stamp a load of a group takes.
func (c *cache) groupStamp(o *org) stamp {
	return stamp{gen: c.gen(o), cat: o.catChanges.Load(), groups: o.groupDrops.Load()}
}

// keepGroup holds g, whose grants were resolved against cat.
func (c *cache) keepGroup(o *org, orgID, groupID string, g *group, st stamp, cat *catalog) bool {
	sh, k := c.groupShard(orgID, groupID)
	return keep(c, sh, o, k, g, st, false, cat)
}

// dropUser lets the organization's user go.
func (c *cache) dropUser(orgID, userID string) {
	sh, k := c.userShard(orgID, userID)
	drop(sh, k)
}

// dropGroup lets the organization's group go. The organization's count of group drops moves
// first, so that a load stamped before the drop either finds it moved and keeps nothing, or
// kept what it read before and sees it dropped now.
func (c *cache) dropGroup(orgID, groupID string) {
	c.org(orgID).groupDrops.Add(1)
	c.orgChanges.Add(1)
	sh, k := c.groupShard(orgID, groupID)
	drop(sh, k)
}

// dropOrg lets everything of the organization go: its entries are recognised as stale by their
// generation on their next use, and its catalog is read again.
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

// keepCatalog holds cat, read with st, unless the catalog changed since.
func (c *cache) keepCatalog(o *org, cat *catalog, st stamp) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st.gen != c.gen(o) || st.cat != o.catChanges.Load() {
		return false
	}
	cat.gen = st.gen
	o.cat.Store(cat)
	return true
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
func (c *cache) len() int {
	n := 0
	for i := range c.users {
		c.users[i].mu.RLock()
		n += len(c.users[i].entries)
		c.users[i].mu.RUnlock()
	}
	return n
}

// scanStamp is what a read-in must find unchanged to hold what it read: taken before its scans
// begin, it moves with any change of any organization as a whole and with any drop of a user of
// each shard.
type scanStamp struct {
	orgChanges uint64
	users      [shards]uint64
}

func (c *cache) scanStamp() scanStamp {
	st := scanStamp{orgChanges: c.orgChanges.Load()}
	for i := range c.users {
		c.users[i].mu.RLock()
		st.users[i] = c.users[i].dropped
		c.users[i].mu.RUnlock()
	}
	return st
}

// keepScannedGroup holds a group a read-in read, resolved against cat, unless an organization
// changed since st was taken.
func (c *cache) keepScannedGroup(o *org, orgID, groupID string, g *group, st scanStamp, cat *catalog) bool {
	gs := c.groupStamp(o) // before the check, so that a change after it moves gs's counts
	if c.orgChanges.Load() != st.orgChanges {
		return false
	}
	return c.keepGroup(o, orgID, groupID, g, gs, cat)
}

// keepScannedUser holds a user a read-in read, resolved against cat, unless an organization
// changed or a user of the user's shard was dropped since st was taken.
func (c *cache) keepScannedUser(o *org, orgID, userID string, u *user, st scanStamp, cat *catalog) bool {
	us := c.userStamp(o, orgID, userID) // before the check, as keepScannedGroup's
	if c.orgChanges.Load() != st.orgChanges {
		return false
	}
	sh, k := c.userShard(orgID, userID)
	us.dropped = st.users[c.shardOf(k)]
	return keep(c, sh, o, k, u, us, true, cat)
}
