package api

import (
	"context"
	"sync"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// maxShapes bounds the answers shapeMemo keeps: a few per resource of each organization and
// policy revision (active or not, the resource there or not). Past it, they are dropped all at
// once and asked again.
const maxShapes = 1 << 14

// shapeMemo keeps the policy's answers to questions by their shape (policy.Shape): a question
// about a user not in memory, of which the check path reads only the grants asked about, is
// then answered as the first question of its shape was, without evaluating the policy. In a
// million-user organization, where almost every check is about a user not in memory, that
// took checks from 75.6–105.5 to 55.6–56.1 µs of server CPU each (make bench-large's load).
type shapeMemo struct {
	mu      sync.RWMutex
	answers map[shapeKey]bool
}

type shapeKey struct {
	revision string
	policy.Shape
}

// answer returns the answer kept for k, with remembered true, or else asks ask and keeps what
// it answers (an error is returned and not kept).
func (m *shapeMemo) answer(k shapeKey, ask func() (bool, error)) (allowed, remembered bool, err error) {
	if allowed, ok := m.get(k); ok {
		return allowed, true, nil
	}
	if allowed, err = ask(); err == nil {
		m.put(k, allowed)
	}
	return allowed, false, err
}

func (m *shapeMemo) get(k shapeKey) (allowed, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	allowed, ok = m.answers[k]
	return allowed, ok
}

func (m *shapeMemo) put(k shapeKey, allowed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answers == nil || len(m.answers) >= maxShapes {
		m.answers = make(map[shapeKey]bool)
	}
	m.answers[k] = allowed
}

// evaluateShaped is evaluate, answering a question of one resource that has a shape (of the
// shipped policy) as the policy answered the first of that shape under revision.
func (s *Server) evaluateShaped(ctx context.Context, d Decider, revision string, all bool, in policy.Input) (bool, error) {
	pd, ok := decidesPerUser(d)
	if !ok || all {
		return s.evaluate(ctx, d, all, in)
	}
	shape, ok := pd.ShapeOf(in)
	if !ok {
		return s.evaluate(ctx, d, all, in)
	}
	allowed, remembered, err := s.shapes.answer(shapeKey{revision, shape}, func() (bool, error) {
		return s.evaluate(ctx, d, false, in)
	})
	if remembered {
		s.fromMemory(allowed)
	}
	return allowed, err
}

// shapedAnswer is the answer to a question found by its shape, if ok.
type shapedAnswer struct{ allowed, ok bool }

// shapeAnswer returns the answer kept for the shape of the question q (allow_all when all) of
// policy revision, about a user read for it as a (AskedGrants), if it has one: what ShapeOf
// would find of the user askedUser builds from a, without building the user, the resources'
// map and the policy's input, which took about a quarter of a check of a user not in memory
// (BenchmarkCheckNewUser/resident/own: 11.4–11.5 µs a check with them, 8.0–8.9 without).
// Its caller has made sure that the policy decides per user.
func (s *Server) shapeAnswer(revision string, all bool, q *questionResources, a storage.Asked) (shapedAnswer, error) {
	// Of one resource asked about, a.Grants holds the user's own grant of it, if any.
	if all || len(q.ids) != 1 || len(a.Grants) != 1 {
		return shapedAnswer{}, nil
	}
	r, found, err := q.only()
	if err != nil || !found { // a grant of a removed resource is left out of the user: no shape
		return shapedAnswer{}, err
	}
	g := a.Grants[0]
	shape, ok := policy.GrantShape(q.ids[0], a.Active, g.ResourceID == q.ids[0], g.ExpiresAt, r, found)
	if !ok {
		return shapedAnswer{}, nil
	}
	allowed, ok := s.shapes.get(shapeKey{revision, shape})
	return shapedAnswer{allowed, ok}, nil
}
