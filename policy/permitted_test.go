package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// TestPermittedMatchesAllow holds Permitted to what Grantry answers from it: for random users
// (own and group grants, some expired, some expiring, some of removed resources; active or
// not) and every resource, allow for that one resource holds exactly when Permitted, asked with
// every resource the user holds a grant on that exists, returns it; and allow_all for random
// lists exactly when the list is not empty and Permitted returns all of it.
func TestPermittedMatchesAllow(t *testing.T) {
	ctx := context.Background()
	e := mustEngine(t, Embedded())
	w := newRandomWorld()
	ids, existing, now, rng := w.ids, w.existing, w.now, w.rng
	for n := range 300 {
		u := w.user()
		held := map[string]Resource{}
		for _, id := range u.HeldResources() {
			if r, ok := existing[id]; ok {
				held[id] = r
			}
		}
		permitted, err := e.Permitted(ctx, Input{User: u, Resources: held, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(permitted) {
			t.Fatalf("user %d: Permitted = %v, not sorted", n, permitted)
		}
		in := func(asked []string) Input { return w.asked(u, asked) }
		for _, id := range ids {
			allowed, err := e.Allow(ctx, in([]string{id}))
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(permitted, id); got != allowed {
				t.Errorf("user %d, %s: allow = %v, in Permitted = %v (Permitted %v)", n, id, allowed, got, permitted)
			}
		}
		asked := make([]string, rng.IntN(4))
		for i := range asked {
			asked[i] = ids[rng.IntN(len(ids))]
		}
		allowed, err := e.AllowAll(ctx, in(asked))
		if err != nil {
			t.Fatal(err)
		}
		all := len(asked) > 0
		for _, id := range asked {
			all = all && slices.Contains(permitted, id)
		}
		if all != allowed {
			t.Errorf("user %d, %v: allow_all = %v, all in Permitted = %v (Permitted %v)", n, asked, allowed, all, permitted)
		}
	}
}

// randomWorld makes random users over 12 resources, every fourth of them removed though grants
// on it remain.
type randomWorld struct {
	ids      []string
	existing map[string]Resource
	now      time.Time
	rng      *rand.Rand
}

func newRandomWorld() *randomWorld {
	w := &randomWorld{ids: make([]string, 12), existing: map[string]Resource{},
		now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(1, 2))}
	for i := range w.ids {
		w.ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		if i%4 != 3 {
			w.existing[w.ids[i]] = NewResource(w.ids[i], "model", fmt.Sprint("r", i))
		}
	}
	return w
}

// user is a random user, active or not, with own grants and up to two groups' grants: of half
// the resources each, some expired, some expiring.
func (w *randomWorld) user() *User {
	u := &User{ID: "u", Active: w.rng.IntN(5) > 0, Grants: w.grants(), Groups: map[string]Group{}}
	for g := range w.rng.IntN(3) {
		u.Groups[fmt.Sprint("g", g)] = Group{Name: fmt.Sprint("G", g), Grants: w.grants()}
	}
	return u
}

func (w *randomWorld) grants() map[string]Grant {
	out := map[string]Grant{}
	for _, id := range w.ids {
		var expires time.Time
		switch w.rng.IntN(6) {
		case 0, 1, 2:
			continue // not granted
		case 3:
			expires = w.now.Add(-time.Minute)
		case 4:
			expires = w.now.Add(time.Minute)
		}
		if r, ok := w.existing[id]; ok {
			out[id] = r.Grant(expires)
		} else {
			out[id] = Grant{Name: "removed", ExpiresAt: expires}
		}
	}
	return out
}

// asked is the input of a question about ids.
func (w *randomWorld) asked(u *User, ids []string) Input {
	rs := map[string]Resource{}
	for _, id := range ids {
		if r, ok := w.existing[id]; ok {
			rs[id] = r
		}
	}
	return Input{User: u, ResourceIDs: ids, Resources: rs, Now: w.now}
}

// TestAskedInputDecidesAsTheWhole holds the input the shipped policy is given for allow and
// allow_all, which holds only the user's grants of the resources asked about, to the whole
// input: for random users and questions (of one resource and of lists, repeats included), both
// decide the same; and it holds only those grants, so a user's other grants are not read.
func TestAskedInputDecidesAsTheWhole(t *testing.T) {
	ctx := context.Background()
	e := mustEngine(t, Embedded())
	w := newRandomWorld()
	for n := range 300 {
		asked := make([]string, w.rng.IntN(4))
		for i := range asked {
			asked[i] = w.ids[w.rng.IntN(len(w.ids))]
		}
		questions := [][]string{asked}
		for _, id := range w.ids {
			questions = append(questions, []string{id})
		}
		u := w.user()
		// The same user, whose whole value is built; u's never is, or valueFor would return it.
		whole := &User{ID: u.ID, Active: u.Active, Grants: u.Grants, Groups: u.Groups}
		for _, q := range questions {
			part := w.asked(u, q).valueAsked()
			if list := part.(ast.Object).Get(keyUser).Get(ast.StringTerm("resource_list")).Value.(ast.Object); list.Len() > len(q) {
				t.Fatalf("user %d, %v: the asked input holds %d grants", n, q, list.Len())
			}
			for _, query := range []rego.PreparedEvalQuery{e.allow, e.allowAll} {
				want, err := decide(ctx, query, w.asked(whole, q).value())
				if err != nil {
					t.Fatal(err)
				}
				got, err := decide(ctx, query, part)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("user %d, %v: decided %v on the asked input, %v on the whole", n, q, got, want)
				}
			}
		}
		if _, err := e.Allow(ctx, w.asked(u, w.ids[:1])); err != nil || u.term.Load() != nil {
			t.Fatalf("Allow built the user's whole value (error %v)", err)
		}
	}
}

// TestOtherPoliciesReadEveryGrant: a policy other than the shipped one is given all of the
// user's grants, whatever it is asked about.
func TestOtherPoliciesReadEveryGrant(t *testing.T) {
	mods := []Module{{Name: "count.rego", Source: "package grantry.authz\n\nallow if count(input.user.resource_list) == 3\n\nallow_all := allow\n"}}
	e := mustEngine(t, mods)
	w := newRandomWorld()
	u := &User{ID: "u", Active: true, Grants: map[string]Grant{}}
	for _, id := range w.ids[:3] {
		u.Grants[id] = w.existing[id].Grant(time.Time{})
	}
	for _, decide := range []func(context.Context, Input) (bool, error){e.Allow, e.AllowAll} {
		if allowed, err := decide(context.Background(), w.asked(u, w.ids[:1])); err != nil || !allowed {
			t.Errorf("a policy counting the grants was not given all three: allowed %v, error %v", allowed, err)
		}
	}
}

// TestAskedUserOnlyForItsQuestion: a user holding only the grants of some resources
// (User.Asked) is decided on by allow and allow_all of the shipped policy about those
// resources, and refused by any other question or policy, rather than decided on grants it
// does not hold.
func TestAskedUserOnlyForItsQuestion(t *testing.T) {
	ctx := context.Background()
	shipped := mustEngine(t, Embedded())
	other := mustEngine(t, []Module{{Name: "count.rego", Source: "package grantry.authz\n\nallow if count(input.user.resource_list) == 1\n\nallow_all := allow\n"}})
	w := newRandomWorld()
	a, b := w.ids[0], w.ids[1]
	u := &User{ID: "u", Active: true, Grants: map[string]Grant{a: w.existing[a].Grant(time.Time{})}, Asked: []string{a}}
	for _, tc := range []struct {
		name   string
		decide func(context.Context, Input) (bool, error)
		ids    []string
		ok     bool
	}{
		{"shipped allow, the resource asked", shipped.Allow, []string{a}, true},
		{"shipped allow_all, the resource asked twice", shipped.AllowAll, []string{a, a}, true},
		{"shipped allow, another resource", shipped.Allow, []string{b}, false},
		{"shipped allow_all, another resource too", shipped.AllowAll, []string{a, b}, false},
		{"another policy", other.Allow, []string{a}, false},
		{"another policy's allow_all", other.AllowAll, []string{a}, false},
		{"explain", func(ctx context.Context, in Input) (bool, error) {
			ex, err := shipped.Explain(ctx, in)
			return ex.Allowed, err
		}, []string{a}, false},
		{"permitted", func(ctx context.Context, in Input) (bool, error) {
			ids, err := shipped.Permitted(ctx, in)
			return len(ids) > 0, err
		}, []string{a}, false},
	} {
		allowed, err := tc.decide(ctx, w.asked(u, tc.ids))
		if tc.ok && (err != nil || !allowed) {
			t.Errorf("%s: allowed %v, error %v; want allowed", tc.name, allowed, err)
		}
		if !tc.ok && (err == nil || allowed) {
			t.Errorf("%s: allowed %v, error %v; want an error", tc.name, allowed, err)
		}
	}
}

// TestDecidesPerUser: only the shipped policy's decision modules, under any names, with any
// tests, let an Engine decide per user; any other policy is asked per question.
func TestDecidesPerUser(t *testing.T) {
	shipped := Embedded()
	renamed := slices.Clone(shipped)
	for i := range renamed {
		renamed[i].Name = "policies/" + renamed[i].Name
	}
	changed := slices.Clone(shipped)
	changed[0].Source = strings.Replace(changed[0].Source, "default allow := false", "default allow := false\n\nallow if input.user.id == \"root\"", 1)
	if changed[0].Source == shipped[0].Source {
		t.Fatal("the shipped policy no longer reads as this test expects")
	}
	for _, tc := range []struct {
		name    string
		modules []Module
		want    bool
	}{
		{"shipped", shipped, true},
		{"shipped, other names", renamed, true},
		{"shipped, without its tests", shipped[:1], true},
		{"shipped, with another module", append(slices.Clone(shipped), Module{Name: "more.rego", Source: "package grantry.more\n\nx := 1\n"}), false},
		{"changed", changed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.modules)
			if got := e.DecidesPerUser(); got != tc.want {
				t.Fatalf("DecidesPerUser = %v, want %v", got, tc.want)
			}
			_, err := e.Permitted(context.Background(), benchInput(1, true))
			if (err == nil) != tc.want {
				t.Fatalf("Permitted error = %v, want one: %v", err, !tc.want)
			}
		})
	}
}

// BenchmarkPermitted is one evaluation of permitted_resources for a user whose grants all
// allow, as Grantry makes it: against BenchmarkAllow, what a user's set costs in questions.
func BenchmarkPermitted(b *testing.B) {
	e := mustEngine(b, Embedded())
	for _, n := range []int{50, 5000} {
		in := benchInput(n, true)
		in.ResourceIDs, in.Resources = nil, map[string]Resource{}
		for id := range in.User.Grants {
			in.Resources[id] = NewResource(id, "model", "name")
		}
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ids, err := e.Permitted(context.Background(), in); len(ids) != n || err != nil {
					b.Fatal(len(ids), err)
				}
			}
		})
	}
}
