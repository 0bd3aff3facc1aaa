package policy

import (
	"testing"
	"time"
)

// TestSharedTermsReadAsLiterals checks that a resource made by NewResource, and grants made
// from it, give the policy the same input as the plain structs they stand for.
func TestSharedTermsReadAsLiterals(t *testing.T) {
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	model := NewResource("model", "gpt")
	tests := []struct {
		name            string
		shared, literal Input
	}{
		{
			"never expires",
			Input{User: &User{ID: "u", Active: true, Grants: map[string]Grant{"r": model.Grant(time.Time{})}}, ResourceIDs: []string{"r"}, Resources: map[string]Resource{"r": model}},
			Input{User: &User{ID: "u", Active: true, Grants: map[string]Grant{"r": {Name: "gpt"}}}, ResourceIDs: []string{"r"}, Resources: map[string]Resource{"r": {Kind: "model", Name: "gpt"}}},
		},
		{
			"expires",
			Input{User: &User{ID: "u", Grants: map[string]Grant{"r": model.Grant(expiry)}}, ResourceIDs: []string{"r"}},
			Input{User: &User{ID: "u", Grants: map[string]Grant{"r": {Name: "gpt", ExpiresAt: expiry}}}, ResourceIDs: []string{"r"}},
		},
		{
			"through a group",
			Input{User: &User{ID: "u", Groups: map[string]Group{"g": {Name: "team", Grants: map[string]Grant{"r": model.Grant(time.Time{})}}}}, ResourceIDs: []string{"r"}},
			Input{User: &User{ID: "u", Groups: map[string]Group{"g": {Name: "team", Grants: map[string]Grant{"r": {Name: "gpt"}}}}}, ResourceIDs: []string{"r"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tc.shared.value(), tc.literal.value(); got.Compare(want) != 0 {
				t.Errorf("input = %v, want %v", got, want)
			}
		})
	}
	if g := model.Grant(expiry); g.term != nil {
		t.Error("an expiring grant shares the resource's never-expiring value")
	}
}
