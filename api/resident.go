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

func newResidentIndex() *residentIndex {
	return &residentIndex{orgs: map[string]*residentOrg{}, seed: maphash.MakeSeed()}
}

func (o *residentOrg) shard(seed maphash.Seed, user string) *residentShard {
	return &o.shards[maphash.String(seed, user)%residentShards]
}

// errResidentFull stops a read-in that has read as many grants as it may keep.
var errResidentFull = errors.New("resident index full")

// residentRead is what a read-in kept.
type residentRead struct {
	Users, Grants int
	// Full is whether it stopped at its bound, leaving users unread.
	Full bool
}

// readIn reads the users of sc in, whole, as long as their grants and they (each counting as
// one) number at most maxGrants. What it read replaces what r held, unless something was dropped meanwhile,
// since it may have been read before that change: then nothing is kept, and it says so.
func (r *residentIndex) readIn(ctx context.Context, sc storage.HoldingsScanner, maxGrants int) (residentRead, error) {
	drops := r.drops.Load()
	orgs := map[string]*residentOrg{}
	var read residentRead
	var (
		o       *residentOrg
		scratch []residentGrant
	)
	err := sc.ScanHoldings(ctx, func(u storage.ScannedUser) error {
		if u.InGroups {
			return nil
		}
		// A user counts as a grant more, so that users without grants are bounded too.
		if read.Users+read.Grants+1+len(u.Grants) > maxGrants {
			read.Full = true
			return errResidentFull
		}
		if o == nil || orgs[u.OrgID] != o {
			if o = orgs[u.OrgID]; o == nil {
				o = &residentOrg{numbers: map[string]uint32{}}
				for i := range o.shards {
					o.shards[i].users = map[string]residentUser{}
				}
				orgs[u.OrgID] = o
			}
		}
		if o.add(r.seed, u, &scratch) {
			read.Users++
			read.Grants += len(u.Grants)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errResidentFull) {
		return residentRead{}, fmt.Errorf("read users' grants in: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drops.Load() != drops {
		return residentRead{}, errors.New("read users' grants in: the store changed meanwhile; nothing kept")
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

// holdings returns the organization's user as the index holds them: whether active, and their
// own grants (of ids, when ids is not nil), with held whether every one of ids is among them.
// ok is false when the index does not hold the user, who must then be read from the store.
func (r *residentIndex) holdings(org, user string, ids []string) (active, held bool, grants []storage.Grant, ok bool) {
	r.mu.RLock()
	o := r.orgs[org]
	r.mu.RUnlock()
	if o == nil {
		return false, false, nil, false
	}
	sh := o.shard(r.seed, user)
	sh.mu.RLock()
	u, ok := sh.users[user]
	sh.mu.RUnlock()
	if !ok {
		return false, false, nil, false
	}
	// The run and the table of ids are never changed once read in: only users are dropped.
	run := o.grants[u.off : u.off+u.n]
	grant := func(i int) storage.Grant {
		g := storage.Grant{OrgID: org, UserID: user, ResourceID: o.ids[run[i]]}
		if u.expiring >= 0 {
			if ms := o.expires[int(u.expiring)+i]; ms != 0 {
				g.ExpiresAt = time.UnixMilli(ms).UTC()
			}
		}
		return g
	}
	if ids == nil {
		grants = make([]storage.Grant, len(run))
		for i := range run {
			grants[i] = grant(i)
		}
		return u.active, true, grants, true
	}
	held = true
	for _, id := range ids {
		n, known := o.numbers[id]
		i, found := slices.BinarySearch(run, n)
		if !known || !found {
			held = false
			continue
		}
		grants = append(grants, grant(i))
	}
	return u.active, held, grants, true
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

// len reports how many users the index holds.
func (r *residentIndex) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, o := range r.orgs {
		for i := range o.shards {
			o.shards[i].mu.RLock()
			n += len(o.shards[i].users)
			o.shards[i].mu.RUnlock()
		}
	}
	return n
}
