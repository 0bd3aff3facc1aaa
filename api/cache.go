package api

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantry/grantry/policy"
)

// accessCache keeps, for recently checked users, what the policy reads about them (built once
// from the store, in the form the policy reads fastest) and the decisions made from it, so
// that a warm check reads nothing from the store and evaluates no policy.
//
// It is never stale for writes made through this process: every store write that changes what
// a decision reads invalidates the users it touches (or the whole organization) before it is
// acknowledged. Writes of other processes arrive through the store's change feed, which
// invalidates the whole organization. A load that races an invalidation is not kept.
//
// It holds at most max users, dropping the least recently used; a user's memo holds at most
// maxMemo decisions. A user is kept from their keptFromLoad-th load on (admit): one checked
// once or twice, as most users of a large organization are in a while, is loaded for each
// check and dropped.
type accessCache[V any] struct {
	max    int
	shards [cacheShards]cacheShard[V]
	seed   maphash.Seed
	seen   []atomic.Uint32 // the users loaded and not kept, for admit

	mu   sync.RWMutex // of orgs; every check reads it, a new organization writes it
	orgs map[string]*orgState
	all  atomic.Uint64 // moves to drop everything at once

	hits, misses atomic.Uint64

	// resident holds every user's own grants from start, when the store can read them so
	// (nil: it cannot); the invalidations below drop from it what they drop from the cache.
	resident *residentIndex
}

// orgState is what the cache knows of one organization as a whole.
type orgState struct {
	gen atomic.Uint64 // moves on every change that may touch any of its users or resources

	mu        sync.RWMutex              // of resGen and resources; every check reads them
	resGen    uint64                    // the generation resources were read at
	resources map[string]cachedResource // by id, absent ones included
}

// cachedResource is a resource as the policy reads it, or the fact that there is none.
type cachedResource struct {
	r      policy.Resource
	exists bool
}

// maxResources bounds the resources remembered per organization.
const maxResources = 100_000

// cacheShards spreads the users over locks, so that concurrent checks rarely wait for each
// other.
const cacheShards = 16

// maxMemo bounds the decisions remembered per user: a user checked against every resource of a
// large organization must not grow without bound.
const maxMemo = 512

type cacheShard[V any] struct {
	mu    sync.Mutex
	users map[cacheKey]*cacheEntry[V]
	lru   list.List // of *cacheEntry; front: most recently used (see lookup)
	// uses counts the lookups that found a user, and the users kept, so that lookup can tell
	// how far from the front an entry may be.
	uses uint64
	// inval counts invalidations of users of this shard, so that a load that started before
	// one is not kept.
	inval uint64
}

type cacheKey struct{ org, user string }

// cacheEntry is one user's cached facts and decisions.
type cacheEntry[V any] struct {
	key   cacheKey
	gen   uint64        // the generation (whole cache and organization) when the facts were read
	moved uint64        // the shard's uses when the entry was last put at the front of its LRU
	el    *list.Element // the entry's place in its shard's LRU
	// Facts is what the loader built; it is shared and must not be changed.
	Facts V

	// once marks an entry made for one request and kept nowhere (not admitted, or changed
	// while it loaded): it remembers no decision, since no later request will find it. A
	// check of a user not in memory (BenchmarkCheckNewUser/resident/own) allocated 5.5 KB in
	// 32 allocations when it did, 4.6–4.8 KB in 28–31 since.
	once bool

	mu   sync.Mutex
	memo map[uint64]memoDecision // by the question's hash; see question

	// evaluations counts the new questions about the user that the policy was asked, and
	// permitted is every resource the user may use, once that is worth knowing (permitted.go).
	evaluations atomic.Int64
	permitted   atomic.Pointer[permittedSet]
}

// question is what a decision answers about a user: allow for one resource id, or allow_all
// for ids in order, as the policy sees them.
type question struct {
	all  bool
	ids  []string
	hash uint64 // of all and ids, to find a remembered answer without building a key
}

// newQuestion hashes a question with seed: each id on its own, mixed in order. Hashing the
// ids as one stream (maphash.Hash, with a separator after each) cost about 2.2 µs for a
// can_user_access_all of 100 tags, more than the rest of its decision. Any hash would do for
// correctness: a remembered decision's ids are compared, so two questions of one hash cost a
// miss, never a wrong answer.
func newQuestion(seed maphash.Seed, all bool, ids []string) question {
	h := uint64(len(ids))
	if all {
		h |= 1 << 63
	}
	for _, id := range ids {
		h = (h ^ maphash.String(seed, id)) * 0x100000001b3 // FNV-1a's prime
	}
	return question{all: all, ids: ids, hash: h}
}

// memoDecision is a decision remembered for one question about the user. The question's ids
// are kept and compared, so that two questions of the same hash cost a miss, never a wrong
// answer.
type memoDecision struct {
	all     bool
	ids     []string
	allowed bool
	validity
}

// validity is how long a decision about a user, or a set of them (permittedSet), holds: for
// the policy revision that made it, and until a grant of the user expires and the answer may
// change (zero: until the user's facts are dropped).
type validity struct {
	revision string
	until    time.Time
}

// holds reports whether it holds for policy revision at now.
func (v validity) holds(revision string, now time.Time) bool {
	return v.revision == revision && (v.until.IsZero() || now.Before(v.until))
}

func newAccessCache[V any](max int) *accessCache[V] {
	c := &accessCache[V]{max: max, seed: maphash.MakeSeed(), orgs: map[string]*orgState{}}
	for i := range c.shards {
		c.shards[i].users = map[cacheKey]*cacheEntry[V]{}
	}
	if max > 0 {
		slots := 4 // a bucket
		for slots < min(2*max, maxSeen) {
			slots *= 2
		}
		c.seen = make([]atomic.Uint32, slots)
	}
	return c
}

// maxSeen bounds the slots of admit's table, two to four for each user the cache holds (a power
// of two at least twice max): 64 MiB.
const maxSeen = 1 << 24

// hash is the hash of a user's key, which places the user in a shard and in admit's table.
func (c *accessCache[V]) hash(k cacheKey) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.org)
	h.WriteByte(0)
	h.WriteString(k.user)
	return h.Sum64()
}

func (c *accessCache[V]) shard(h uint64) *cacheShard[V] { return &c.shards[h%cacheShards] }

// keptFromLoad is the load of a user from which the user is kept (admit). Until then a user is
// read for one check and dropped: under the shipped policy with only the grants that check
// asks about (userFactsAsked), a check of whom costs about two thirds of one reading the whole
// user (BenchmarkCheckNewUser), and a whole user kept pays only if asked about again and again. Users of a million-user organization asked about
// at random are rarely asked about a third time: on one seeded store, make bench-large's load
// (three 8 s runs, pinned) served 13,115, 10,508 and 8,490 checks/s keeping users from their
// second load, falling as more users were asked about a second time, against 14,555, 13,861
// and 13,010 from their third, with 286 MB of heap at the end instead of 624.
const keptFromLoad = 3

// admit reports whether a user about to be loaded, of key hash h, is to be kept: whether the
// user was loaded keptFromLoad-1 times before and not kept. It counts the loads of a user it
// refuses by a fingerprint of h in one of the four slots of a bucket of its table (a plain
// array of numbers, which the garbage collector does not scan), the low two bits counting, so
// that the user is kept as planned unless four others of the bucket have taken the slots since,
// which costs that user more loads, never a wrong answer. Concurrent loads of one user may
// count as one.
//
// Keeping every user loaded made a million-user organization, whose checks mostly ask about a
// user not asked about for a long while, fill the cache with users who were not asked about
// again while it filled: the make bench-large load served 3,682–5,625 checks/s with 1.1–1.5
// GB of heap, against 6,361–7,214 with 92 MB when the cache held 2,000 users.
func (c *accessCache[V]) admit(h uint64) bool {
	bucket := c.seen[(h>>32)&uint64(len(c.seen)-1)&^3:][:4]
	fingerprint := uint32(h) &^ 3
	for i := range bucket {
		if v := bucket[i].Load(); v != 0 && v&^3 == fingerprint {
			if int(v&3)+1 >= keptFromLoad {
				return true
			}
			bucket[i].Store(v + 1)
			return false
		}
	}
	for i := range bucket {
		if bucket[i].CompareAndSwap(0, fingerprint|1) { // never 0, an empty slot
			return false
		}
	}
	bucket[fingerprint>>30].Store(fingerprint | 1) // a full bucket: one slot by the fingerprint's top bits
	return false
}

func (c *accessCache[V]) org(org string) *orgState {
	c.mu.RLock()
	o, ok := c.orgs[org]
	c.mu.RUnlock()
	if ok {
		return o
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok = c.orgs[org]; !ok {
		o = &orgState{}
		c.orgs[org] = o
	}
	return o
}

// gen is the generation of an organization's cached facts: it moves when the organization's,
// or the whole cache's, does (both only grow, so their sum changes whenever either does).
func (c *accessCache[V]) gen(o *orgState) uint64 { return o.gen.Load() + c.all.Load() }

// resources returns what the policy reads of the organization's resources ids (those that do
// not exist are left out), loading with load only the ids it does not know yet.
func (c *accessCache[V]) resources(org string, ids []string, load resourceLoader) (map[string]policy.Resource, error) {
	if c == nil || c.max <= 0 {
		return load(ids)
	}
	out := make(map[string]policy.Resource, len(ids))
	if err := c.eachResource(org, ids, load, func(i int, r policy.Resource) { out[ids[i]] = r }); err != nil {
		return nil, err
	}
	return out, nil
}

// resourceLoader reads what the policy reads of the resources ids from the store; those that
// do not exist are left out.
type resourceLoader func(ids []string) (map[string]policy.Resource, error)

// eachResource calls put with the index in ids, and what the policy reads, of each of the
// organization's resources ids that exists, loading with load only the ids it does not know
// yet; put runs under the cache's lock, so it must only record what it is given. It is
// resources without the map: a caller that wants the resources in the order of ids, such as
// a user's resource_list, builds what it needs directly.
func (c *accessCache[V]) eachResource(org string, ids []string, load resourceLoader, put func(i int, r policy.Resource)) error {
	if c == nil || c.max <= 0 {
		found, err := load(ids)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if r, ok := found[id]; ok {
				put(i, r)
			}
		}
		return nil
	}
	o := c.org(org)
	var missing []int // indexes in ids
	lookup := func() {
		for i, id := range ids {
			cr, ok := o.resources[id]
			switch {
			case !ok:
				missing = append(missing, i)
			case cr.exists:
				put(i, cr.r)
			}
		}
	}
	// Checks only read, so they share the lock; the first one after a change starts afresh.
	o.mu.RLock()
	g := c.gen(o)
	fresh := o.resGen == g && o.resources != nil
	if fresh {
		lookup()
	}
	o.mu.RUnlock()
	if !fresh {
		o.mu.Lock()
		missing, g = missing[:0], c.gen(o)
		if o.resGen != g || o.resources == nil {
			o.resources, o.resGen = map[string]cachedResource{}, g
		}
		lookup()
		o.mu.Unlock()
	}
	if len(missing) == 0 {
		return nil
	}
	missingIDs := make([]string, len(missing))
	for j, i := range missing {
		missingIDs[j] = ids[i]
	}
	found, err := load(missingIDs)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := o.resGen == g && c.gen(o) == g
	if keep && len(o.resources)+len(missing) > maxResources {
		o.resources = map[string]cachedResource{}
	}
	for _, i := range missing {
		r, exists := found[ids[i]]
		if exists {
			put(i, r)
		}
		if keep {
			o.resources[ids[i]] = cachedResource{r: r, exists: exists}
		}
	}
	return nil
}

// user returns the cached entry of the organization's user, or loads its facts with load. A
// user is kept from their keptFromLoad-th load on (admit); the loads before, kept nowhere, are
// made with first instead when it is not nil: a loader of only what the request asks about.
// A nil cache, or max 0, keeps nothing and loads so every time.
func (c *accessCache[V]) user(org, user string, load, first func() (V, error)) (*cacheEntry[V], error) {
	if first == nil {
		first = load
	}
	if c == nil || c.max <= 0 {
		facts, err := first()
		return &cacheEntry[V]{Facts: facts, once: true}, err
	}
	k := cacheKey{org, user}
	h := c.hash(k)
	sh, o := c.shard(h), c.org(org)
	e, inval, g := c.lookup(k, sh, o)
	if e != nil {
		c.hits.Add(1)
		return e, nil
	}
	c.misses.Add(1)

	if !c.admit(h) {
		facts, err := first()
		if err != nil {
			return nil, err
		}
		return &cacheEntry[V]{key: k, gen: g, Facts: facts, once: true}, nil // not kept yet: for this request only
	}
	return c.loadAndKeep(k, sh, o, inval, g, load)
}

// keep returns the cached entry of the organization's user, or loads its facts with load and
// keeps them, whatever admit would say. It counts neither a hit nor a miss: no check asked.
// Its one caller, WarmCache, has a cache of a positive max or calls nothing.
func (c *accessCache[V]) keep(org, user string, load func() (V, error)) (*cacheEntry[V], error) {
	k := cacheKey{org, user}
	sh, o := c.shard(c.hash(k)), c.org(org)
	e, inval, g := c.lookup(k, sh, o)
	if e != nil {
		return e, nil
	}
	return c.loadAndKeep(k, sh, o, inval, g, load)
}

// lookup returns k's entry in its shard sh if it is of its organization o's generation, and
// counts it used, and else drops what sh holds of k and returns the shard's invalidations and
// the generation, for loadAndKeep.
//
// An entry is moved to the front of the LRU only when it may have left its front half: when
// the shard has had more uses than half of what it holds since the entry was last put at the
// front, each use moving at most one other entry before it. Moving it on every use wrote to it
// and its neighbours, and to the front's, a user of the 10,000 of make bench, all cold: the
// lookup took 1.4% and 2.6% of a loaded pinned server's samples in two pprofs, and 1.8% once
// moved so. The LRU evicts from the back, which holds only users not used for that many uses
// of the shard, as before.
func (c *accessCache[V]) lookup(k cacheKey, sh *cacheShard[V], o *orgState) (e *cacheEntry[V], inval, g uint64) {
	sh.mu.Lock()
	if e, ok := sh.users[k]; ok {
		if e.gen == c.gen(o) {
			sh.uses++
			if sh.uses-e.moved > uint64(c.perShard()/2) {
				sh.lru.MoveToFront(e.el)
				e.moved = sh.uses
			}
			sh.mu.Unlock()
			return e, 0, 0
		}
		sh.lru.Remove(e.el)
		delete(sh.users, k)
	}
	inval, g = sh.inval, c.gen(o)
	sh.mu.Unlock()
	return nil, inval, g
}

// loadAndKeep loads the facts of k with load and keeps them in its shard sh, unless the
// shard's invalidations (inval) or the organization's generation (g), taken before loading,
// have moved since: the facts may then be older than the change, and serve only the caller.
func (c *accessCache[V]) loadAndKeep(k cacheKey, sh *cacheShard[V], o *orgState, inval, g uint64, load func() (V, error)) (*cacheEntry[V], error) {
	facts, err := load()
	if err != nil {
		return nil, err
	}
	e := &cacheEntry[V]{key: k, gen: g, Facts: facts}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.inval != inval || c.gen(o) != g {
		e.once = true
		return e, nil // changed while loading: use it for this request, keep nothing
	}
	if old, ok := sh.users[k]; ok {
		sh.lru.Remove(old.el)
	}
	sh.uses++
	e.moved = sh.uses
	e.el = sh.lru.PushFront(e)
	sh.users[k] = e
	for sh.lru.Len() > c.perShard() {
		last := sh.lru.Back()
		sh.lru.Remove(last)
		delete(sh.users, last.Value.(*cacheEntry[V]).key)
	}
	return e, nil
}

// perShard is how many users a shard holds at most.
func (c *accessCache[V]) perShard() int { return c.max/cacheShards + 1 }

// invalidateUser drops what is cached of one user.
func (c *accessCache[V]) invalidateUser(org, user string) {
	if c == nil {
		return
	}
	k := cacheKey{org, user}
	sh := c.shard(c.hash(k))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.inval++
	if e, ok := sh.users[k]; ok {
		sh.lru.Remove(e.el)
		delete(sh.users, k)
	}
	if c.resident != nil {
		c.resident.dropUser(org, user)
	}
}

// invalidateUsers drops what is cached of each of users.
func (c *accessCache[V]) invalidateUsers(org string, users []string) {
	for _, u := range users {
		c.invalidateUser(org, u)
	}
}

// invalidateOrg drops what is cached of every user of the organization: their entries are
// recognised as stale by their generation on their next use.
func (c *accessCache[V]) invalidateOrg(org string) {
	if c == nil {
		return
	}
	c.invalidateResources(org)
	if c.resident != nil {
		c.resident.dropOrg(org)
	}
}

// invalidateResources drops what is cached of every user of the organization after a change
// of its resources that changes no user's grants (a new resource): the users' decisions, which
// read the resources, but not the resident index, which holds only grants.
func (c *accessCache[V]) invalidateResources(org string) {
	if c == nil {
		return
	}
	c.org(org).gen.Add(1)
}

// invalidateAll drops everything cached, as when changes may have been missed.
func (c *accessCache[V]) invalidateAll() {
	if c == nil {
		return
	}
	c.all.Add(1)
	if c.resident != nil {
		c.resident.dropAll()
	}
}

// decision returns the remembered answer to q, if policy revision decided it and it still
// holds at now.
func (e *cacheEntry[V]) decision(q question, revision string, now time.Time) (bool, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.memo[q.hash]
	if !ok || d.all != q.all || !slices.Equal(d.ids, q.ids) || !d.holds(revision, now) {
		return false, false
	}
	return d.allowed, true
}

// remember keeps the answer to q, decided by policy revision, until (zero: until the entry is
// dropped). A full memo is emptied rather than searched for the oldest answer.
func (e *cacheEntry[V]) remember(q question, revision string, until time.Time, allowed bool) {
	if e.once {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.memo == nil || len(e.memo) >= maxMemo {
		e.memo = make(map[uint64]memoDecision, 8)
	}
	e.memo[q.hash] = memoDecision{all: q.all, ids: slices.Clone(q.ids), allowed: allowed, validity: validity{revision, until}}
}

// len reports how many users are cached.
func (c *accessCache[V]) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += c.shards[i].lru.Len()
		c.shards[i].mu.Unlock()
	}
	return n
}
