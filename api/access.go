package api

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// resourceRef is the spec's resource reference, an item of resource_list.
type resourceRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// resourceList returns the user's own grants as the spec's resource_list, in grant order. A
// grant whose resource no longer exists, or that has expired, is left out; grants through
// groups are not in it.
func (s *Server) resourceList(ctx context.Context, orgID, userID string) ([]resourceRef, error) {
	grants, err := s.store.UserGrants(ctx, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", userID, err)
	}
	now := s.now()
	ids := make([]string, 0, len(grants))
	for _, g := range grants {
		if !storage.Expired(g.ExpiresAt, now) {
			ids = append(ids, g.ResourceID)
		}
	}
	// Each ref is filled in where its id is; those left empty (no such resource: ids are never
	// empty) are dropped. Filled through resourceFacts' map, the list of a user of 50 grants
	// (the rest of a revoke's answer) took 32.0–32.6 µs and 26.0 KB, and 26.3–28.8 µs and 19.7
	// KB without it (BenchmarkResourceList, alternating runs, before userGrants' room for 64).
	refs := make([]resourceRef, len(ids))
	err = s.cached().eachResource(orgID, ids, s.loadResources(ctx, orgID), func(i int, r policy.Resource) {
		refs[i] = resourceRef{ID: ids[i], Name: r.Name}
	})
	if err != nil {
		return nil, fmt.Errorf("resources granted to %s: %w", userID, err)
	}
	return slices.DeleteFunc(refs, func(r resourceRef) bool { return r.ID == "" }), nil
}

// facts is what the policy reads of one user of an organization, cached with the decisions
// made from it. Its Facts is nil when the organization has no such user.
type facts = cacheEntry[*policy.User]

// userFacts returns what the policy reads of the organization's user, from the cache or, on a
// miss, from the store (loadUser).
func (s *Server) userFacts(ctx context.Context, orgID, userID string) (*facts, error) {
	return s.cached().user(orgID, userID, s.loadUser(ctx, orgID, userID), nil)
}

// userFactsAsked is userFacts for one question, about the resources of q (with all, every one
// of them), that policy d of revision will decide. A user not in memory and not kept by this
// load (admit), when d decides per user (the shipped policy, which reads of a question only the
// grants of the resources asked about), is read with only those grants (askedUser), and kept
// nowhere; when the question's answer is then known by its shape, it is returned as shaped,
// and the facts are of no use.
func (s *Server) userFactsAsked(ctx context.Context, orgID, userID string, d Decider, revision string, all bool, q *questionResources) (*facts, shapedAnswer, error) {
	var first func() (*policy.User, error)
	var shaped shapedAnswer
	if _, ok := decidesPerUser(d); ok {
		first = func() (u *policy.User, err error) {
			u, shaped, err = s.askedUser(ctx, orgID, userID, revision, all, q)
			return u, err
		}
	}
	f, err := s.cached().user(orgID, userID, s.loadUser(ctx, orgID, userID), first)
	return f, shaped, err
}

// questionResources is what the policy reads of the resources one question asks about,
// read (resourceFacts) at most once a request: the user read for the question (askedUser) and
// its decision (answer) both need them, and see the same resources so; a question about
// resources the user holds none of needs neither. Read twice, each made a map for the ids:
// read once, a check of a user not in memory (BenchmarkCheckNewUser/resident/own) allocates
// 3.9–4.0 KB in 27–30 allocations instead of 4.6–4.8 KB in 28–31.
type questionResources struct {
	s     *Server
	ctx   context.Context
	orgID string
	ids   []string

	read bool
	rs   map[string]policy.Resource
	err  error
}

func (s *Server) questionResources(ctx context.Context, orgID string, ids []string) *questionResources {
	return &questionResources{s: s, ctx: ctx, orgID: orgID, ids: ids}
}

func (q *questionResources) get() (map[string]policy.Resource, error) {
	if !q.read {
		q.rs, q.err = q.s.resourceFacts(q.ctx, q.orgID, q.ids)
		q.read = true
	}
	return q.rs, q.err
}

// only returns what the policy reads of the one resource asked about, and whether the
// organization has it, without get's map when get has not been called.
func (q *questionResources) only() (r policy.Resource, found bool, err error) {
	if q.read {
		r, found = q.rs[q.ids[0]]
		return r, found, q.err
	}
	err = q.s.cached().eachResource(q.orgID, q.ids[:1], q.s.loadResources(q.ctx, q.orgID), func(_ int, res policy.Resource) {
		r, found = res, true
	})
	return r, found && err == nil, err // loadResources says what failed
}

// loadUser returns the loader of the organization's user with all their grants and groups,
// read at one moment (UserFacts).
func (s *Server) loadUser(ctx context.Context, orgID, userID string) func() (*policy.User, error) {
	return func() (*policy.User, error) {
		f, ok := s.resident().facts(orgID, userID)
		if !ok {
			var err error
			if f, err = s.store.UserFacts(ctx, orgID, userID); err != nil {
				return nil, fmt.Errorf("user %s: %w", userID, err)
			}
		}
		if !f.Found {
			return nil, nil
		}
		return s.newPolicyUser(ctx, orgID, userID, f.User.Active, f.Holdings, nil, nil)
	}
}

// askedUser reads what the shipped policy reads of the organization's user for a question
// about ids: the user with, of their own grants and their groups', only those of ids
// (policy.User.Asked), in one read of the store (AskedGrants). A user holding no grant on one
// of ids is not read: the question is denied without asking the policy (deniedUnheld), as a
// user holding none would be. A million-user organization's users are nearly all read so,
// not being kept (admit): BenchmarkCheckNewUser (a user of 20 grants) went from 65–88 µs and
// 236 allocations a check to 42–52 µs and 181 when the whole user was no longer read for it.
//
// When the question, of policy revision, has a shape whose answer is known (shapeAnswer), that
// answer is returned as shaped, with the user bare (no grants, no groups), since nothing more is
// read to decide it.
func (s *Server) askedUser(ctx context.Context, orgID, userID, revision string, all bool, q *questionResources) (*policy.User, shapedAnswer, error) {
	ids := q.ids
	a, ok := s.resident().asked(orgID, userID, ids)
	if !ok {
		var err error
		if a, err = s.store.AskedGrants(ctx, orgID, userID, ids); err != nil {
			return nil, shapedAnswer{}, fmt.Errorf("user %s: %w", userID, err)
		}
	}
	if a.Held && !a.Found {
		return nil, shapedAnswer{}, nil
	}
	if !a.Held {
		return &policy.User{ID: userID, Asked: ids}, shapedAnswer{}, nil // holds none of ids: nothing more is needed
	}
	shaped, err := s.shapeAnswer(revision, all, q, a)
	if err != nil {
		return nil, shapedAnswer{}, fmt.Errorf("resources granted to %s: %w", userID, err)
	}
	if shaped.ok {
		return &policy.User{ID: userID, Active: a.Active, Asked: ids}, shaped, nil
	}
	names, err := q.get()
	if err != nil {
		return nil, shapedAnswer{}, fmt.Errorf("resources granted to %s: %w", userID, err)
	}
	u, err := s.newPolicyUser(ctx, orgID, userID, a.Active, a.Holdings, ids, names)
	return u, shapedAnswer{}, err
}

// resident is the resident index, or nil when the server keeps none.
func (s *Server) resident() *residentIndex {
	if s.cache == nil {
		return nil
	}
	return s.cache.resident
}

// resourceFacts returns what the policy reads of those of ids that exist in the organization,
// from the cache or the store.
func (s *Server) resourceFacts(ctx context.Context, orgID string, ids []string) (map[string]policy.Resource, error) {
	return s.cached().resources(orgID, ids, s.loadResources(ctx, orgID))
}

// loadResources reads what the policy reads of the organization's resources from the store.
func (s *Server) loadResources(ctx context.Context, orgID string) resourceLoader {
	return func(ids []string) (map[string]policy.Resource, error) {
		rs, err := s.store.GetResources(ctx, orgID, ids)
		if err != nil {
			return nil, fmt.Errorf("resources asked about: %w", err)
		}
		out := make(map[string]policy.Resource, len(rs))
		for _, r := range rs {
			out[r.ID] = policyResource(r)
		}
		return out, nil
	}
}

// policyResource is what the policy reads of r.
func policyResource(r storage.Resource) policy.Resource {
	return policy.NewResource(r.ID, string(r.Kind), r.Name)
}

// policyInput gathers from the caller's organization what the policy reads to decide whether
// userID may use the resources ids now. Unknown users and resources are simply absent.
func (s *Server) policyInput(ctx context.Context, orgID, userID string, ids []string) (policy.Input, error) {
	f, err := s.userFacts(ctx, orgID, userID)
	if err != nil {
		return policy.Input{}, err
	}
	rs, err := s.resourceFacts(ctx, orgID, ids)
	if err != nil {
		return policy.Input{}, err
	}
	return policy.Input{User: f.Facts, ResourceIDs: ids, Resources: rs, Now: s.now()}, nil
}

// newPolicyUser builds what the policy reads about a user from their holdings as the store read
// them (UserFacts or AskedGrants): the user's own grants, and the groups the user is a member
// of with theirs, each grant with its expiry and its resource's name. Grants of resources that no longer exist are
// left out; expired ones are kept, for the policy to tell "expired" from "not granted". asked,
// when not nil, is the resources the grants were read for (policy.User.Asked), and names what
// the policy reads of them; else names is read here, for every resource the user holds. It
// never reads the clock, so that what it builds stays true until the store changes and can be
// kept for many decisions.
func (s *Server) newPolicyUser(ctx context.Context, orgID, userID string, active bool, h storage.Holdings, asked []string, names map[string]policy.Resource) (*policy.User, error) {
	if asked == nil {
		ids := make([]string, 0, len(h.Grants)+len(h.GroupGrants))
		for _, g := range h.Grants {
			ids = append(ids, g.ResourceID)
		}
		for _, g := range h.GroupGrants {
			ids = append(ids, g.ResourceID)
		}
		// The organization's resources are cached apart from its users, so that loading a
		// user reads only the resources no other user has needed yet.
		var err error
		if names, err = s.resourceFacts(ctx, orgID, ids); err != nil {
			return nil, fmt.Errorf("resources granted to %s: %w", userID, err)
		}
	}
	pu := &policy.User{ID: userID, Active: active, Grants: make(map[string]policy.Grant, len(h.Grants)), Groups: make(map[string]policy.Group, len(h.Groups)), Asked: asked}
	// Each grant is keyed by its resource's copy of the id (Intern), not by the one read here.
	for _, g := range h.Grants {
		if r, ok := names[g.ResourceID]; ok {
			pu.Grants[r.Intern(g.ResourceID)] = r.Grant(g.ExpiresAt)
		}
	}
	for _, g := range h.Groups {
		pu.Groups[g.ID] = policy.Group{Name: g.DisplayName, Grants: map[string]policy.Grant{}}
	}
	for _, g := range h.GroupGrants {
		if r, ok := names[g.ResourceID]; ok {
			pu.Groups[g.GroupID].Grants[r.Intern(g.ResourceID)] = r.Grant(g.ExpiresAt)
		}
	}
	return pu, nil
}

// answer decides, with policy d of revision, whether the organization's user whose cached facts
// are f may use the resources res asks about (with all, every one of them) at time now. The set of
// resources the user may use, or a remembered decision, needs nothing but f; only a new
// question asks the policy: about every resource the user holds once that pays
// (buildPermitted), or else about res's, reading them (decideNew).
func (s *Server) answer(ctx context.Context, orgID string, d Decider, revision string, f *facts, all bool, res *questionResources, now time.Time) (bool, error) {
	ids := res.ids
	if p := f.permitted.Load(); p != nil && p.holds(revision, now) {
		s.memoHits.Add(1)
		return s.fromSet(p, all, ids), nil
	}
	q := newQuestion(s.seed, all, ids)
	if allowed, ok := s.remembered(f, q, revision, now); ok {
		return allowed, nil
	}
	if p := s.buildPermitted(ctx, orgID, d, revision, f, now); p != nil {
		return s.fromSet(p, all, ids), nil
	}
	if s.deniedUnheld(d, f, ids) { // before reading the resources, which it does not need
		return false, nil
	}
	rs, err := res.get()
	if err != nil {
		return false, err
	}
	return s.decideNew(ctx, d, revision, f, q, policy.Input{User: f.Facts, ResourceIDs: ids, Resources: rs, Now: now}), nil
}

// decideFor decides in, about the user whose cached facts are f, with policy d of revision:
// allow, or allow_all when all. The answer is remembered with f and given again, without
// evaluating the policy, until something it read changes: the user, their grants or groups,
// the organization's resources (all of which drop f), the policy (another revision), or the
// time passing the next expiry of one of the user's grants.
func (s *Server) decideFor(ctx context.Context, d Decider, revision string, f *facts, all bool, in policy.Input) bool {
	q := newQuestion(s.seed, all, in.ResourceIDs)
	if allowed, ok := s.remembered(f, q, revision, in.Now); ok {
		return allowed
	}
	if s.deniedUnheld(d, f, in.ResourceIDs) {
		return false
	}
	return s.decideNew(ctx, d, revision, f, q, in)
}

// remembered returns the decision f remembers for q, if policy revision made it and it still
// holds at now.
func (s *Server) remembered(f *facts, q question, revision string, now time.Time) (allowed, ok bool) {
	if allowed, ok = f.decision(q, revision, now); ok {
		s.fromMemory(allowed)
	}
	return allowed, ok
}

// fromMemory counts a decision answered from memory, without evaluating the policy.
func (s *Server) fromMemory(allowed bool) {
	s.metrics.decision(allowed, nil)
	s.memoHits.Add(1)
}

// decideNew evaluates the policy on q, which f does not remember and deniedUnheld did not
// deny, or gives the answer to an earlier question of its shape (evaluateShaped), and
// remembers the answer until the user's next grant expiry. An evaluation error denies and is
// not remembered.
func (s *Server) decideNew(ctx context.Context, d Decider, revision string, f *facts, q question, in policy.Input) bool {
	f.evaluations.Add(1) // a new question, toward the user's set
	allowed, err := s.evaluateShaped(ctx, d, revision, q.all, in)
	if err == nil {
		var until time.Time
		if in.User != nil {
			until = in.User.NextExpiry(in.Now)
		}
		f.remember(q, revision, until, allowed)
	}
	return allowed
}

// evaluate asks the policy, failing closed: an evaluation error is logged, counted and denies.
func (s *Server) evaluate(ctx context.Context, d Decider, all bool, in policy.Input) (bool, error) {
	decide := d.Allow
	if all {
		decide = d.AllowAll
	}
	allowed, err := decide(ctx, in)
	s.metrics.decision(allowed, err)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "policy evaluation failed; denied", slog.String("error", err.Error()))
		return false, err
	}
	return allowed, nil
}

// accessible returns those of rs that the user may use, as the access check would answer for
// each. It returns ErrNotFound if the organization has no such user.
func (s *Server) accessible(ctx context.Context, orgID, userID string, rs []storage.Resource) ([]storage.Resource, error) {
	f, err := s.userFacts(ctx, orgID, userID)
	if err != nil {
		return nil, err
	}
	if f.Facts == nil {
		return nil, errUserNotFound
	}
	d, revision := s.pinPolicy()
	now := s.now()
	var out []storage.Resource
	for _, r := range rs {
		in := policy.Input{User: f.Facts, ResourceIDs: []string{r.ID}, Resources: map[string]policy.Resource{r.ID: policyResource(r)}, Now: now}
		if s.decideFor(ctx, d, revision, f, false, in) {
			out = append(out, r)
		}
	}
	return out, nil
}
