package authz

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// testPolicies are the policies the engine's fast paths are held to: the shipped one, and
// every policy of testdata/policies and examples/policies.
func testPolicies(tb testing.TB) map[string][]policy.Module {
	tb.Helper()
	out := map[string][]policy.Module{"shipped": policy.Embedded()}
	for _, dir := range []string{"../testdata/policies", "../examples/policies"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			mods, err := policy.LoadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				tb.Fatal(err)
			}
			out[strings.TrimPrefix(dir, "../")+"/"+e.Name()] = mods
		}
	}
	for name, src := range map[string]string{
		"email":      `allow if endswith(input.user.email, "@example.com")`,
		"whole user": `allow if count(input.user) > 3`,
		"attributes": `allow if input.user.attributes.department == "research"`,
		"any grant":  "allow if {\nsome id, g in input.user.resource_list\ng.expires_at > input.now\ninput.resources[id]\n}",
		"groups":     "allow if {\nsome g in input.user.groups\nstartswith(g.name, \"fn-\")\n}",
		"source":     `allow if input.user.source.type == "scim"`,
		"api key":    `allow if input.request.api_key_id == "k1"`,
		"kinds":      "allow if {\n[id] := input.resource_ids\ninput.resources[id].integration_type == \"openai\"\n}",
		"deadline":   "allow if input.now < 1780315200000000000",
		"user keys":  "allow if {\nsome k, _ in input.user\nk == \"source\"\n}",
		"ids":        `allow if input.resource_ids[0] == "r1"`,
		"ordered":    `allow if input.user.email > "c"`,
		"counted":    "allow if count(input.user.resource_list) >= 2",
		"member":     `allow if input.request.api_key_id in {"k1"}`,
		"prefix of":  `allow if startswith("Adams", input.user.first)`,
		"active":     "allow if input.user.active == true",
		"kinds many": "allow if {\nsome id in input.resource_ids\ninput.resources[id].kind != \"dataset\"\n}",
	} {
		out["inline/"+name] = []policy.Module{{Name: "p.rego", Source: "package grantry.authz\n\n" + src + "\n\nallow_all if allow\n"}}
	}
	return out
}

// randomFacts draws a catalog, a user (or none), the user's groups and a question, from small
// pools, with some resources gone since they were granted.
func randomFacts(rng *rand.Rand) *view {
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	cat := &catalog{resources: map[string]*resource{}, sources: map[string]*source{}}
	var all []*resource
	for i := 1; i <= 5; i++ {
		kind := []storage.Kind{storage.KindModel, storage.KindFunction, storage.KindDataset}[i%3]
		r := newResource(storage.Resource{ID: fmt.Sprintf("r%d", i), Kind: kind, Name: fmt.Sprintf("%s-%d", kind, i), Source: []string{"custom", "openai"}[rng.IntN(2)]})
		r.num = uint32(5 - i) // numbered in another order than by id
		all = append(all, r)
		if rng.IntN(6) == 0 {
			r.gone.Store(true)
		} else {
			cat.resources[r.id] = r
		}
	}
	for _, typ := range []string{"import", "scim"} {
		s := newSource(storage.AuthIntegration{ID: "i-" + typ, Name: typ + " directory", Type: typ})
		cat.sources[s.id] = s
	}
	someGrants := func() grants {
		var list []grant
		for _, r := range all {
			if rng.IntN(2) == 0 {
				var exp int64
				switch rng.IntN(4) {
				case 0:
					exp = base.Add(-time.Hour).UnixNano()
				case 1:
					exp = base.Add(time.Hour).UnixNano()
				}
				list = append(list, grant{res: r, expires: exp})
			}
		}
		return grantsFrom(list)
	}
	q := &Question{OrgID: "o", UserID: "u", Now: base.Add(time.Duration(rng.IntN(3)-1) * 90 * time.Minute)}
	if rng.IntN(3) == 0 {
		q.APIKeyID = []string{"k1", "k2"}[rng.IntN(2)]
	}
	q.All = rng.IntN(2) == 0
	n := 1
	if q.All {
		n = rng.IntN(3)
	}
	for range n {
		q.ResourceIDs = append(q.ResourceIDs, fmt.Sprintf("r%d", 1+rng.IntN(6)))
	}
	var u *user
	var groups []*group
	if rng.IntN(8) != 0 {
		u = &user{id: fmt.Sprintf("u%d", rng.IntN(3)), email: []string{"ada@example.com", "eve@other.example"}[rng.IntN(2)],
			first: "Ada", last: "Lovelace", active: rng.IntN(5) != 0, grants: someGrants()}
		if rng.IntN(5) != 0 {
			u.source = cat.sources[[]string{"i-import", "i-scim"}[rng.IntN(2)]]
		}
		for _, k := range []string{"department", "tier"} {
			if rng.IntN(2) == 0 {
				u.attrs = append(u.attrs, attr{k, []string{"research", "premium", "sales"}[rng.IntN(3)]})
			}
		}
		for _, id := range []string{"g1", "g2", "g3"} {
			if rng.IntN(3) == 0 {
				u.groups = append(u.groups, id)
				var g *group
				if rng.IntN(6) != 0 {
					g = &group{name: map[string]string{"g1": "fn-tools", "g2": "admins", "g3": "team"}[id], grants: someGrants()}
				}
				groups = append(groups, g)
			}
		}
	}
	return newView(q, cat, u, groups)
}

// TestKeyIsTheReadsKey holds the engine's key and pruned input, written from the facts, to
// the ones the policy package defines over the whole input, for every policy and many facts.
func TestKeyIsTheReadsKey(t *testing.T) {
	for name, mods := range testPolicies(t) {
		t.Run(name, func(t *testing.T) {
			e, err := policy.New(context.Background(), mods)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(11, 3))
			for i := range 2000 {
				v := randomFacts(rng)
				r := e.Reads(v.q.All)
				in := v.input()
				if want, got := r.AppendKey(nil, in), appendKey(nil, r, v); !bytes.Equal(want, got) {
					t.Fatalf("draw %d: key\n got %q\nwant %q\ninput %v\nreads:\n%s", i, got, want, in, r)
				}
				if want, got := r.Prune(in), prune(r, v); ast.Compare(want, got) != 0 {
					t.Fatalf("draw %d: pruned input\n got %v\nwant %v\nreads:\n%s", i, got, want, r)
				}
			}
		})
	}
}
