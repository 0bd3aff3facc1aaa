package policy

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestExplain: the shipped policy gives the cause of each kind of deny, and "granted" exactly
// when it allows.
func TestExplain(t *testing.T) {
	const res, other = "r-model", "r-other"
	resources := map[string]Resource{res: {Kind: "model", Name: "gpt"}, other: {Kind: "model", Name: "llama"}}
	granted := &User{ID: "u", Active: true, Grants: map[string]Grant{res: {Name: "gpt"}}}
	inactive := &User{ID: "u", Active: false, Grants: map[string]Grant{res: {Name: "gpt"}}}
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	expired := &User{ID: "u", Active: true, Grants: map[string]Grant{res: {Name: "gpt", ExpiresAt: now}}}
	member := &User{ID: "u", Active: true, Groups: map[string]Group{"g-1": {Name: "Engineering", Grants: map[string]Grant{res: {Name: "gpt", ExpiresAt: now.Add(time.Nanosecond)}}}}}
	tests := []struct {
		name        string
		in          Input
		wantAllowed bool
		wantReasons []string
	}{
		{"granted", Input{User: granted, ResourceIDs: []string{res}, Resources: resources}, true, []string{"granted"}},
		{"unknown user", Input{ResourceIDs: []string{res}, Resources: resources}, false, []string{"unknown user"}},
		{"inactive user", Input{User: inactive, ResourceIDs: []string{res}, Resources: resources}, false, []string{"inactive user"}},
		{"unknown resource", Input{User: granted, ResourceIDs: []string{"r-gone"}, Resources: resources}, false, []string{"unknown resource"}},
		{"grant outlived its resource", Input{User: granted, ResourceIDs: []string{res}, Resources: map[string]Resource{}}, false, []string{"unknown resource"}},
		{"not granted", Input{User: granted, ResourceIDs: []string{other}, Resources: resources}, false, []string{"not granted"}},
		{"inactive and not granted", Input{User: inactive, ResourceIDs: []string{other}, Resources: resources}, false, []string{"inactive user", "not granted"}},
		{"expired", Input{User: expired, ResourceIDs: []string{res}, Resources: resources, Now: now}, false, []string{"expired"}},
		{"granted via a group", Input{User: member, ResourceIDs: []string{res}, Resources: resources, Now: now}, true, []string{"granted", "granted via group Engineering"}},
		{"group grant expired", Input{User: member, ResourceIDs: []string{res}, Resources: resources, Now: now.Add(time.Nanosecond)}, false, []string{"expired"}},
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
	in := Input{User: &User{ID: "u", Active: true}, ResourceIDs: []string{"r"}, Resources: map[string]Resource{"r": {Kind: "model"}}}
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
