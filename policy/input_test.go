package policy

import (
	"testing"
	"time"
)

// TestSharedTermsReadAsLiterals checks that a resource made by NewResource, and grants made
// from it, give the policy the same input as the plain structs they stand for.
func TestSharedTermsReadAsLiterals(t *testing.T) {
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	model := NewResource("r", "model", "gpt")
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
			"asked with another",
			Input{User: &User{ID: "u", Grants: map[string]Grant{"r": model.Grant(time.Time{})}}, ResourceIDs: []string{"r", "x"}, Resources: map[string]Resource{"r": model}},
			Input{User: &User{ID: "u", Grants: map[string]Grant{"r": {Name: "gpt"}}}, ResourceIDs: []string{"r", "x"}, Resources: map[string]Resource{"r": {Kind: "model", Name: "gpt"}}},
		},
		{
			"held under another id", // a caller's mistake, which must not give the resource's own id
			Input{ResourceIDs: []string{"y"}, Resources: map[string]Resource{"y": model}},
			Input{ResourceIDs: []string{"y"}, Resources: map[string]Resource{"y": {Kind: "model", Name: "gpt"}}},
		},
		{
			"granted under another id", // the same mistake: resource_list must key it by "y"
			Input{User: &User{ID: "u", Grants: map[string]Grant{"y": model.Grant(time.Time{})}}, ResourceIDs: []string{"y"}},
			Input{User: &User{ID: "u", Grants: map[string]Grant{"y": {Name: "gpt"}}}, ResourceIDs: []string{"y"}},
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

// TestNextExpiry checks that the next expiry is the earliest one strictly after now, direct or
// through a group.
func TestNextExpiry(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2030, 1, 1, h, 0, 0, 0, time.UTC) }
	u := &User{
		Grants: map[string]Grant{"a": {ExpiresAt: at(3)}, "b": {}, "c": {ExpiresAt: at(9)}},
		Groups: map[string]Group{"g": {Grants: map[string]Grant{"d": {ExpiresAt: at(5)}, "e": {}}}},
	}
	tests := []struct {
		now, want time.Time
	}{
		{at(1), at(3)},
		{at(3), at(5)}, // a grant expiring at now has expired: the next one counts
		{at(4), at(5)}, // through the group
		{at(6), at(9)},
		{at(9), time.Time{}},
		{at(10), time.Time{}},
	}
	for _, tc := range tests {
		if got := u.NextExpiry(tc.now); !got.Equal(tc.want) {
			t.Errorf("NextExpiry(%v) = %v, want %v", tc.now, got, tc.want)
		}
	}
	if got := (&User{Grants: map[string]Grant{"b": {}}}).NextExpiry(at(1)); !got.IsZero() {
		t.Errorf("NextExpiry of grants that never expire = %v, want zero", got)
	}
}
