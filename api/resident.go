package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantry/grantry/storage"
)

// residentIndex holds, from start, every user's own grants in a compact form: for each user
// without groups, whether they are active and the resources of their grants (with the expiry
// of those that expire). A question about a user the cache does not hold is then answered
// without reading the store: in an organization of a million users, nearly every question is
// about a user not asked about for a long while, and reading one from the embedded store
// touches pages of a multi-gigabyte file that are in no CPU cache.
//
// It is read in at start (readIn), while the server already answers from the store, and never
// added to after: a write that touches a user drops the user (their questions read the store
// again, and the cache keeps them as before), one that touches an organization as a whole
// drops the organization, through the cache's invalidations (accessCache.invalidateUser,
// invalidateOrg, invalidateAll), so it is never staler than the cache. Drops made while a
// read-in is under way are noted and made again on what it read before it is kept, since it
// may have read those users before the write. Creating a resource drops nothing: no user holds
// a grant of it yet. Once writes have dropped enough (worn), it is read in again whole
// (Server.KeepResident), the old one answering meanwhile.
type residentIndex struct {
	source    storage.HoldingsScanner // what readIn reads
	maxGrants int                     // the most grants, and users, readIn keeps

	mu   sync.RWMutex
	orgs map[string]*residentOrg
	seed maphash.Seed

	kept int // users the last read-in kept; under mu

	readingMu sync.Mutex
	reading   *residentDrops // while a read-in is under way, the drops made since it began
	readOnce  atomic.Bool    // a read-in has ended

	dropped atomic.Int64 // users dropped (or created) since the last read-in began; see worn
}

// residentDrops is what was dropped while a read-in was under way.
type residentDrops struct {
	users [][2]string // organization, user
	orgs  []string
	all   bool
}

// residentOrg is one organization's users. Their grants are runs of one array of resource
// numbers, without pointers for the garbage collector to follow.
type residentOrg struct {
	ids     []string          // resource ids by number
	numbers map[string]uint32 // resource numbers by id
	grants  []uint32          // each user's run sorted
	expires []int64           // Unix milliseconds (0: never), in runs beside grants; only users with an expiring grant have one
	shards  [residentShards]residentShard
}

const residentShards = 16

type residentShard struct {
	mu    sync.RWMutex
	users map[string]residentUser
}

// residentUser is one user: grants[off:off+n] are their grants' resource numbers, and, if
// expiring is at least 0, expires[expiring:expiring+n] the grants' expiries.
type residentUser struct {
	off, n   uint32
	expiring int32
	active   bool
}

func newResidentIndex(source storage.HoldingsScanner, maxGrants int) *residentIndex {
	return &residentIndex{source: source, maxGrants: maxGrants, orgs: map[string]*residentOrg{}, seed: maphash.MakeSeed()}
}

func newResidentOrg() *residentOrg {
	o := &residentOrg{numbers: map[string]uint32{}}
	for i := range o.shards {
		o.shards[i].users = map[string]residentUser{}
	}
	return o
}

func (o *residentOrg) shard(seed maphash.Seed, user string) *residentShard {
	return &o.shards[maphash.String(seed, user)%residentShards]
}

// errResidentFull stops a read-in that has read as many as it may keep.
var errResidentFull = errors.New("resident index full")

// ResidentRead is what Server.ReadIn read.
type ResidentRead struct {
	// Users and Grants were read in; Dropped of those users were written to while it read,
	// and so are not kept.
	Users, Grants, Dropped int
	// Full is whether it stopped at its bound, leaving users unread.
	Full bool
}

// readIn reads the users of its source in, whole, as long as their grants and they (each
// counting as one) number at most maxGrants. What it read replaces what r held, less what was
// dropped while it read, since that may have been read before the change. One read-in at a
// time.
func (r *residentIndex) readIn(ctx context.Context) (ResidentRead, error) {
	r.readingMu.Lock()
	busy := r.reading != nil
	if !busy {
		r.reading = &residentDrops{}
		r.dropped.Store(0) // what was dropped so far is read again

	}
	r.readingMu.Unlock()
	if busy {
		return ResidentRead{}, errors.New("read users' grants in: a read-in is under way")
	}
	orgs, read, err := r.scan(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readingMu.Lock()
	dropped := r.reading
	r.reading = nil
	r.readingMu.Unlock()
	defer r.readOnce.Store(true)
	if err != nil {
		return ResidentRead{}, err
	}
	if dropped.all {
		clear(orgs)
	}
	for _, org := range dropped.orgs {
		delete(orgs, org)
	}
	for _, k := range dropped.users {
		if o := orgs[k[0]]; o != nil {
			delete(o.shard(r.seed, k[1]).users, k[1])
		}
	}
	r.orgs = orgs
	r.kept = r.heldLocked()
	read.Dropped = read.Users - r.kept
	return read, nil
}

// worn reports whether the users dropped since the last read-in began (users created count,
// being held no more than dropped ones) number at least a tenth of those it kept, or any if it
// kept none: enough that reading in again is worth its cost.
func (r *residentIndex) worn() bool {
	r.mu.RLock()
	kept := r.kept
	r.mu.RUnlock()
	return r.dropped.Load() >= max(1, int64(kept/10))
}

// readingIn reports whether a read-in is under way or none has ended yet.
func (r *residentIndex) readingIn() bool {
	r.readingMu.Lock()
	defer r.readingMu.Unlock()
	return r.reading != nil || !r.readOnce.Load()
}

// scan reads the source's users in, by organization, up to maxGrants.
func (r *residentIndex) scan(ctx context.Context) (map[string]*residentOrg, ResidentRead, error) {
	orgs := map[string]*residentOrg{}
	var (
		read    ResidentRead
		scratch []residentGrant
	)
	err := r.source.ScanHoldings(ctx, func(u storage.ScannedUser) error {
		if u.InGroups {
			return nil
		}
		if read.Users+read.Grants+1+len(u.Grants) > r.maxGrants {
			read.Full = true
			return errResidentFull
		}
		o := orgs[u.OrgID]
		if o == nil {
			o = newResidentOrg()
			orgs[u.OrgID] = o
		}
		if o.add(r.seed, u, &scratch) {
			read.Users++
			read.Grants += len(u.Grants)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errResidentFull) {
		return nil, ResidentRead{}, fmt.Errorf("read users' grants in: %w", err)
	}
	return orgs, read, nil
}

// noteDrop notes a drop in what a read-in under way will drop before it is kept.
func (r *residentIndex) noteDrop(note func(d *residentDrops)) {
	r.readingMu.Lock()
	if r.reading != nil {
		note(r.reading)
	}
	r.readingMu.Unlock()
}

// len is how many users o holds.
func (o *residentOrg) len() int {
	n := 0
	for i := range o.shards {
		sh := &o.shards[i]
		sh.mu.RLock()
		n += len(sh.users)
		sh.mu.RUnlock()
	}
	return n
}

// held is how many users the index holds; 0 for a nil index.
func (r *residentIndex) held() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.heldLocked()
}

func (r *residentIndex) heldLocked() int {
	n := 0
	for _, o := range r.orgs {
		n += o.len()
	}
	return n
}

// add keeps u, unless an expiry of theirs is not a whole millisecond (kept as milliseconds, it
// could not be given back as it was), and reports whether it did. scratch is space to reuse.
func (o *residentOrg) add(seed maphash.Seed, u storage.ScannedUser, scratch *[]residentGrant) bool {
	run := (*scratch)[:0]
	expiring := false
	for _, g := range u.Grants {
		var ms int64 // 0: never
		if !g.ExpiresAt.IsZero() {
			ms = g.ExpiresAt.UnixMilli()
			if ms == 0 || !time.UnixMilli(ms).Equal(g.ExpiresAt) {
				return false
			}
			expiring = true
		}
		n, ok := o.numbers[g.ResourceID]
		if !ok {
			n = uint32(len(o.ids))
			o.numbers[g.ResourceID] = n
			o.ids = append(o.ids, g.ResourceID)
		}
		run = append(run, residentGrant{n, ms})
	}
	*scratch = run
	// Sorted by number, as they are searched.
	slices.SortFunc(run, func(a, b residentGrant) int { return cmp.Compare(a.number, b.number) })
	ru := residentUser{off: uint32(len(o.grants)), n: uint32(len(run)), expiring: -1, active: u.Active}
	for _, g := range run {
		o.grants = append(o.grants, g.number)
	}
	if expiring {
		ru.expiring = int32(len(o.expires))
		for _, g := range run {
			o.expires = append(o.expires, g.expires)
		}
	}
	o.shard(seed, u.UserID).users[u.UserID] = ru
	return true
}

// residentGrant is a grant being read in: its resource's number, and its expiry in Unix
// milliseconds (0: never).
type residentGrant struct {
	number  uint32
	expires int64
}

// user returns the organization's user as the index holds them, with their organization's
// arrays; ok is false when it does not hold them (nor anyone: a nil index), who must then be
// read from the store.
func (r *residentIndex) user(org, user string) (o *residentOrg, u residentUser, ok bool) {
	if r == nil {
		return nil, u, false
	}
	r.mu.RLock()
	o = r.orgs[org]
	r.mu.RUnlock()
	if o == nil {
		return nil, u, false
	}
	sh := o.shard(r.seed, user)
	sh.mu.RLock()
	u, ok = sh.users[user]
	sh.mu.RUnlock()
	return o, u, ok
}

// grant is u's i-th grant, in the order of their run. The run and the table of ids are never
// changed once read in: only users are dropped.
func (o *residentOrg) grant(org, user string, u residentUser, i int) storage.Grant {
	g := storage.Grant{OrgID: org, UserID: user, ResourceID: o.ids[o.grants[int(u.off)+i]]}
	if u.expiring >= 0 {
		if ms := o.expires[int(u.expiring)+i]; ms != 0 {
			g.ExpiresAt = time.UnixMilli(ms).UTC()
		}
	}
	return g
}

// facts is the store's UserFacts from memory: of the user's record, only Active is read in.
func (r *residentIndex) facts(org, user string) (storage.Facts, bool) {
	o, u, ok := r.user(org, user)
	if !ok {
		return storage.Facts{}, false
	}
	f := storage.Facts{Found: true, User: storage.User{OrgID: org, ID: user, Active: u.active}}
	f.Grants = make([]storage.Grant, u.n)
	for i := range f.Grants {
		f.Grants[i] = o.grant(org, user, u, i)
	}
	return f, true
}

// asked is the store's AskedGrants from memory.
func (r *residentIndex) asked(org, user string, ids []string) (storage.Asked, bool) {
	o, u, ok := r.user(org, user)
	if !ok {
		return storage.Asked{}, false
	}
	run := o.grants[u.off : u.off+u.n]
	held := true
	var a storage.Asked
	for _, id := range ids {
		n, known := o.numbers[id]
		i, found := slices.BinarySearch(run, n)
		if !known || !found {
			held = false
			continue
		}
		a.Grants = append(a.Grants, o.grant(org, user, u, i))
	}
	if held {
		a.Held, a.Found, a.Active = true, true, u.active
	}
	return a, true
}

// dropUser forgets one user.
func (r *residentIndex) dropUser(org, user string) {
	r.noteDrop(func(d *residentDrops) { d.users = append(d.users, [2]string{org, user}) })
	r.dropped.Add(1)
	r.mu.RLock()
	o := r.orgs[org]
	r.mu.RUnlock()
	if o == nil {
		return
	}
	sh := o.shard(r.seed, user)
	sh.mu.Lock()
	delete(sh.users, user)
	sh.mu.Unlock()
}

// dropOrg forgets every user of an organization.
func (r *residentIndex) dropOrg(org string) {
	r.noteDrop(func(d *residentDrops) { d.orgs = append(d.orgs, org) })
	r.mu.Lock()
	n := 1
	if o := r.orgs[org]; o != nil {
		n = max(n, o.len())
	}
	delete(r.orgs, org)
	r.mu.Unlock()
	r.dropped.Add(int64(n))
}

// dropAll forgets everyone.
func (r *residentIndex) dropAll() {
	r.noteDrop(func(d *residentDrops) { d.all = true })
	r.mu.Lock()
	n := max(1, r.heldLocked())
	r.orgs = map[string]*residentOrg{}
	r.mu.Unlock()
	r.dropped.Add(int64(n))
}
