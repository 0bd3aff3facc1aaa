package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/grantry/grantry/policy"
)

func mustABACModules(tb testing.TB) []policy.Module {
	tb.Helper()
	mods, err := abacModules()
	if err != nil {
		tb.Fatal(err)
	}
	return mods
}

// TestABACRegoTests runs abac_test.rego over the ABAC policy and the shipped rules.
func TestABACRegoTests(t *testing.T) {
	ran, failures, err := policy.RunTests(t.Context(), mustABACModules(t))
	if err != nil {
		t.Fatal(err)
	}
	if ran < 8 {
		t.Errorf("ran %d Rego tests, want every test of abac_test.rego", ran)
	}
	for _, f := range failures {
		t.Errorf("Rego test %s", f)
	}
}

// TestABACPolicyFolder: the folder the bench writes is one Grantry serves: it loads, its tests
// pass, it defines what Grantry asks, and it holds the shipped rules as the binary has them.
func TestABACPolicyFolder(t *testing.T) {
	dir, err := writeABACPolicy(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mods, err := policy.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, err := policy.Test(t.Context(), mods)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed {
			t.Errorf("Rego test %s failed: %v", r.Name, r.Err)
		}
	}
	if _, err := policy.New(t.Context(), mods); err != nil {
		t.Errorf("Grantry would not serve the folder: %v", err)
	}
	shipped, err := os.ReadFile(filepath.Join(dir, "shipped.rego"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range policy.Embedded() {
		if !m.IsTest() && strings.Replace(string(shipped), "package grantry.shipped", "package grantry.authz", 1) != m.Source {
			t.Errorf("shipped.rego is not the shipped %s under another package", m.Name)
		}
	}
}

// TestBenchRegoIsFormatted keeps the bench's own policies as `opa fmt` writes them.
func TestBenchRegoIsFormatted(t *testing.T) {
	mods := append(mustABACModules(t)[1:], policy.Module{Name: "light.rego", Source: lightRego})
	for _, m := range mods {
		formatted, err := format.SourceWithOpts(m.Name, []byte(m.Source), format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if diff := cmp.Diff(string(formatted), m.Source); diff != "" {
			t.Errorf("%s is not opa fmt-clean (-want +got):\n%s", m.Name, diff)
		}
	}
}

// abacInput is the input Grantry gives its policy for a check of c (docs: the policy input),
// with the user's email and attributes as seeded.
func abacInput(w *workload, c pair) map[string]any {
	grants := map[string]any{}
	for _, r := range w.userGrants(int(c.User)) {
		grants[w.ResourceIDs[r]] = map[string]any{"name": resourceName(int(r))}
	}
	id := w.ResourceIDs[c.Resource]
	return map[string]any{
		"user": map[string]any{
			"id": userID(int(c.User)), "active": true, "email": userEmail(int(c.User)),
			"first": "Bench", "last": userID(int(c.User)),
			"attributes":    map[string]any{"department": w.department(int(c.User))},
			"resource_list": grants, "groups": map[string]any{},
		},
		"resource_ids": []any{id},
		"resources": map[string]any{id: map[string]any{
			"kind": resourceKind(int(c.Resource)), "name": resourceName(int(c.Resource)), "integration_type": "custom",
		}},
		"now": 1.7e18,
	}
}

// TestABACExpectationsFollowThePolicy evaluates the ABAC policy on the input of each of the
// workload's checks and holds it to the answer the load generator expects of the grantry-abac
// row (workload.abacAllows): granted and allowed, granted but refused by an attribute, and not
// granted must all be there.
func TestABACExpectationsFollowThePolicy(t *testing.T) {
	var mods []func(*rego.Rego)
	for _, m := range mustABACModules(t) {
		if !m.IsTest() {
			mods = append(mods, rego.Module(m.Name, m.Source))
		}
	}
	pq, err := rego.New(append(mods, rego.Query(policy.AllowQuery), rego.SetRegoVersion(ast.RegoV1))...).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	w := mustWorkload(t, smallParams())
	seen := map[string]int{}
	for _, c := range w.Checks {
		rs, err := pq.Eval(t.Context(), rego.EvalInput(abacInput(w, c)))
		if err != nil {
			t.Fatal(err)
		}
		allowed := len(rs) == 1 && rs[0].Expressions[0].Value == true
		if want := w.abacAllows(c); allowed != want {
			t.Fatalf("check %+v (user in %s, a %s): the ABAC policy answers %v, the load generator expects %v",
				c, w.department(int(c.User)), resourceKind(int(c.Resource)), allowed, want)
		}
		switch {
		case allowed:
			seen["allowed"]++
		case c.Granted:
			seen["granted, refused by an attribute"]++
		default:
			seen["not granted"]++
		}
	}
	for _, kind := range []string{"allowed", "granted, refused by an attribute", "not granted"} {
		if seen[kind] == 0 {
			t.Errorf("no check was %s; the test needs every kind (%v)", kind, seen)
		}
	}
}
