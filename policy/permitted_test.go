package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPermittedMatchesAllow holds Permitted to what Grantry answers from it: for random users
// (own and group grants, some expired, some expiring, some of removed resources; active or
// not) and every resource, allow for that one resource holds exactly when Permitted, asked with
// every resource the user holds a grant on that exists, returns it; and allow_all for random
// lists exactly when the list is not empty and Permitted returns all of it.
func TestPermittedMatchesAllow(t *testing.T) {
	ctx := context.Background()
	e := mustEngine(t, Embedded())
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 12)
	existing := map[string]Resource{}
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		if i%4 != 3 { // every fourth was removed, though grants on it remain
			existing[ids[i]] = NewResource(ids[i], "model", fmt.Sprint("r", i))
		}
	}
	grants := func() map[string]Grant {
		out := map[string]Grant{}
		for _, id := range ids {
			var expires time.Time
			switch rng.IntN(6) {
			case 0, 1, 2:
				continue // not granted
			case 3:
				expires = now.Add(-time.Minute)
			case 4:
				expires = now.Add(time.Minute)
			}
			if r, ok := existing[id]; ok {
				out[id] = r.Grant(expires)
			} else {
				out[id] = Grant{Name: "removed", ExpiresAt: expires}
			}
		}
		return out
	}
	for n := range 300 {
		u := &User{ID: "u", Active: rng.IntN(5) > 0, Grants: grants(), Groups: map[string]Group{}}
		for g := range rng.IntN(3) {
			u.Groups[fmt.Sprint("g", g)] = Group{Name: fmt.Sprint("G", g), Grants: grants()}
		}
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
		in := func(asked []string) Input {
			rs := map[string]Resource{}
			for _, id := range asked {
				if r, ok := existing[id]; ok {
					rs[id] = r
				}
			}
			return Input{User: u, ResourceIDs: asked, Resources: rs, Now: now}
		}
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
