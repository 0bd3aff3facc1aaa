package main

import (
	"flag"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func smallParams() params {
	return params{Seed: 7, Users: 60, Resources: 40, Grants: 6, Checks: 2_000}
}

func mustWorkload(tb testing.TB, p params) *workload {
	tb.Helper()
	w, err := newWorkload(p)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// TestWorkloadIsDeterministic checks the property every process relies on: the same params draw
// the same workload, so the seeding process and each load generator agree without a shared file.
func TestWorkloadIsDeterministic(t *testing.T) {
	a, b := mustWorkload(t, smallParams()), mustWorkload(t, smallParams())
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(workload{})); diff != "" {
		t.Fatalf("two workloads of the same params differ (-first +second):\n%s", diff)
	}
	other := smallParams()
	other.Seed++
	if c := mustWorkload(t, other); slices.Equal(a.Checks, c.Checks) || a.OrgID == c.OrgID {
		t.Error("a different seed drew the same workload")
	}
	// More checks leave the data set as it was: the streams are separate.
	longer := smallParams()
	longer.Checks *= 2
	if d := mustWorkload(t, longer); !slices.Equal(a.grants, d.grants) || !slices.Equal(a.Checks, d.Checks[:len(a.Checks)]) {
		t.Error("drawing more checks changed the data set or the first checks")
	}
}

func TestWorkloadShape(t *testing.T) {
	tests := []struct {
		name string
		p    params
	}{
		{"small", smallParams()},
		{"a user holds all resources but one", params{Seed: 1, Users: 20, Resources: 10, Grants: 9, Checks: 500}},
		{"make bench's shape, fewer users", params{Seed: 1, Users: 500, Resources: 1_000, Grants: 50, Checks: 20_000}},
	}
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := mustWorkload(t, tc.p)
			for _, id := range append([]string{w.OrgID}, w.ResourceIDs...) {
				if !uuidV4.MatchString(id) {
					t.Fatalf("id %q is not a lowercase version 4 UUID", id)
				}
			}
			if ids := slices.Compact(slices.Sorted(slices.Values(w.ResourceIDs))); len(ids) != tc.p.Resources {
				t.Errorf("%d distinct resource ids, want %d", len(ids), tc.p.Resources)
			}
			for u := range tc.p.Users {
				g := w.userGrants(u)
				if len(g) != tc.p.Grants || !slices.IsSorted(g) || len(slices.Compact(slices.Clone(g))) != tc.p.Grants {
					t.Fatalf("user %d holds %v, want %d distinct sorted resources", u, g, tc.p.Grants)
				}
				if g[len(g)-1] >= uint32(tc.p.Resources) {
					t.Fatalf("user %d holds resource %d of %d", u, g[len(g)-1], tc.p.Resources)
				}
			}
			granted := 0
			for _, c := range w.Checks {
				if c.Granted != w.granted(int(c.User), c.Resource) {
					t.Fatalf("check %+v: Granted disagrees with the user's grants", c)
				}
				if c.Granted {
					granted++
				}
			}
			if share := float64(granted) / float64(len(w.Checks)); share < 0.45 || share > 0.55 {
				t.Errorf("%.2f of checks are granted, want about half", share)
			}
			for _, p := range w.Writes {
				if p.Granted || w.granted(int(p.User), p.Resource) {
					t.Fatalf("write pair %+v is already granted; granting it would change nothing", p)
				}
			}
			if len(w.Warmup) == 0 || slices.Equal(w.Warmup, w.Checks[:len(w.Warmup)]) {
				t.Error("the warm-up sequence repeats the measured one")
			}
		})
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    params
	}{
		{"no users", params{Users: 0, Resources: 10, Grants: 1, Checks: 1}},
		{"no checks", params{Users: 1, Resources: 10, Grants: 1, Checks: 0}},
		{"no grants", params{Users: 1, Resources: 10, Grants: 0, Checks: 1}},
		{"every resource granted: no not-granted pair", params{Users: 1, Resources: 10, Grants: 10, Checks: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newWorkload(tc.p); err == nil {
				t.Errorf("newWorkload(%+v) succeeded, want an error", tc.p)
			}
		})
	}
}

// TestParamsArgsRoundTrip checks that a subprocess given p.args() draws p's workload.
func TestParamsArgsRoundTrip(t *testing.T) {
	want := smallParams()
	var got params
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	got.register(fs)
	if err := fs.Parse(want.args()); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("params through flags = %+v, want %+v", got, want)
	}
}

// TestDepartments: about nine users in ten are in research, drawn from the seed, so that every
// process agrees on them; more checks leave them as they were.
func TestDepartments(t *testing.T) {
	p := params{Seed: 3, Users: 10_000, Resources: 10, Grants: 2, Checks: 10}
	w := mustWorkload(t, p)
	research := 0
	for u := range p.Users {
		switch w.department(u) {
		case "research":
			research++
		case "sales":
		default:
			t.Fatalf("user %d is in %q", u, w.department(u))
		}
	}
	if share := float64(research) / float64(p.Users); share < 0.88 || share > 0.92 {
		t.Errorf("%.3f of users in research, want about 0.9", share)
	}
	p.Checks *= 3
	if again := mustWorkload(t, p); !slices.Equal(again.research, w.research) {
		t.Error("drawing more checks changed the users' departments")
	}
}

// TestProbePairs: the prober's pairs are distinct and not granted, and the replicas' load,
// which leaves them out, asks about none of them and about every other pair it would have.
func TestProbePairs(t *testing.T) {
	w := mustWorkload(t, smallParams())
	probes := w.probePairs(probeCount)
	if len(probes) != probeCount {
		t.Fatalf("%d probe pairs, want %d", len(probes), probeCount)
	}
	type key struct{ u, r uint32 }
	probed := map[key]bool{}
	for _, p := range probes {
		if p.Granted || w.granted(int(p.User), p.Resource) {
			t.Fatalf("probe pair %+v is granted; the prober grants it and revokes it", p)
		}
		if probed[key{p.User, p.Resource}] {
			t.Fatalf("probe pair %+v drawn twice", p)
		}
		probed[key{p.User, p.Resource}] = true
	}
	tg, err := newTarget(targetReplicas, w)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][][]pair{"checks": {tg.seq, w.Checks}, "warm-up": {tg.warm, w.Warmup}} {
		kept, all := got[0], got[1]
		left := 0
		for _, c := range all {
			if probed[key{c.User, c.Resource}] {
				left++
			}
		}
		if left == 0 {
			t.Fatalf("no %s pair is a probe pair: the test shows nothing", name)
		}
		if len(kept) != len(all)-left {
			t.Errorf("%s: %d kept of %d, want all but the %d probe pairs", name, len(kept), len(all), left)
		}
		for _, c := range kept {
			if probed[key{c.User, c.Resource}] {
				t.Fatalf("the replicas' %s ask about probe pair %+v", name, c)
			}
		}
	}
	if tiny := mustWorkload(t, params{Seed: 1, Users: 1, Resources: 3, Grants: 1, Checks: 1}); len(tiny.probePairs(probeCount)) != 2 {
		t.Errorf("a workload of two not-granted pairs gives %d probe pairs, want both", len(tiny.probePairs(probeCount)))
	}
}
