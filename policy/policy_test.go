package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
)

// TestRegoUnitTests runs authz_test.rego, so that `make test` needs no opa binary.
func TestRegoUnitTests(t *testing.T) {
	ran, failures, err := RunTests(context.Background(), Embedded())
	if err != nil {
		t.Fatal(err)
	}
	if ran < 10 {
		t.Errorf("ran %d Rego tests, want the whole of authz_test.rego", ran)
	}
	for _, f := range failures {
		t.Errorf("Rego test %s", f)
	}
}

// TestDecisions checks the shipped policy against the decision table in testdata. A user's
// grants name each resource granted; "expires" gives the expiry of those that expire; groups
// hold grants in the same shape; "now" is the time of the request.
func TestDecisions(t *testing.T) {
	type jsonGrants struct {
		Grants  map[string]string    `json:"grants"`
		Expires map[string]time.Time `json:"expires"`
	}
	grantsOf := func(g jsonGrants) map[string]grant {
		out := make(map[string]grant, len(g.Grants))
		for id, name := range g.Grants {
			out[id] = grant{name: name, expires: g.Expires[id]}
		}
		return out
	}
	type jsonInput struct {
		User *struct {
			ID     string `json:"id"`
			Active bool   `json:"active"`
			jsonGrants
			Groups map[string]struct {
				Name string `json:"name"`
				jsonGrants
			} `json:"groups"`
		} `json:"user"`
		ResourceIDs []string `json:"resource_ids"`
		Resources   map[string]struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"resources"`
		Now time.Time `json:"now"`
	}
	var cases []struct {
		Name     string    `json:"name"`
		Input    jsonInput `json:"input"`
		Allow    bool      `json:"allow"`
		AllowAll bool      `json:"allow_all"`
	}
	raw, err := os.ReadFile("../testdata/policy/decisions.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	e := mustEngine(t, Embedded())
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			var u map[string]any
			if ju := tc.Input.User; ju != nil {
				groups := map[string]group{}
				for id, g := range ju.Groups {
					groups[id] = group{name: g.Name, grants: grantsOf(g.jsonGrants)}
				}
				u = user(ju.ID, ju.Active, grantsOf(ju.jsonGrants), groups)
			}
			resources := map[string][2]string{}
			for id, r := range tc.Input.Resources {
				resources[id] = [2]string{r.Kind, r.Name}
			}
			in := input(t, u, tc.Input.ResourceIDs, resources, tc.Input.Now)
			allow, err := e.Decide(ctx, false, in)
			if err != nil || allow != tc.Allow {
				t.Errorf("allow = %v, %v; want %v", allow, err, tc.Allow)
			}
			all, err := e.Decide(ctx, true, in)
			if err != nil || all != tc.AllowAll {
				t.Errorf("allow_all = %v, %v; want %v", all, err, tc.AllowAll)
			}
		})
	}
}

func TestNewRejectsBadPolicies(t *testing.T) {
	tests := []struct {
		name    string
		modules []Module
		want    string
	}{
		{"syntax error", []Module{{"p.rego", "package grantry.authz\nallow if {"}}, "parse policy"},
		{"compile error", []Module{{"p.rego", "package grantry.authz\nallow if { x }\nallow_all := false"}}, "compile policy"},
		{"no allow_all", []Module{{"p.rego", "package grantry.authz\nallow := false"}}, "does not define data.grantry.authz.allow_all"},
		{"wrong package", []Module{{"p.rego", "package other\nallow := true\nallow_all := true"}}, "data.grantry.authz.allow and data.grantry.authz.allow_all"},
		{"only tests", []Module{{"p_test.rego", "package grantry.authz_test\ntest_x if { true }"}}, "no policy modules"},
		{"nothing", nil, "no policy modules"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(context.Background(), tc.modules)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestFailsClosed shows that anything but the boolean true denies.
func TestFailsClosed(t *testing.T) {
	tests := []struct {
		name    string
		rules   string
		wantErr bool
	}{
		{"string result", `allow := "true"` + "\n" + `allow_all := "yes"`, false},
		{"undefined result", "allow if { input.nothing }\nallow_all if { input.nothing }", false},
		{"set result", "allow contains 1 if { true }\nallow_all contains 1 if { true }", false},
		{"runtime error", "allow if { 1 / 0 }\nallow_all if { to_number(\"x\") }", true},
	}
	in := input(t, user("u", true, map[string]grant{"r": {name: "n"}}, nil), []string{"r"}, map[string][2]string{"r": {"model", "n"}}, time.Time{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, []Module{{"p.rego", "package grantry.authz\n" + tc.rules}})
			for name, all := range map[string]bool{"allow": false, "allow_all": true} {
				got, err := e.Decide(context.Background(), all, in)
				if got || (err != nil) != tc.wantErr {
					t.Errorf("%s = %v, %v; want false and error=%v", name, got, err, tc.wantErr)
				}
			}
		})
	}
}

// TestDeadlineStopsEvaluation checks that a policy that would run for minutes stops, and
// denies, when the request's context ends.
func TestDeadlineStopsEvaluation(t *testing.T) {
	slow := "count([x | some x in numbers.range(1, 1000000000)]) > 0"
	e := mustEngine(t, []Module{{"p.rego", "package grantry.authz\nallow if { " + slow + " }\nallow_all if { " + slow + " }"}})
	for name, all := range map[string]bool{"allow": false, "allow_all": true} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		got, err := e.Decide(ctx, all, input(t, nil, []string{"r"}, nil, time.Time{}))
		cancel()
		if got || err == nil {
			t.Errorf("%s = %v, %v; want false and an error", name, got, err)
		}
		// Run to its end, the policy would take minutes; the bound leaves a loaded machine room.
		if elapsed := time.Since(start); elapsed > 30*time.Second {
			t.Errorf("%s stopped after %v, long after its deadline", name, elapsed)
		}
	}
}

func TestRunTestsReportsFailures(t *testing.T) {
	mods := []Module{
		{"p.rego", "package grantry.authz\nallow := false\nallow_all := false"},
		{"p_test.rego", "package grantry.authz_test\nimport data.grantry.authz\ntest_pass if { not authz.allow }\ntest_fail if { authz.allow }"},
	}
	ran, failures, err := RunTests(context.Background(), mods)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 2 || len(failures) != 1 || failures[0].Name != "data.grantry.authz_test.test_fail" {
		t.Errorf("RunTests = %d ran, failures %v; want 2 ran and test_fail failing", ran, failures)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"authz.rego":       "package grantry.authz\nallow := false\nallow_all := false",
		"lib/helpers.rego": "package grantry.lib\nx := 1",
		"authz_test.rego":  "package grantry.authz_test\ntest_x if { true }",
		"README.md":        "not rego",
		"lib/data.json":    "{}",
	}
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
		if m.Source != files[m.Name] {
			t.Errorf("module %s source = %q, want %q", m.Name, m.Source, files[m.Name])
		}
	}
	if diff := cmp.Diff([]string{"authz.rego", "authz_test.rego", "lib/helpers.rego"}, names); diff != "" {
		t.Errorf("module names (-want +got):\n%s", diff)
	}
	if _, err := LoadDir(t.TempDir()); err == nil {
		t.Error("LoadDir of an empty folder succeeded, want an error")
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadDir of a missing folder succeeded, want an error")
	}
}

func TestRevision(t *testing.T) {
	a := Module{"a.rego", "package a"}
	b := Module{"b.rego", "package b"}
	if Revision([]Module{a, b}) != Revision([]Module{b, a}) {
		t.Error("revision depends on module order")
	}
	changed := Module{"b.rego", "package b\n"}
	if Revision([]Module{a, b}) == Revision([]Module{a, changed}) {
		t.Error("revision did not change with the source")
	}
	renamed := Module{"c.rego", "package b"}
	if Revision([]Module{a, b}) == Revision([]Module{a, renamed}) {
		t.Error("revision did not change with a module name")
	}
	if got := mustEngine(t, Embedded()).Revision(); got != Revision(Embedded()) || len(got) != 64 {
		t.Errorf("engine revision = %q, want the sha256 of the embedded modules", got)
	}
}

func mustEngine(tb testing.TB, mods []Module) *Engine {
	tb.Helper()
	e, err := New(context.Background(), mods)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// benchInput asks about r00007 (granted) or r99999 (not granted), which exists, of a user who
// holds grants grants.
func benchInput(tb testing.TB, grants int, granted bool) ast.Value {
	own := make(map[string]grant, grants)
	for i := range grants {
		own[fmt.Sprintf("r%05d", i)] = grant{name: "name"}
	}
	id := "r99999"
	if granted {
		id = "r00007"
	}
	return input(tb, user("u", true, own, nil), []string{id}, map[string][2]string{id: {"model", "name"}}, time.Now())
}

// BenchmarkDecide is the evaluation of allow over the whole input of a user of n grants.
func BenchmarkDecide(b *testing.B) {
	e := mustEngine(b, Embedded())
	for _, n := range []int{50, 5000} {
		for _, granted := range []bool{true, false} {
			in := benchInput(b, n, granted)
			b.Run(fmt.Sprintf("grants=%d/granted=%v", n, granted), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if ok, err := e.Decide(context.Background(), false, in); ok != granted || err != nil {
						b.Fatal(ok, err)
					}
				}
			})
		}
	}
}

// TestEmbeddedPolicyIsFormatted keeps the shipped Rego as `opa fmt` writes it.
func TestEmbeddedPolicyIsFormatted(t *testing.T) {
	for _, m := range Embedded() {
		formatted, err := format.SourceWithOpts(m.Name, []byte(m.Source), format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if diff := cmp.Diff(string(formatted), m.Source); diff != "" {
			t.Errorf("%s is not opa fmt-clean (-want +got):\n%s", m.Name, diff)
		}
	}
}
