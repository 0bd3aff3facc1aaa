package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/policy"
)

// TestQuestionsOfOneShapeAskedOnce: with the shipped policy, a new question about a user who
// holds a grant of their own that never expires of the one resource asked about is answered
// as the first question of its shape was (whether the user is active, whether the resource is
// there), without asking the policy again; questions of another shape, of a list, or of a
// grant that expires are asked; a replaced policy is asked every question. Each answer is
// what the policy itself gives.
func TestQuestionsOfOneShapeAskedOnce(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	store, id := adaStore(t, now)
	must := fatalOn(t)
	shipped := newEngine(t, policy.Embedded())
	// The replaced policy permits ada only: it reads the user's id, which no shape holds.
	replaced := newEngine(t, shippedEdited(t, "permitted(id) if {\n", "permitted(id) if {\n\tinput.user.id == \"ada\"\n"))

	// named holds id(0) and id(5) (whose resource was removed) for good, and id(1) until an
	// hour from now; user is named a new name each time.
	named := func(name string, active bool) *policy.User {
		r0, r1 := policy.NewResource(id(0), "model", "m0"), policy.NewResource(id(1), "model", "m1")
		return &policy.User{ID: name, Active: active, Grants: map[string]policy.Grant{
			id(0): r0.Grant(time.Time{}),
			id(1): r1.Grant(now.Add(time.Hour)),
			id(5): {Name: "m5"},
		}}
	}
	n := 0
	user := func(active bool) *policy.User {
		n++
		return named(strings.Repeat("u", n), active)
	}
	type question struct {
		name  string
		u     *policy.User
		all   bool
		ids   []string
		want  bool
		asked bool // the policy is asked
	}
	for _, tc := range []struct {
		name      string
		engine    *policy.Engine
		questions []question
	}{
		{"shipped", shipped, []question{
			{"first of its shape", user(true), false, []string{id(0)}, true, true},
			{"another user, same shape", user(true), false, []string{id(0)}, true, false},
			{"and again", user(true), false, []string{id(0)}, true, false},
			{"inactive user: another shape", user(false), false, []string{id(0)}, false, true},
			{"inactive again", user(false), false, []string{id(0)}, false, false},
			{"resource removed: another shape", user(true), false, []string{id(5)}, false, true},
			{"removed again", user(true), false, []string{id(5)}, false, false},
			{"grant that expires: no shape", user(true), false, []string{id(1)}, true, true},
			{"expiring again", user(true), false, []string{id(1)}, true, true},
			{"allow_all: no shape", user(true), true, []string{id(0)}, true, true},
		}},
		{"replaced", replaced, []question{
			{"ada", named("ada", true), false, []string{id(0)}, true, true},
			{"another user, same shape, still asked", user(true), false, []string{id(0)}, false, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &countingEngine{Engine: tc.engine}
			s := New(Config{Store: store, Decider: e, Now: func() time.Time { return now }})
			for _, q := range tc.questions {
				before, hits := e.asked.Load(), s.memoHits.Load()
				allowed, _, err := s.answerNow(ctx, org, &facts{Facts: q.u}, q.all, q.ids)
				must(err)
				asked := e.asked.Load() > before
				if allowed != q.want || asked != q.asked || (s.memoHits.Load() > hits) == asked {
					t.Errorf("%s: allowed %v, asked the policy %v, counted as a hit %v; want %v, %v",
						q.name, allowed, asked, s.memoHits.Load() > hits, q.want, q.asked)
				}
				rs, err := s.resourceFacts(ctx, org, q.ids)
				must(err)
				policySays, err := s.evaluate(ctx, tc.engine, q.all, policy.Input{User: q.u, ResourceIDs: q.ids, Resources: rs, Now: now})
				must(err)
				if allowed != policySays {
					t.Errorf("%s: allowed %v, the policy says %v", q.name, allowed, policySays)
				}
			}
		})
	}
}
