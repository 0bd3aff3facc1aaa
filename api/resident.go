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
// It is read in once, at start (readIn), and never added to after: a write that touches a user
// drops the user (their questions read the store again, and the cache keeps them as before),
// one that touches an organization as a whole drops the organization, through the cache's
// invalidations (accessCache.invalidateUser, invalidateOrg, invalidateAll), so it is never
// staler than the cache. Creating a resource drops nothing: no user holds a grant of it yet.
type residentIndex struct {
	source    storage.HoldingsScanner // what readIn reads
	maxGrants int                     // the most grants, and users, readIn keeps

	mu   sync.RWMutex
	orgs map[string]*residentOrg
	seed maphash.Seed
	// drops moves with every drop, so that a read-in during which one happened is not kept.
	drops atomic.Uint64
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

// ResidentRead is what Server.ReadIn kept.
type ResidentRead struct {
	Users, Grants int
	// Full is whether it stopped at its bound, leaving users unread.
	Full bool
}

// readIn reads the users of its source in, whole, as long as their grants and they (each
// counting as one) number at most maxGrants. What it read replaces what r held, unless something
// was dropped meanwhile, since it may have been read before that change: then nothing is kept,
// and it says so.
func (r *residentIndex) readIn(ctx context.Context) (ResidentRead, error) {
	drops := r.drops.Load()
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
		return ResidentRead{}, fmt.Errorf("read users' grants in: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drops.Load() != drops {
		return ResidentRead{}, errors.New("read users' grants in: the store changed meanwhile; nothing kept")
	}
	r.orgs = orgs
	return read, nil
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
	r.drops.Add(1)
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
	r.drops.Add(1)
	r.mu.Lock()
	delete(r.orgs, org)
	r.mu.Unlock()
}

// dropAll forgets everyone.
func (r *residentIndex) dropAll() {
	r.drops.Add(1)
	r.mu.Lock()
	r.orgs = map[string]*residentOrg{}
	r.mu.Unlock()
}
