package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// readsOf compiles the policy modules and returns what data.grantry.authz.allow reads, and
// the query of it prepared.
func readsOf(tb testing.TB, sources ...string) (*Reads, rego.PreparedEvalQuery) {
	tb.Helper()
	mods := map[string]*ast.Module{}
	for i, src := range sources {
		name := string(rune('a'+i)) + ".rego"
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			tb.Fatal(err)
		}
		mods[name] = m
	}
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if c.Compile(mods); c.Failed() {
		tb.Fatal(c.Errors)
	}
	q, err := rego.New(rego.Compiler(c), rego.Query(AllowQuery), rego.StrictBuiltinErrors(true)).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return analyseReads(c, ast.MustParseRef(AllowQuery)), q
}

const header = "package grantry.authz\n\n"

// TestReads holds the analysis to what each policy reads: the places listed (besides
// input.resource_ids, which every key holds), or why it cannot bound them; and each bounded
// one to deciding alike the inputs of one key, and the pruned input as the whole one.
func TestReads(t *testing.T) {
	cases := []struct {
		name   string
		policy []string
		want   []string // the places read, as Reads.String shows them
		why    string   // a part of Why; empty when bounded
	}{
		{"constant", []string{header + "allow := true"}, nil, ""},
		{"email", []string{header + `allow if endswith(input.user.email, "@example.com")`},
			[]string{`input.user.email endswith/0 "@example.com"`}, ""},
		{"attribute compared", []string{header + `allow if input.user.attributes.department == "research"`},
			[]string{`input.user.attributes.department equal/0 "research"`}, ""},
		{"attribute through a built-in", []string{header + `allow if object.get(input.user.attributes, "department", "") == "research"`},
			[]string{"input.user.attributes whole"}, ""},
		{"negated attribute", []string{header + `allow if not input.user.attributes.blocked`},
			[]string{"input.user.attributes.blocked truthy"}, ""},
		{"user exists", []string{header + `allow if input.user`}, []string{"input.user truthy"}, ""},
		{"asked grant", []string{header + "allow if {\n[id] := input.resource_ids\ninput.user.resource_list[id]\n}"},
			[]string{"input.user.resource_list[asked] truthy"}, ""},
		{"every asked resource", []string{header + "allow if {\ncount(input.resource_ids) > 0\nevery id in input.resource_ids { input.resources[id].kind == \"model\" }\n}"},
			[]string{`input.resources[asked].kind equal/0 "model"`}, ""},
		{"groups' names", []string{header + "allow if {\nsome g in input.user.groups\nstartswith(g.name, \"fn-\")\n}"},
			[]string{`input.user.groups[_].name startswith/0 "fn-"`}, ""},
		{"counted grants", []string{header + "allow if count(input.user.resource_list) > 3"},
			[]string{"input.user.resource_list count"}, ""},
		{"iterated grants", []string{header + "allow if {\nsome id, g in input.user.resource_list\nstartswith(g.name, \"model-\")\ninput.resources[id]\n}"},
			[]string{"input.resources[_] truthy", `input.user.resource_list[_].name startswith/0 "model-"`}, ""},
		{"API key", []string{header + `allow if input.request.api_key_id in {"k1", "k2"}`},
			[]string{`input.request.api_key_id member/0 {"k1", "k2"}`}, ""},
		{"rule's value aliased", []string{header + "u := input.user\n\nallow if u.email == \"a@example.com\""},
			[]string{`input.user.email equal/0 "a@example.com"`}, ""},
		{"function's value aliased", []string{header + "grants(u) := u.resource_list\n\nallow if {\n[id] := input.resource_ids\nx := grants(input.user)\nx[id]\n}"},
			[]string{"input.user.resource_list[asked] truthy"}, ""},
		{"function's argument read", []string{header + "live(g) if g.expires_at > input.now\n\nallow if {\n[id] := input.resource_ids\nlive(input.user.resource_list[id])\n}"},
			[]string{"input.now defined", "input.user.resource_list[asked].expires_at now"}, ""},
		{"rule of another package", []string{header + "allow if data.lib.ok", "package lib\n\nok if input.user.email == \"a\""},
			[]string{`input.user.email equal/0 "a"`}, ""},
		{"a package as a whole", []string{header + "allow if count(data.lib) > 0", "package lib\n\nok if input.user.first == \"a\""},
			[]string{`input.user.first equal/0 "a"`}, ""},
		{"time against a constant", []string{header + "allow if input.now < 1893456000000000000"},
			[]string{"input.now defined", "input.now vs 1893456000000000000"}, ""},
		{"time against a grant", []string{header + "allow if {\n[id] := input.resource_ids\ninput.now < input.user.resource_list[id].expires_at\n}"},
			[]string{"input.now defined", "input.user.resource_list[asked].expires_at now"}, ""},
		{"the whole input", []string{header + `allow if json.marshal(input) != ""`}, nil, "whole input"},
		{"input bound and used whole", []string{header + "allow if {\nx := input\njson.marshal(x) != \"\"\n}"}, nil, "whole input"},
		{"input counted", []string{header + "allow if {\nx := input\ncount(x) > 2\n}"}, []string{"input count"}, ""},
		{"email compared with another place", []string{header + "allow if input.user.email == input.user.first"},
			[]string{"input.user.email whole", "input.user.first whole"}, ""},
		{"a probe and a whole read", []string{header + "allow if {\nendswith(input.user.email, \"@example.com\")\ncount(input.user.email) > 3\nlower(input.user.email) != \"x\"\n}"},
			[]string{"input.user.email whole"}, ""},
		{"a constant starting with the place", []string{header + "allow if startswith(\"fn-tools\", input.user.attributes.prefix)"},
			[]string{`input.user.attributes.prefix startswith/1 "fn-tools"`}, ""},
		{"walk", []string{header + "allow if {\nwalk(input, [p, v])\nv == \"x\"\n}"}, nil, "whole input"},
		{"clock", []string{header + "allow if {\n[h, _, _] := time.clock(input.now)\nh > 8\n}"}, nil, "input.now"},
		{"time arithmetic", []string{header + "allow if input.now + 10 > 5"}, nil, "input.now"},
		{"time against a computed value", []string{header + `allow if input.now > time.parse_rfc3339_ns("2026-01-01T00:00:00Z")`}, nil, "computed"},
		{"now_ns", []string{header + "allow if time.now_ns() > 0"}, nil, "time.now_ns"},
		{"rand", []string{header + "allow if rand.intn(\"x\", 2) == 0"}, nil, "rand.intn"},
		{"http.send", []string{header + `allow if http.send({"method": "GET", "url": "http://localhost/"}).status_code == 200`}, nil, "http.send"},
		{"with", []string{header + "p if input.user.active\n\nallow if p with input.user.active as true"}, nil, "with"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, q := readsOf(t, tc.policy...)
			if tc.why != "" {
				if r.Bounded() || !strings.Contains(r.Why(), tc.why) {
					t.Fatalf("Why() = %q, want it to say %q\n%s", r.Why(), tc.why, r)
				}
				return
			}
			if !r.Bounded() {
				t.Fatalf("unbounded: %s", r.Why())
			}
			var got []string
			for line := range strings.Lines(r.String()) {
				if line = strings.TrimSpace(line); line != "input.resource_ids whole" {
					got = append(got, line)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("places read (-want +got):\n%s", diff)
			}
			checkReads(t, q, r, false)
		})
	}
}

// TestShippedPolicyReads: the shipped policy's allow and allow_all read, of a question, only the
// grants of the resources asked about, the user's active flag, and whether those resources
// exist; the time only through the grants' expiries.
func TestShippedPolicyReads(t *testing.T) {
	e, err := New(context.Background(), Embedded())
	if err != nil {
		t.Fatal(err)
	}
	want := `input.now defined
input.resource_ids whole
input.resources[asked] truthy
input.user.active equal/0 true
input.user.groups[_].resource_list[asked].expires_at truthy,now
input.user.resource_list[asked].expires_at truthy,now
`
	for _, all := range []bool{false, true} {
		r := e.Reads(all)
		if !r.Bounded() {
			t.Fatalf("all=%v: unbounded: %s", all, r.Why())
		}
		if diff := cmp.Diff(want, r.String()); diff != "" {
			t.Errorf("all=%v: (-want +got):\n%s", all, diff)
		}
	}
}
