package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage/bolt"
)

func mustABACModules(tb testing.TB) []policy.Module {
	tb.Helper()
	mods, err := abacModules()
	if err != nil {
		tb.Fatal(err)
	}
	return mods
}

// TestABACPolicyFolder: the folder the bench writes is one Grantry serves: its Rego tests, all
// of abac_test.rego, run and pass, and it loads as GRANTRY_POLICY_DIR is loaded.
func TestABACPolicyFolder(t *testing.T) {
	dir, err := writeABACPolicy(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mods, err := policy.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ran, failures, err := policy.RunTests(t.Context(), mods)
	if err != nil {
		t.Fatal(err)
	}
	if ran < 8 {
		t.Errorf("ran %d Rego tests, want every test of abac_test.rego", ran)
	}
	for _, f := range failures {
		t.Errorf("Rego test %s", f)
	}
	if _, err := policy.Load(t.Context(), mods); err != nil {
		t.Errorf("Grantry would not serve the folder: %v", err)
	}
}

// TestBenchRegoIsFormatted keeps the bench's own Rego files as `opa fmt` writes them.
func TestBenchRegoIsFormatted(t *testing.T) {
	files, err := filepath.Glob("*.rego")
	if err != nil || len(files) == 0 {
		t.Fatalf("the bench's Rego files: %v %v", files, err)
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		formatted, err := format.SourceWithOpts(name, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(string(formatted), string(src)); diff != "" {
			t.Errorf("%s is not opa fmt-clean (-want +got):\n%s", name, diff)
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

// TestABACRowAgainstGrantry drives Grantry's real router with the ABAC policy folder, on a store
// seeded as make bench seeds it, with the grantry-abac row's requests: every answer must be the
// one the load generator expects, refusals of granted datasets included.
func TestABACRowAgainstGrantry(t *testing.T) {
	s := seedSmall(t)
	store, err := bolt.Open(t.Context(), filepath.Join(s.dir, grantryDir, "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	engine, err := policy.New(t.Context(), mustABACModules(t))
	if err != nil {
		t.Fatal(err)
	}
	eng := authz.New(authz.Config{Store: store, Policies: policy.NewLive(engine)})
	srv := httptest.NewServer(api.New(api.Config{Store: eng.Store(), Decider: eng}))
	t.Cleanup(srv.Close)
	tg, err := newTarget(targetABAC, s.w)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, c := range s.w.Checks {
		if c.Granted && !s.w.abacAllows(c) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no granted check is refused by the ABAC policy; the test shows nothing")
	}
	allowed := slices.IndexFunc(s.w.Checks, s.w.abacAllows)
	c := newClient(srv.Listener.Addr().String(), s.key, false)
	defer c.close()
	status, answer, err := c.post("/provisions/can_user_access", nil, tg.ask(s.w.Checks[allowed], nil)[0].body)
	if err != nil || status != 200 {
		t.Fatalf("check %+v: %d %s, %v", s.w.Checks[allowed], status, answer, err)
	}
	if string(answer) == "false" {
		t.Fatalf("Grantry refuses check %+v, which the ABAC policy allows given the user's email and attributes", s.w.Checks[allowed])
	}
	g := &generator{target: tg, addrs: []string{srv.Listener.Addr().String()}, key: s.key, conns: 4}
	res := measureSome(t, g, 300*time.Millisecond)
	if res.Requests == 0 || res.Mismatches != 0 || res.Errors != 0 {
		t.Errorf("%d requests, %d wrong, %d errors (first: %s); want some, all right", res.Requests, res.Mismatches, res.Errors, res.FirstError)
	}
}
