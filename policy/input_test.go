package policy

import (
	"context"
	"slices"
	"testing"
	"time"
	"unsafe"
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

// TestIntern: a resource made by NewResource gives its own copy of its id, which users' grant
// maps share; any other id, or a resource made as a literal, gives the id it was given.
func TestIntern(t *testing.T) {
	const id = "00000000-0000-4000-8000-000000000001"
	r := NewResource(id, "model", "gpt")
	own := r.Intern(id)
	read := string([]byte(id)) // as a store read makes it: the same text, another copy
	for _, tc := range []struct {
		name string
		r    Resource
		id   string
		want *byte // the copy of the text returned
	}{
		{"its own id, read again", r, read, unsafe.StringData(own)},
		{"another id", r, "00000000-0000-4000-8000-000000000002", nil},
		{"a literal resource", Resource{Kind: "model", Name: "gpt"}, read, unsafe.StringData(read)},
	} {
		got := tc.r.Intern(tc.id)
		if got != tc.id {
			t.Errorf("%s: Intern(%q) = %q", tc.name, tc.id, got)
		}
		if tc.want == nil {
			tc.want = unsafe.StringData(tc.id)
		}
		if unsafe.StringData(got) != tc.want {
			t.Errorf("%s: Intern(%q) returned another copy of the id than expected", tc.name, tc.id)
		}
	}
	if unsafe.StringData(own) == unsafe.StringData(read) {
		t.Fatal("the test's two copies of the id are one")
	}
}

// TestPermittedKeepsNoValue: the user's OPA value that Permitted reads is built for it and not
// kept (the set built from it answers from then on), while a decision of a replaced policy,
// which reads the whole user each time, keeps it.
func TestPermittedKeepsNoValue(t *testing.T) {
	ctx := context.Background()
	shipped := mustEngine(t, Embedded())
	other := mustEngine(t, []Module{{Name: "count.rego", Source: "package grantry.authz\n\nallow if count(input.user.resource_list) == 1\n\nallow_all := allow\n"}})
	r := NewResource("r", "model", "gpt")
	in := Input{User: &User{ID: "u", Active: true, Grants: map[string]Grant{"r": r.Grant(time.Time{})}},
		ResourceIDs: []string{"r"}, Resources: map[string]Resource{"r": r}, Now: time.Now()}
	ids, err := shipped.Permitted(ctx, in)
	if err != nil || !slices.Equal(ids, []string{"r"}) {
		t.Fatalf("Permitted = %v, %v; want [r]", ids, err)
	}
	if in.User.term.Load() != nil {
		t.Error("Permitted kept the user's value")
	}
	if allowed, err := other.Allow(ctx, in); err != nil || !allowed {
		t.Fatalf("a replaced policy's Allow = %v, %v; want true", allowed, err)
	}
	if in.User.term.Load() == nil {
		t.Error("a replaced policy's decision did not keep the user's value")
	}
}
