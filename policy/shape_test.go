package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestShapeDecidesAlike holds the shipped policy to what Shape says of it: over random users
// (ids, own and group grants, some expired or expiring, some of removed resources, active or
// not; at random times, or none) and every resource, the questions ShapeOf gives one shape are
// all decided alike by allow, and every shape, active or not, of a resource the organization
// has or not, is met many times.
func TestShapeDecidesAlike(t *testing.T) {
	ctx := context.Background()
	e := mustEngine(t, Embedded())
	w := newRandomWorld()
	decided := map[Shape]bool{}
	met := map[Shape]int{}
	for n := range 400 {
		u := w.user()
		u.ID = fmt.Sprint("user-", n)
		in := func(id string) Input {
			in := w.asked(u, []string{id})
			switch n % 3 {
			case 1:
				in.Now = w.now.Add(time.Duration(w.rng.IntN(120)-60) * time.Minute)
			case 2:
				in.Now = time.Time{} // no input.now
			}
			return in
		}
		for _, id := range w.ids {
			in := in(id)
			shape, ok := e.ShapeOf(in)
			if !ok {
				continue
			}
			allowed, err := e.Allow(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if want, seen := decided[shape]; seen && allowed != want {
				t.Fatalf("user %d, %s: allow = %v, another question of shape %+v was decided %v", n, id, allowed, shape, want)
			}
			decided[shape] = allowed
			met[shape]++
		}
	}
	kinds := map[[2]bool]int{}
	for s, n := range met {
		kinds[[2]bool{s.Active, s.Found}] += n
	}
	for _, k := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
		if kinds[k] < 20 {
			t.Errorf("shapes of an active user %v, of a resource found %v, met %d times: too few to tell", k[0], k[1], kinds[k])
		}
	}
}

// TestShapeOf: a question has a shape only with the shipped policy, about one resource, of a
// user who holds a grant of it of their own that never expires, whatever else the user holds.
func TestShapeOf(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	r := NewResource("r", "model", "gpt")
	other := NewResource("o", "dataset", "docs")
	forever, expiring := r.Grant(time.Time{}), r.Grant(now.Add(time.Hour))
	user := func(active bool, grants map[string]Grant, groups map[string]Group) *User {
		return &User{ID: "ada", Active: active, Grants: grants, Groups: groups}
	}
	groupWith := map[string]Group{"g": {Name: "G", Grants: map[string]Grant{"r": expiring}}}
	resources := map[string]Resource{"r": r, "o": other}
	src := Embedded()[0].Source
	replaced := mustEngine(t, []Module{{Name: "authz.rego", Source: strings.Replace(src, "default allow := false", "default allow := false\n\nallow if input.user.id == \"ada\"", 1)}})
	shipped := mustEngine(t, Embedded())
	for _, tc := range []struct {
		name   string
		engine *Engine
		in     Input
		want   Shape
		ok     bool
	}{
		{"own grant forever", shipped, Input{User: user(true, map[string]Grant{"r": forever}, nil), ResourceIDs: []string{"r"}, Resources: resources, Now: now},
			Shape{ID: "r", Active: true, Found: true, Kind: "model", Name: "gpt"}, true},
		{"inactive user", shipped, Input{User: user(false, map[string]Grant{"r": forever}, nil), ResourceIDs: []string{"r"}, Resources: resources, Now: now},
			Shape{ID: "r", Active: false, Found: true, Kind: "model", Name: "gpt"}, true},
		{"resource removed", shipped, Input{User: user(true, map[string]Grant{"r": forever}, nil), ResourceIDs: []string{"r"}, Resources: map[string]Resource{}, Now: now},
			Shape{ID: "r", Active: true}, true},
		{"also through a group", shipped, Input{User: user(true, map[string]Grant{"r": forever}, groupWith), ResourceIDs: []string{"r"}, Resources: resources, Now: now},
			Shape{ID: "r", Active: true, Found: true, Kind: "model", Name: "gpt"}, true},
		{"own grant expiring", shipped, Input{User: user(true, map[string]Grant{"r": expiring}, nil), ResourceIDs: []string{"r"}, Resources: resources, Now: now}, Shape{}, false},
		{"only through a group", shipped, Input{User: user(true, nil, groupWith), ResourceIDs: []string{"r"}, Resources: resources, Now: now}, Shape{}, false},
		{"not held", shipped, Input{User: user(true, map[string]Grant{"r": forever}, nil), ResourceIDs: []string{"o"}, Resources: resources, Now: now}, Shape{}, false},
		{"two resources", shipped, Input{User: user(true, map[string]Grant{"r": forever, "o": other.Grant(time.Time{})}, nil), ResourceIDs: []string{"r", "o"}, Resources: resources, Now: now}, Shape{}, false},
		{"no such user", shipped, Input{ResourceIDs: []string{"r"}, Resources: resources, Now: now}, Shape{}, false},
		{"replaced policy", replaced, Input{User: user(true, map[string]Grant{"r": forever}, nil), ResourceIDs: []string{"r"}, Resources: resources, Now: now}, Shape{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.engine.ShapeOf(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ShapeOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
