package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Load builds an Engine from modules only if the policy compiles, defines the rules Grantry
// queries, and passes its own tests (the test_* rules of its *_test.rego modules): the gate a
// policy passes before it may decide anything.
func Load(ctx context.Context, modules []Module) (*Engine, error) {
	e, err := New(ctx, modules)
	if err != nil {
		return nil, err
	}
	_, failures, err := RunTests(ctx, modules)
	if err != nil {
		return nil, err
	}
	if len(failures) > 0 {
		msgs := make([]string, len(failures))
		for i, f := range failures {
			msgs[i] = f.String()
		}
		return nil, fmt.Errorf("policy tests failed: %s", strings.Join(msgs, "; "))
	}
	return e, nil
}

// Live is the running policy: an Engine that Replace swaps for another while requests are
// being decided. The swap is one atomic pointer store, so every decision is made wholly by the
// old engine or wholly by the new one, and none waits for a reload. A caller takes Engine once
// for all the answers that one policy must give.
type Live struct {
	cur      atomic.Pointer[Engine]
	reloaded atomic.Uint64
	failed   atomic.Uint64
}

// NewLive returns a Live running e.
func NewLive(e *Engine) *Live {
	l := &Live{}
	l.cur.Store(e)
	return l
}

// Engine returns the engine running now.
func (l *Live) Engine() *Engine { return l.cur.Load() }

// Revision is Engine().Revision.
func (l *Live) Revision() string { return l.Engine().Revision() }

// ErrUnchanged is returned by Replace when the modules are those running already.
var ErrUnchanged = errors.New("policy unchanged")

// Replace loads modules (see Load) and, only if that succeeds, makes them the running policy,
// returning the new engine. Otherwise the running policy stays, the failure is counted, and
// the error says why. Modules identical to the running ones change nothing and return
// ErrUnchanged.
func (l *Live) Replace(ctx context.Context, modules []Module) (*Engine, error) {
	if Revision(modules) == l.Revision() {
		return nil, ErrUnchanged
	}
	e, err := Load(ctx, modules)
	if err != nil {
		l.failed.Add(1)
		return nil, err
	}
	l.cur.Store(e)
	l.reloaded.Add(1)
	return e, nil
}

// Reloads is how many times Replace swapped in a new policy.
func (l *Live) Reloads() uint64 { return l.reloaded.Load() }

// ReloadFailures is how many times a new policy was refused and the old one kept.
func (l *Live) ReloadFailures() uint64 { return l.failed.Load() }
