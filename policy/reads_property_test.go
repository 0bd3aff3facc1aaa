package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// TestReadsAreWhatDecides holds the analysis to what it promises, over random inputs of the
// shape Grantry builds: for every bounded rule of every policy below, inputs with the same key
// get the same answer, and the pruned input gets the answer of the whole one. The inputs are
// drawn from small pools, so that many share a key.
func TestReadsAreWhatDecides(t *testing.T) {
	policies := map[string][]Module{"shipped": Embedded()}
	for _, dir := range []string{"../testdata/policies", "../examples/policies"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			mods, err := LoadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			policies[filepath.Base(dir)+"/"+e.Name()] = mods
		}
	}
	ctx := context.Background()
	for name, mods := range policies {
		t.Run(name, func(t *testing.T) {
			e, err := New(ctx, mods)
			if err != nil {
				t.Fatal(err)
			}
			for _, all := range []bool{false, true} {
				r := e.Reads(all)
				if !r.Bounded() {
					continue
				}
				q := e.allow
				if all {
					q = e.allowAll
				}
				checkReads(t, q, r, all)
			}
		})
	}
}

func checkReads(t *testing.T, q rego.PreparedEvalQuery, r *Reads, all bool) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, uint64(len(r.String()))))
	byKey := map[string]bool{}
	firstOf := map[string]ast.Value{}
	allowed := 0
	const n = 3000
	for range n {
		in := randomInput(rng, all)
		got, err := decide(ctx, q, in)
		if err != nil {
			t.Fatalf("evaluate %v: %v", in, err)
		}
		if got {
			allowed++
		}
		pruned, err := decide(ctx, q, r.Prune(in))
		if err != nil {
			t.Fatalf("evaluate pruned %v: %v", r.Prune(in), err)
		}
		if pruned != got {
			t.Fatalf("all=%v: the pruned input answers %v, the whole one %v\nwhole:  %v\npruned: %v\nreads:\n%s", all, pruned, got, in, r.Prune(in), r)
		}
		key := string(r.AppendKey(nil, in))
		if want, ok := byKey[key]; ok && want != got {
			t.Fatalf("all=%v: two inputs of one key answered differently\n%v: %v\n%v: %v\nreads:\n%s", all, firstOf[key], want, in, got, r)
		}
		byKey[key], firstOf[key] = got, in
	}
	t.Logf("all=%v: %d inputs, %d keys, %d allowed", all, n, len(byKey), allowed)
}

var (
	poolResources = []string{"r1", "r2", "r3", "r4"}
	poolKinds     = []string{"model", "function", "dataset"}
	poolEmails    = []string{"ada@example.com", "bob@example.com", "eve@other.example"}
	poolGroups    = []string{"g1", "g2", "g3"}
	poolGroupName = map[string]string{"g1": "fn-tools", "g2": "admins", "g3": "team"}
	poolAttrs     = map[string][]string{"department": {"research", "sales"}, "tier": {"premium", "basic"}, "suspended": {"true", "false"}}
	baseNow       = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
)

// randomInput draws an input of the shape Grantry builds, from small pools.
func randomInput(rng *rand.Rand, all bool) ast.Value {
	now := baseNow.Add(time.Duration(rng.IntN(3)-1) * time.Hour)
	expiry := func() *ast.Term {
		switch rng.IntN(4) {
		case 0:
			return nanosTerm(baseNow.Add(-30 * time.Minute))
		case 1:
			return nanosTerm(baseNow.Add(30 * time.Minute))
		}
		return nil
	}
	name := func(id string) string { return poolKinds[int(id[1]-'1')%3] + "-" + id }
	grants := func() *ast.Term {
		obj := ast.NewObject()
		for _, id := range poolResources {
			if rng.IntN(2) == 0 {
				g := ast.NewObject(ast.Item(ast.StringTerm("name"), ast.StringTerm(name(id))))
				if e := expiry(); e != nil {
					g.Insert(ast.StringTerm("expires_at"), e)
				}
				obj.Insert(ast.StringTerm(id), ast.NewTerm(g))
			}
		}
		return ast.NewTerm(obj)
	}
	in := ast.NewObject()
	if rng.IntN(8) != 0 {
		groups := ast.NewObject()
		for _, g := range poolGroups {
			if rng.IntN(3) == 0 {
				groups.Insert(ast.StringTerm(g), ast.ObjectTerm(
					ast.Item(ast.StringTerm("name"), ast.StringTerm(poolGroupName[g])),
					ast.Item(ast.StringTerm("resource_list"), grants())))
			}
		}
		attrs := ast.NewObject()
		for k, vs := range poolAttrs {
			if rng.IntN(2) == 0 {
				attrs.Insert(ast.StringTerm(k), ast.StringTerm(vs[rng.IntN(len(vs))]))
			}
		}
		source := []string{"import", "scim"}[rng.IntN(2)]
		in.Insert(ast.StringTerm("user"), ast.ObjectTerm(
			ast.Item(ast.StringTerm("id"), ast.StringTerm(fmt.Sprintf("u%d", rng.IntN(3)))),
			ast.Item(ast.StringTerm("active"), ast.BooleanTerm(rng.IntN(5) != 0)),
			ast.Item(ast.StringTerm("email"), ast.StringTerm(poolEmails[rng.IntN(len(poolEmails))])),
			ast.Item(ast.StringTerm("first"), ast.StringTerm("Ada")),
			ast.Item(ast.StringTerm("last"), ast.StringTerm("Lovelace")),
			ast.Item(ast.StringTerm("source"), ast.ObjectTerm(
				ast.Item(ast.StringTerm("id"), ast.StringTerm("i-"+source)),
				ast.Item(ast.StringTerm("name"), ast.StringTerm(source+" directory")),
				ast.Item(ast.StringTerm("type"), ast.StringTerm(source)))),
			ast.Item(ast.StringTerm("attributes"), ast.NewTerm(attrs)),
			ast.Item(ast.StringTerm("resource_list"), grants()),
			ast.Item(ast.StringTerm("groups"), ast.NewTerm(groups)),
		))
	}
	n := 1
	if all {
		n = rng.IntN(3)
	}
	ids := make([]*ast.Term, n)
	resources := ast.NewObject()
	for i := range ids {
		id := append(poolResources, "r9")[rng.IntN(len(poolResources)+1)]
		ids[i] = ast.StringTerm(id)
		if id != "r9" {
			integration := []string{"custom", "openai"}[rng.IntN(2)]
			resources.Insert(ids[i], ast.ObjectTerm(
				ast.Item(ast.StringTerm("kind"), ast.StringTerm(poolKinds[int(id[1]-'1')%3])),
				ast.Item(ast.StringTerm("name"), ast.StringTerm(name(id))),
				ast.Item(ast.StringTerm("integration_type"), ast.StringTerm(integration))))
		}
	}
	in.Insert(keyResourceIDs, ast.ArrayTerm(ids...))
	in.Insert(keyResources, ast.NewTerm(resources))
	in.Insert(keyNow, nanosTerm(now))
	in.Insert(ast.StringTerm("request"), ast.ObjectTerm(
		ast.Item(ast.StringTerm("api_key_id"), ast.StringTerm([]string{"k1", "k2"}[rng.IntN(2)]))))
	return in
}
