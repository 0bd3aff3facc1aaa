package policy

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

// TestExplain: the shipped policy gives the cause of each kind of deny, and "granted" exactly
// when it allows.
func TestExplain(t *testing.T) {
	const res, other = "r-model", "r-other"
	resources := map[string][2]string{res: {"model", "gpt"}, other: {"model", "llama"}}
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	granted := user("u", true, map[string]grant{res: {name: "gpt"}}, nil)
	inactive := user("u", false, map[string]grant{res: {name: "gpt"}}, nil)
	expired := user("u", true, map[string]grant{res: {name: "gpt", expires: now}}, nil)
	member := user("u", true, nil, map[string]group{"g-1": {name: "Engineering", grants: map[string]grant{res: {name: "gpt", expires: now.Add(time.Nanosecond)}}}})
	tests := []struct {
		name        string
		in          ast.Value
		wantAllowed bool
		wantReasons []string
	}{
		{"granted", input(t, granted, []string{res}, resources, time.Time{}), true, []string{"granted"}},
		{"unknown user", input(t, nil, []string{res}, resources, time.Time{}), false, []string{"unknown user"}},
		{"inactive user", input(t, inactive, []string{res}, resources, time.Time{}), false, []string{"inactive user"}},
		{"unknown resource", input(t, granted, []string{"r-gone"}, resources, time.Time{}), false, []string{"unknown resource"}},
		{"grant outlived its resource", input(t, granted, []string{res}, nil, time.Time{}), false, []string{"unknown resource"}},
		{"not granted", input(t, granted, []string{other}, resources, time.Time{}), false, []string{"not granted"}},
		{"inactive and not granted", input(t, inactive, []string{other}, resources, time.Time{}), false, []string{"inactive user", "not granted"}},
		{"expired", input(t, expired, []string{res}, resources, now), false, []string{"expired"}},
		{"granted via a group", input(t, member, []string{res}, resources, now), true, []string{"granted", "granted via group Engineering"}},
		{"group grant expired", input(t, member, []string{res}, resources, now.Add(time.Nanosecond)), false, []string{"expired"}},
	}
	e := mustEngine(t, Embedded())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Explain(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			want := Explanation{Allowed: tc.wantAllowed, Reasons: tc.wantReasons, Revision: e.Revision()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExplainCustomPolicies: a policy explains itself with whatever its reasons rule says; one
// without the rule, or with a rule of another shape, explains with an empty list, not an error.
func TestExplainCustomPolicies(t *testing.T) {
	in := input(t, user("u", true, nil, nil), []string{"r"}, map[string][2]string{"r": {"model", ""}}, time.Time{})
	tests := []struct {
		name        string
		rules       string
		wantAllowed bool
		wantReasons []string
		wantErr     bool
	}{
		{"no reasons rule", "allow := true\nallow_all := true", true, []string{}, false},
		{"own reasons", "allow := false\nallow_all := false\nreasons contains \"closed for maintenance\" if true\nreasons contains \"b\" if true", false, []string{"b", "closed for maintenance"}, false},
		{"reasons not a set of strings", "allow := false\nallow_all := false\nreasons := 42", false, []string{}, false},
		{"non-strings left out", "allow := false\nallow_all := false\nreasons := {1, \"kept\"}", false, []string{"kept"}, false},
		{"allow cannot be evaluated", "allow if { 1 / 0 }\nallow_all := false", false, []string{ReasonEvaluationFailed}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, []Module{{"p.rego", "package grantry.authz\n" + tc.rules}})
			got, err := e.Explain(context.Background(), in)
			if (err != nil) != tc.wantErr {
				t.Errorf("Explain error = %v, want error: %v", err, tc.wantErr)
			}
			want := Explanation{Allowed: tc.wantAllowed, Reasons: tc.wantReasons, Revision: e.Revision()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
		})
	}
}
