package authz

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantry/grantry/policy"
)

// decider answers a rule's question over a view: the layers of a decision (the memo, then the
// evaluation) are deciders wrapping one another.
type decider interface {
	decide(ctx context.Context, v *view) (bool, error)
}

// pinned is one policy with what each of its two rules needs: allow for one resource asked
// about, allow_all for several.
type pinned struct {
	engine *policy.Engine
	rules  [2]decider // allow, allow_all
	memos  [2]*memo   // nil where the rule is not memoised
}

func newPinned(e *policy.Engine, memoBytes int, counters *counters, log *slog.Logger) *pinned {
	p := &pinned{engine: e}
	for i, all := range []bool{false, true} {
		reads := e.Reads(all)
		var d decider = &evaluator{engine: e, all: all, reads: reads, counters: counters, log: log}
		if reads.Bounded() && memoBytes > 0 {
			p.memos[i] = newMemo(memoBytes)
			d = &memoised{memo: p.memos[i], reads: reads, next: d, counters: counters}
		}
		p.rules[i] = d
	}
	return p
}

func (p *pinned) rule(all bool) decider {
	if all {
		return p.rules[1]
	}
	return p.rules[0]
}

// memoised answers from its memo a question whose key it holds, and asks next otherwise,
// remembering what next answers.
type memoised struct {
	memo     *memo
	reads    *policy.Reads
	next     decider
	counters *counters
}

func (m *memoised) decide(ctx context.Context, v *view) (bool, error) {
	var buf [256]byte
	k := appendKey(buf[:0], m.reads, v)
	if allowed, ok := m.memo.get(k); ok {
		m.counters.memoHits.Add(1)
		return allowed, nil
	}
	m.counters.memoMisses.Add(1)
	allowed, err := m.next.decide(ctx, v)
	if err == nil {
		m.memo.put(k, allowed)
	}
	return allowed, err
}

// evaluator evaluates the policy's rule: over the input pruned to what the rule reads when its
// reads are bounded, over the whole input otherwise. It fails closed: an evaluation error is
// logged, counted, and denies.
type evaluator struct {
	engine   *policy.Engine
	all      bool
	reads    *policy.Reads
	counters *counters
	log      *slog.Logger
}

func (ev *evaluator) decide(ctx context.Context, v *view) (bool, error) {
	in := v.input
	if ev.reads.Bounded() {
		in = func() ast.Value { return prune(ev.reads, v) }
	}
	ev.counters.evaluations.Add(1)
	allowed, err := ev.engine.Decide(ctx, ev.all, in())
	if err != nil {
		ev.log.LogAttrs(ctx, slog.LevelError, "policy evaluation failed; denied", slog.String("error", err.Error()))
		return false, evaluationError{err}
	}
	return allowed, nil
}

// evaluationError is an evaluation that failed: the question is denied, and the answer
// remembered nowhere.
type evaluationError struct{ err error }

func (e evaluationError) Error() string { return e.err.Error() }
func (e evaluationError) Unwrap() error { return e.err }

// counters are the engine's counts, for /metrics. Each outcome has a counter of its own, and
// the memo's live here rather than in the memo, so that none ever goes down: not when a scrape
// falls between two of them, nor when a policy reload replaces the memo.
type counters struct {
	decisions            [3]atomic.Uint64 // by outcome: denied, allowed, failed
	evaluations          atomic.Uint64
	memoHits, memoMisses atomic.Uint64
}

// The outcomes of a decision, as counters.decisions counts them.
const (
	outcomeDenied = iota
	outcomeAllowed
	outcomeFailed // the policy could not be evaluated, which denies
)
