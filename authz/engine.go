package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// Policies gives the policy deciding now; *policy.Live is one.
type Policies interface {
	Engine() *policy.Engine
}

// Config is what an Engine is built from.
type Config struct {
	// Store is the store the facts are read from. Writes that change them must go through
	// Engine.Store, which keeps what the engine holds right.
	Store storage.Store
	// Policies gives the running policy.
	Policies Policies
	Logger   *slog.Logger
	// MaxUsers is how many users (and as many groups) the engine holds in memory: 0 means
	// DefaultMaxUsers; less holds none, and every question reads the store.
	MaxUsers int
	// MemoBytes bounds each rule's memo: 0 means DefaultMemoBytes; less remembers nothing.
	MemoBytes int
	// Shared says that other processes may change the store (MongoDB): held facts are then
	// used only within maxStaleness of the change feed's last confirmation (Synced).
	Shared bool
}

// The bounds of what the engine holds unless told otherwise.
const (
	DefaultMaxUsers  = 1_000_000
	DefaultMemoBytes = 64 << 20
)

// reader is what the engine reads of the store: a question's facts, an organization's
// catalog, a group, and everything at once for the read-in.
type reader interface {
	UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error)
	GetResources(ctx context.Context, orgID string, ids []string) ([]storage.Resource, error)
	ListResources(ctx context.Context, orgID string, kind storage.Kind) ([]storage.Resource, error)
	GetAuthIntegration(ctx context.Context, orgID, id string) (storage.AuthIntegration, error)
	ListAuthIntegrations(ctx context.Context, orgID string) ([]storage.AuthIntegration, error)
	GetOrgGroup(ctx context.Context, orgID, id string) (storage.Group, error)
	GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]storage.GroupGrant, error)
	storage.FactsScanner
}

// Engine decides access questions. It is safe for concurrent use.
type Engine struct {
	store    reader
	policies Policies
	log      *slog.Logger
	cache    *cache
	memo     int
	shared   bool
	lastSync atomic.Int64 // when the change feed last confirmed what is held, Unix ns
	pin      atomic.Pointer[pinned]
	counters counters
	wrapped  storage.Store
	reading  atomic.Bool // a read-in is under way or yet to end (readin.go)
}

// New returns an engine over cfg's store and policies.
func New(cfg Config) *Engine {
	e := &Engine{store: cfg.Store, policies: cfg.Policies, log: cfg.Logger, memo: cfg.MemoBytes, shared: cfg.Shared}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.memo == 0 {
		e.memo = DefaultMemoBytes
	}
	users := cfg.MaxUsers
	if users == 0 {
		users = DefaultMaxUsers
	}
	e.cache = newCache(users)
	e.wrapped = changing{Store: cfg.Store, cache: e.cache}
	if users > 0 {
		e.reading.Store(true) // until ReadIn ends
	}
	return e
}

// Store is the store as the engine's users must write to it: every write that may change a
// decision drops what the engine holds of what it reaches before it returns.
func (e *Engine) Store() storage.Store { return e.wrapped }

// pinned returns the policy running now, with its rules' layers, made once per policy.
func (e *Engine) pinned() *pinned {
	pe := e.policies.Engine()
	if p := e.pin.Load(); p != nil && p.engine == pe {
		return p
	}
	p := newPinned(pe, e.memo, &e.counters, e.log)
	for {
		old := e.pin.Load()
		if old != nil && old.engine == pe {
			return old
		}
		if e.pin.CompareAndSwap(old, p) {
			return p
		}
	}
}

// Decision is the answer to a question.
type Decision struct {
	Allowed bool
	// Revision is the revision of the policy that decided.
	Revision string
}

// Decide answers q. A policy that cannot be evaluated denies (and is logged); an error means
// the store could not be read, and comes with a deny.
func (e *Engine) Decide(ctx context.Context, q Question) (Decision, error) {
	p := e.pinned()
	d := Decision{Revision: p.engine.Revision()}
	v, err := e.view(ctx, &q)
	if err != nil {
		return d, err
	}
	d.Allowed = e.decide(ctx, p, v)
	v.release()
	return d, nil
}

// decide answers the question of v with p.
func (e *Engine) decide(ctx context.Context, p *pinned, v *view) bool {
	allowed, err := p.rule(v.q.All).decide(ctx, v)
	switch {
	case err != nil:
		e.counters.decisions[outcomeFailed].Add(1)
		return false
	case allowed:
		e.counters.decisions[outcomeAllowed].Add(1)
	default:
		e.counters.decisions[outcomeDenied].Add(1)
	}
	return allowed
}

// DecideEach answers questions about the organization's users, all with one policy, and
// returns their answers in order and the policy's revision. It gathers each user's facts once,
// with every resource asked about them, and answers all of that user's questions over them.
func (e *Engine) DecideEach(ctx context.Context, qs []Question) ([]bool, string, error) {
	p := e.pinned()
	type who struct{ org, user string }
	asked := map[who][]string{}
	for _, q := range qs {
		k := who{q.OrgID, q.UserID}
		asked[k] = append(asked[k], q.ResourceIDs...)
	}
	type facts struct {
		cat    *catalog
		u      *user
		groups []*group
	}
	read := make(map[who]facts, len(asked))
	out := make([]bool, len(qs))
	for i := range qs {
		k := who{qs[i].OrgID, qs[i].UserID}
		f, ok := read[k]
		if !ok {
			all := qs[i]
			all.ResourceIDs = asked[k]
			v, err := e.view(ctx, &all)
			if err != nil {
				return nil, p.engine.Revision(), err
			}
			f = facts{v.cat, v.u, v.groups}
			v.release()
			read[k] = f
		}
		v := newView(&qs[i], f.cat, f.u, f.groups)
		out[i] = e.decide(ctx, p, v)
		v.release()
	}
	return out, p.engine.Revision(), nil
}

// Explain decides q with allow and gives the policy's reasons, over the whole input.
func (e *Engine) Explain(ctx context.Context, q Question) (policy.Explanation, error) {
	p := e.pinned()
	v, err := e.view(ctx, &q)
	if err != nil {
		return policy.Explanation{}, err // the store's, for the caller to answer as the check would
	}
	in := v.input()
	v.release()
	return p.engine.Explain(ctx, in)
}

// Revision is the revision of the policy deciding now.
func (e *Engine) Revision() string { return e.pinned().engine.Revision() }

// Modules are the modules of the policy deciding now.
func (e *Engine) Modules() []policy.Module { return e.pinned().engine.Modules() }

// Memoised reports, of the policy deciding now, whether its allow and its allow_all answers
// are remembered, and if one is not, why.
func (e *Engine) Memoised() (allow, allowAll bool, why string) {
	p := e.pinned()
	ra, rb := p.engine.Reads(false), p.engine.Reads(true)
	why = ra.Why()
	if why == "" {
		why = rb.Why()
	}
	return p.memos[0] != nil, p.memos[1] != nil, why
}

// Holdings are what a user holds: their own grants and their groups' (of resources that
// exist), and whether they are active.
type Holdings struct {
	Active bool
	Grants []Held
	Groups []HeldGroup
}

// Held is one grant held.
type Held struct {
	ResourceID, Name string
	ExpiresAt        time.Time // zero: never
}

// HeldGroup is one group of a user, with its grants.
type HeldGroup struct {
	ID, Name string
	Grants   []Held
}

// ErrNoUser is returned by UserHoldings for a user the organization does not have.
var ErrNoUser = errors.New("no such user")

// UserHoldings returns what the organization's user holds, as the policy sees it.
func (e *Engine) UserHoldings(ctx context.Context, orgID, userID string) (Holdings, error) {
	v, err := e.view(ctx, &Question{OrgID: orgID, UserID: userID})
	if err != nil {
		return Holdings{}, err
	}
	defer v.release()
	if v.u == nil {
		return Holdings{}, ErrNoUser
	}
	held := func(gs grants) []Held {
		out := make([]Held, 0, gs.len())
		for i := range gs.len() {
			if g := gs.at(i); g.live() {
				h := Held{ResourceID: g.res.id, Name: g.res.name}
				if g.expires != 0 {
					h.ExpiresAt = time.Unix(0, g.expires).UTC()
				}
				out = append(out, h)
			}
		}
		return out
	}
	h := Holdings{Active: v.u.active, Grants: held(v.u.grants)}
	for i, id := range v.u.groups {
		if g := v.groups[i]; g != nil {
			h.Groups = append(h.Groups, HeldGroup{ID: id, Name: g.name, Grants: held(g.grants)})
		}
	}
	return h, nil
}

// Counts are the engine's counts since it started, for /metrics.
type Counts struct {
	Allowed, Denied, Failed uint64 // decisions by outcome; a failed evaluation denies
	Evaluations             uint64
	MemoHits, MemoMisses    uint64
	MemoAnswers             int // remembered by the memo of the policy running
	UsersHeld               int
	UserHits, UserMisses    uint64 // questions that found their user held, or read the store
}

// Counts returns the engine's counts.
func (e *Engine) Counts() Counts {
	c := Counts{
		Allowed: e.counters.decisions[outcomeAllowed].Load(), Denied: e.counters.decisions[outcomeDenied].Load(),
		Failed: e.counters.decisions[outcomeFailed].Load(), Evaluations: e.counters.evaluations.Load(),
		MemoHits: e.counters.memoHits.Load(), MemoMisses: e.counters.memoMisses.Load(),
		UsersHeld: e.cache.len(), UserHits: e.cache.hits.Load(), UserMisses: e.cache.misses.Load(),
	}
	p := e.pin.Load()
	if p == nil {
		return c
	}
	for _, m := range p.memos {
		if m != nil {
			c.MemoAnswers += m.len()
		}
	}
	return c
}

// ResourceNames returns the names of the organization's resources ids, in their order: "" for
// an id the organization has no resource of.
func (e *Engine) ResourceNames(ctx context.Context, orgID string, ids []string) ([]string, error) {
	cat, err := e.catalogFor(ctx, orgID, func() ([]storage.Resource, error) { return e.store.GetResources(ctx, orgID, ids) })
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		if r, ok := cat.resources[id]; ok {
			names[i] = r.name
		}
	}
	return names, nil
}

// ResourcesNamed returns the ids of the organization's resources of kind named name, sorted.
func (e *Engine) ResourcesNamed(ctx context.Context, orgID string, kind storage.Kind, name string) ([]string, error) {
	cat, err := e.catalogFor(ctx, orgID, func() ([]storage.Resource, error) { return e.store.ListResources(ctx, orgID, kind) })
	if err != nil {
		return nil, err
	}
	return cat.named(string(kind), name), nil
}

// catalogFor returns the organization's catalog when what the engine holds is fresh, and
// otherwise a catalog of no more than read reads from the store.
func (e *Engine) catalogFor(ctx context.Context, orgID string, read func() ([]storage.Resource, error)) (*catalog, error) {
	if e.fresh() {
		return e.catalog(ctx, e.cache.org(orgID), orgID)
	}
	rs, err := read()
	if err != nil {
		return nil, fmt.Errorf("resources of %s: %w", orgID, err)
	}
	return newCatalog(rs, nil), nil
}
