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

// residentIndex holds, from start, every user's and every group's grants in a compact form:
// for each user, whether they are active, the resources of their own grants (with the expiry
// of those that expire) and their groups; for each group, its name and the resources of its
// grants. A question about a user the cache does not hold is then answered
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
	source    storage.FactsScanner // what readIn reads
	maxGrants int                  // the most grants, and users, readIn keeps

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

// residentOrg is one organization's users and groups. Their grants are runs of one array of
// resource numbers, without pointers for the garbage collector to follow.
type residentOrg struct {
	ids      []string                 // resource ids by number
	numbers  map[string]uint32        // resource numbers by id
	grants   []uint32                 // each holder's run sorted
	expires  []int64                  // Unix milliseconds (0: never), in runs beside grants; only holders with an expiring grant have one
	groups   map[string]residentGroup // by id
	memberOf []string                 // the ids of each member's groups, in runs, in id order
	shards   [residentShards]residentShard
}

const residentShards = 16

type residentShard struct {
	mu    sync.RWMutex
	users map[string]residentUser
}

// residentRun is one holder's grants: grants[off:off+n] are their resource numbers, and, if
// expiring is at least 0, expires[expiring:expiring+n] their expiries.
type residentRun struct {
	off, n   uint32
	expiring int32
}

// residentUser is one user: their own grants, and memberOf[groupsOff:groupsOff+groups] their
// groups.
type residentUser struct {
	residentRun
	groupsOff, groups uint32
	active            bool
}

// residentGroup is one group: what the policy reads of it, and its id, which each member's
// copy shares.
type residentGroup struct {
	residentRun
	id, name string
}

func newResidentIndex(source storage.FactsScanner, maxGrants int) *residentIndex {
	return &residentIndex{source: source, maxGrants: maxGrants, orgs: map[string]*residentOrg{}, seed: maphash.MakeSeed()}
}

func newResidentOrg() *residentOrg {
	o := &residentOrg{numbers: map[string]uint32{}, groups: map[string]residentGroup{}}
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
	// Users, Groups and their Grants were read in; Dropped of those users were written to
	// while it read, and so are not kept.
	Users, Groups, Grants, Dropped int
	// Full is whether it stopped at its bound, leaving groups or users unread.
	Full bool
}

// readIn reads the groups and users of its source in, whole, as long as their grants and they
// (each counting as one) number at most maxGrants. What it read replaces what r held, less
// what was dropped while it read, since that may have been read before the change. One
// read-in at a time.
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

// scan reads the source's groups and then its users in, by organization, up to maxGrants. The
// two are read in two transactions, which is safe because every write to a group drops every
// user whose decisions it may change (the members it reaches, or the organization), and drops
// made meanwhile are noted (readIn). A user of a group not read in (past the bound, or made
// between the two) is not kept.
func (r *residentIndex) scan(ctx context.Context) (map[string]*residentOrg, ResidentRead, error) {
	orgs := map[string]*residentOrg{}
	var (
		read    ResidentRead
		scratch []residentGrant
	)
	org := func(id string) *residentOrg {
		o := orgs[id]
		if o == nil {
			o = newResidentOrg()
			orgs[id] = o
		}
		return o
	}
	full := func(grants int) bool {
		if read.Users+read.Groups+read.Grants+1+grants > r.maxGrants {
			read.Full = true
			return true
		}
		return false
	}
	err := r.source.ScanGroups(ctx, func(g storage.ScannedGroup) error {
		if full(len(g.Grants)) {
			return errResidentFull
		}
		o := org(g.OrgID)
		if run, ok := o.addRun(g.Grants, &scratch); ok {
			o.groups[g.GroupID] = residentGroup{residentRun: run, id: g.GroupID, name: g.DisplayName}
			read.Groups++
			read.Grants += len(g.Grants)
		}
		return nil
	})
	if err == nil {
		err = r.source.ScanUsers(ctx, func(u storage.ScannedUser) error {
			if full(len(u.Grants)) {
				return errResidentFull
			}
			if o := org(u.OrgID); o.add(r.seed, u, &scratch) {
				read.Users++
				read.Grants += len(u.Grants)
			}
			return nil
		})
	}
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

// usersOfOrgsUpTo returns the ids of the users held of organizations, by organization, taking
// each whose users number at most limit while those taken together number at most limit.
func (r *residentIndex) usersOfOrgsUpTo(limit int) map[string][]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string][]string{}
	taken := 0
	for id, o := range r.orgs {
		n := o.len()
		if n == 0 || taken+n > limit {
			continue
		}
		users := make([]string, 0, n)
		for i := range o.shards {
			sh := &o.shards[i]
			sh.mu.RLock()
			for u := range sh.users {
				users = append(users, u)
			}
			sh.mu.RUnlock()
		}
		out[id] = users
		taken += len(users)
	}
	return out
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

// add keeps u, unless an expiry of theirs is not a whole millisecond (addRun) or one of their
// groups is not held, and reports whether it did. scratch is space to reuse.
func (o *residentOrg) add(seed maphash.Seed, u storage.ScannedUser, scratch *[]residentGrant) bool {
	for _, g := range u.Groups {
		if _, ok := o.groups[g]; !ok {
			return false
		}
	}
	run, ok := o.addRun(u.Grants, scratch)
	if !ok {
		return false
	}
	ru := residentUser{residentRun: run, groupsOff: uint32(len(o.memberOf)), groups: uint32(len(u.Groups)), active: u.Active}
	for _, g := range u.Groups {
		o.memberOf = append(o.memberOf, o.groups[g].id)
	}
	o.shard(seed, u.ID).users[u.ID] = ru
	return true
}

// addRun appends a holder's grants to the organization's arrays and returns their run, unless
// an expiry is not a whole millisecond (kept as milliseconds, it could not be given back as it
// was). scratch is space to reuse.
func (o *residentOrg) addRun(grants []storage.ScannedGrant, scratch *[]residentGrant) (residentRun, bool) {
	run := (*scratch)[:0]
	expiring := false
	for _, g := range grants {
		var ms int64 // 0: never
		if !g.ExpiresAt.IsZero() {
			ms = g.ExpiresAt.UnixMilli()
			if ms == 0 || !time.UnixMilli(ms).Equal(g.ExpiresAt) {
				return residentRun{}, false
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
	rr := residentRun{off: uint32(len(o.grants)), n: uint32(len(run)), expiring: -1}
	for _, g := range run {
		o.grants = append(o.grants, g.number)
	}
	if expiring {
		rr.expiring = int32(len(o.expires))
		for _, g := range run {
			o.expires = append(o.expires, g.expires)
		}
	}
	return rr, true
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

// grant is the resource and expiry of a run's i-th grant, in the order of the run. The runs
// and the table of ids are never changed once read in: only users are dropped.
func (o *residentOrg) grant(run residentRun, i int) (resourceID string, expiresAt time.Time) {
	resourceID = o.ids[o.grants[int(run.off)+i]]
	if run.expiring >= 0 {
		if ms := o.expires[int(run.expiring)+i]; ms != 0 {
			expiresAt = time.UnixMilli(ms).UTC()
		}
	}
	return resourceID, expiresAt
}

// find returns the index in run of the grant of resource number n.
func (o *residentOrg) find(run residentRun, n uint32) (int, bool) {
	return slices.BinarySearch(o.grants[run.off:run.off+run.n], n)
}

// groupsOf returns u's groups' ids.
func (o *residentOrg) groupsOf(u residentUser) []string {
	return o.memberOf[u.groupsOff : u.groupsOff+u.groups]
}

// userGrant and groupGrant are a user's and a group's i-th grant.
func (o *residentOrg) userGrant(org, user string, u residentUser, i int) storage.Grant {
	id, expires := o.grant(u.residentRun, i)
	return storage.Grant{OrgID: org, UserID: user, ResourceID: id, ExpiresAt: expires}
}

func (o *residentOrg) groupGrant(org string, g residentGroup, i int) storage.GroupGrant {
	id, expires := o.grant(g.residentRun, i)
	return storage.GroupGrant{OrgID: org, GroupID: g.id, ResourceID: id, ExpiresAt: expires}
}

// group is what the policy reads of a group's record.
func (g residentGroup) group(org string) storage.Group {
	return storage.Group{OrgID: org, ID: g.id, DisplayName: g.name}
}

// facts is the store's UserFacts from memory, with what the policy reads: of the user's record,
// only Active; of a group's, its id and name; of a grant, its resource and expiry.
func (r *residentIndex) facts(org, user string) (storage.Facts, bool) {
	o, u, ok := r.user(org, user)
	if !ok {
		return storage.Facts{}, false
	}
	f := storage.Facts{Found: true, User: storage.User{OrgID: org, ID: user, Active: u.active}}
	f.Grants = make([]storage.Grant, u.n)
	for i := range f.Grants {
		f.Grants[i] = o.userGrant(org, user, u, i)
	}
	for _, id := range o.groupsOf(u) {
		g := o.groups[id]
		f.Groups = append(f.Groups, g.group(org))
		for i := range int(g.n) {
			f.GroupGrants = append(f.GroupGrants, o.groupGrant(org, g, i))
		}
	}
	return f, true
}

// asked is the store's AskedGrants from memory. Of a user who does not hold every resource
// asked about, it says only that (Held false), which is all askedUser reads of such an answer.
func (r *residentIndex) asked(org, user string, ids []string) (storage.Asked, bool) {
	o, u, ok := r.user(org, user)
	if !ok {
		return storage.Asked{}, false
	}
	var groups []residentGroup
	for _, id := range o.groupsOf(u) {
		groups = append(groups, o.groups[id])
	}
	a := storage.Asked{Held: true, Found: true, Active: u.active}
	for _, id := range ids {
		n, known := o.numbers[id]
		found := false
		if known {
			if i, ok := o.find(u.residentRun, n); ok {
				a.Grants, found = append(a.Grants, o.userGrant(org, user, u, i)), true
			}
			for _, g := range groups {
				if i, ok := o.find(g.residentRun, n); ok {
					a.GroupGrants, found = append(a.GroupGrants, o.groupGrant(org, g, i)), true
				}
			}
		}
		if !found {
			return storage.Asked{}, true
		}
	}
	for _, g := range groups {
		a.Groups = append(a.Groups, g.group(org))
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
