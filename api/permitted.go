package api

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/grantry/grantry/policy"
)

// perUserDecider is a Decider that can also decide every check of a user in one evaluation:
// *policy.Engine is one, when its policy is the shipped one (DecidesPerUser).
type perUserDecider interface {
	Decider
	DecidesPerUser() bool
	Permitted(ctx context.Context, in policy.Input) ([]string, error)
	ShapeOf(in policy.Input) (policy.Shape, bool)
}

// decidesPerUser returns d as a perUserDecider if it decides per user: a policy Grantry knows
// to read of a question only the user's grants of the resources asked about, and to permit
// none the user holds no grant on.
func decidesPerUser(d Decider) (perUserDecider, bool) {
	pd, ok := d.(perUserDecider)
	return pd, ok && pd.DecidesPerUser()
}

// permittedSet is every resource a user may use, as one evaluation of the policy over all the
// resources the user holds a grant on found them. It is kept with the user's facts, so every
// change that drops them drops it, and holds as a remembered decision does.
type permittedSet struct {
	// ids is hashed rather than a sorted slice: a check of 100 ids took 2.2–2.3 µs with a map
	// against 5.3–5.6 µs of binary searches, and one id 153–167 ns against 166–189
	// (BenchmarkDecision/warm/can_user_access_all/tags=100 and /set, alternating runs).
	ids idSet
	validity
}

// has reports whether the set answers id: allowed.
func (p *permittedSet) has(id string) bool {
	return p.ids.has(id)
}

// permitsAll is allow (one id, not all) or allow_all (all) of the shipped policy, read from the
// set: allow asks about exactly one resource, allow_all about at least one, and every resource
// asked about must be in the set.
func (p *permittedSet) permitsAll(all bool, ids []string) bool {
	if len(ids) == 0 || (!all && len(ids) != 1) {
		return false
	}
	for _, id := range ids {
		if !p.has(id) {
			return false
		}
	}
	return true
}

// grantsPerEvaluation says when a user's set is worth building: once the policy has been asked
// more new questions about the user than one, and than the user's grants divided by it. A user
// asked one question never pays for a set. One asked a second is likely to be asked many more,
// since applications check before every call a user makes, so a user with fewer than 64 grants
// gets a set at the second new question since the user was kept in memory (the fourth in
// all: the loads before keptFromLoad are not kept, nor their questions counted; cache.go's
// admit); one with thousands (whose set costs tens of ms) after a number of questions that
// grows with them.
// The set costs 3.4 to 6.2 µs a grant in process
// (policy.BenchmarkPermitted: 171 µs for 50 grants, 31 ms for 5,000), and a new question about
// 11 to 14 µs (BenchmarkDecision/miss). At grants/16, make bench's users (50 grants, four
// questions before a set) were still being asked their first questions in the second of three
// runs, which then measured a server still warming up: three 6 s runs of its load pinned, twice,
// gave 5,134, 6,958 and 15,922 checks/s, and 6,226, 10,000 and 17,409, against 3,319, 10,797 and
// 13,014, and 4,871, 15,892 and 15,177 at grants/64, which served about as many checks over
// the three runs together and reaches the steady state a run sooner.
const grantsPerEvaluation = 64

// deniedUnheld reports whether a new question about ids, of the user whose facts are f, is
// denied without asking policy d, and if so counts it and its denial as decideNew counts an
// evaluation: when d decides per user (the shipped policy) and the user does not exist or holds
// no grant on one of ids. That policy permits a resource only to an existing user holding a
// grant on it, the property a user's set relies on (a resource not in it is denied), so it
// would deny; a replaced policy is always asked. It is not remembered: knowing it again costs
// as little. Half of make bench-large's checks, of users not in memory, are of this kind, and
// each cost an evaluation; so are most of the questions of a resource list filtered by user
// (?user_id=), one for each resource of its kind, and the check_batch's of resources the user
// holds no grant on.
func (s *Server) deniedUnheld(d Decider, f *facts, ids []string) bool {
	if _, ok := decidesPerUser(d); !ok {
		return false
	}
	if u := f.Facts; u != nil && !slices.ContainsFunc(ids, func(id string) bool { return !u.Holds(id) }) {
		return false
	}
	f.evaluations.Add(1) // a new question, toward the user's set
	s.metrics.decision(false, nil)
	return true
}

// fromSet answers a check from the user's set p.
func (s *Server) fromSet(p *permittedSet, all bool, ids []string) bool {
	allowed := p.permitsAll(all, ids)
	s.metrics.decision(allowed, nil)
	return allowed
}

// buildPermitted evaluates the set of resources the user of f may use at now, and keeps it
// with f, when a new question about the user is to be decided and the set can be had and is
// worth it: the policy decides per user, the user exists, and grantsPerEvaluation says so. It
// returns nil otherwise; an evaluation error is logged and leaves the question to allow or
// allow_all.
func (s *Server) buildPermitted(ctx context.Context, orgID string, d Decider, revision string, f *facts, now time.Time) *permittedSet {
	u := f.Facts
	pd, ok := decidesPerUser(d)
	if !ok || u == nil || u.Asked != nil {
		return nil
	}
	grants := len(u.Grants)
	for _, g := range u.Groups {
		grants += len(g.Grants)
	}
	if f.evaluations.Load() < 1+int64(grants/grantsPerEvaluation) {
		return nil
	}
	return s.setOf(ctx, orgID, pd, revision, f, now)
}

// setOf evaluates, with pd of revision, the set of resources the user of f may use at now,
// keeps it with f and returns it; nil, having logged why, if that fails.
func (s *Server) setOf(ctx context.Context, orgID string, pd perUserDecider, revision string, f *facts, now time.Time) *permittedSet {
	u := f.Facts
	ids, err := s.permittedOf(ctx, orgID, pd, revision, u, now)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "deciding a user's checks at once failed; asking the policy per check",
			slog.String("error", err.Error()))
		return nil
	}
	p := &permittedSet{ids: newIDSet(ids), validity: validity{revision, u.NextExpiry(now)}}
	f.permitted.Store(p)
	return p
}

// permittedOf returns the resources u holds that u may use at now, by pd of revision: from the
// answers to their shapes (shapedPermitted) when each has one, else by one evaluation of the
// policy over all of them. The ids returned are those u's facts hold, not copies.
func (s *Server) permittedOf(ctx context.Context, orgID string, pd perUserDecider, revision string, u *policy.User, now time.Time) ([]string, error) {
	held := u.HeldResources()
	rs, err := s.resourceFacts(ctx, orgID, held)
	if err != nil {
		return nil, err
	}
	if ids, ok, err := s.shapedPermitted(ctx, pd, revision, u, held, rs, now); ok {
		return ids, err
	}
	permitted, err := pd.Permitted(ctx, policy.Input{User: u, Resources: rs, Now: now})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(permitted))
	for _, id := range held {
		if _, found := slices.BinarySearch(permitted, id); found {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// shapedPermitted returns those of held, the resources u holds, that u may use, answering the
// question about each as the policy answered the first question of its shape under revision
// (evaluateShaped), and asking it only of shapes not answered yet; ok is false, and nothing
// asked, if one of them has no shape (a grant that expires, or one through a group only).
// A set of 50 grants so read took 27–30 µs against 377–384 evaluated whole (BenchmarkSetOf,
// three runs each). In a million-user organization, where a user's set is built at the second
// question after the user is kept and is seldom used again, evaluating sets had taken 3.2% of
// a pinned server's samples in the third run of make bench-large's load.
func (s *Server) shapedPermitted(ctx context.Context, pd perUserDecider, revision string, u *policy.User, held []string, rs map[string]policy.Resource, now time.Time) (ids []string, ok bool, err error) {
	asking := func(i int) policy.Input {
		return policy.Input{User: u, ResourceIDs: held[i : i+1 : i+1], Resources: rs, Now: now}
	}
	keys := make([]shapeKey, len(held))
	for i := range held {
		shape, ok := pd.ShapeOf(asking(i))
		if !ok {
			return nil, false, nil
		}
		keys[i] = shapeKey{revision, shape}
	}
	ids = make([]string, 0, len(held))
	for i, k := range keys {
		allowed, _, err := s.shapes.answer(k, func() (bool, error) { return pd.Allow(ctx, asking(i)) })
		if err != nil {
			return nil, true, err
		}
		if allowed {
			ids = append(ids, held[i])
		}
	}
	return ids, true, nil
}
