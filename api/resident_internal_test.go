package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// scanFunc is a storage.FactsScanner of users made of a function, with no groups.
type scanFunc func(ctx context.Context, fn func(storage.ScannedUser) error) error

func (f scanFunc) ScanUsers(ctx context.Context, fn func(storage.ScannedUser) error) error {
	return f(ctx, fn)
}

func (f scanFunc) ScanGroups(context.Context, func(storage.ScannedGroup) error) error {
	return nil
}

// TestResidentIndexWearsOut: the index asks to be read in again once the users dropped since
// its last read-in, or created (a drop of a user it does not hold), number a tenth of those
// it kept, an organization dropped counting as its users, or one if it held none; a read-in
// starts the count again.
func TestResidentIndexWearsOut(t *testing.T) {
	users := func(org string, n int) []storage.ScannedUser {
		var out []storage.ScannedUser
		for i := range n {
			out = append(out, storage.ScannedUser{User: storage.User{OrgID: org, ID: fmt.Sprintf("u%02d", i), Active: true},
				Grants: []storage.ScannedGrant{{ResourceID: "r1"}}})
		}
		return out
	}
	tests := []struct {
		name     string
		held     []storage.ScannedUser
		drops    func(r *residentIndex)
		wantWorn bool
	}{
		{"nothing dropped", users("o1", 30), func(*residentIndex) {}, false},
		{"two of thirty", users("o1", 30), func(r *residentIndex) { r.dropUser("o1", "u01"); r.dropUser("o1", "u02") }, false},
		{"three of thirty", users("o1", 30), func(r *residentIndex) {
			r.dropUser("o1", "u01")
			r.dropUser("o1", "u02")
			r.dropUser("o1", "u03")
		}, true},
		{"three created", users("o1", 30), func(r *residentIndex) {
			r.dropUser("o1", "new1")
			r.dropUser("o1", "new2")
			r.dropUser("o2", "new3")
		}, true},
		{"an organization of two", append(users("o1", 28), users("o2", 2)...), func(r *residentIndex) { r.dropOrg("o2") }, false},
		{"an organization of three", append(users("o1", 27), users("o2", 3)...), func(r *residentIndex) { r.dropOrg("o2") }, true},
		{"everyone", users("o1", 30), func(r *residentIndex) { r.dropAll() }, true},
		{"one created, none held", nil, func(r *residentIndex) { r.dropUser("o1", "new1") }, true},
		{"an organization created, none held", nil, func(r *residentIndex) { r.dropOrg("o1") }, true},
		{"none held, nothing written", nil, func(*residentIndex) {}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newResidentIndex(scanFunc(func(ctx context.Context, fn func(storage.ScannedUser) error) error {
				for _, u := range tc.held {
					if err := fn(u); err != nil {
						return err
					}
				}
				return nil
			}), 1000)
			r.dropUser("o1", "before") // counted before the read-in, and so not after it
			if !r.worn() {
				t.Error("not worn before the first read-in, after a drop")
			}
			if _, err := r.readIn(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r.worn() {
				t.Error("worn just after a read-in")
			}
			tc.drops(r)
			if got := r.worn(); got != tc.wantWorn {
				t.Errorf("worn = %v, want %v (held %d of %d)", got, tc.wantWorn, r.held(), len(tc.held))
			}
			if _, err := r.readIn(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r.worn() || r.held() != len(tc.held) {
				t.Errorf("after reading in again: worn %v, held %d; want false, %d", r.worn(), r.held(), len(tc.held))
			}
		})
	}
}

// groupsAndUsers is a storage.FactsScanner of fixed groups and users.
type groupsAndUsers struct {
	groups []storage.ScannedGroup
	users  []storage.ScannedUser
}

func (s groupsAndUsers) ScanGroups(ctx context.Context, fn func(storage.ScannedGroup) error) error {
	for _, g := range s.groups {
		if err := fn(g); err != nil {
			return err
		}
	}
	return nil
}

func (s groupsAndUsers) ScanUsers(ctx context.Context, fn func(storage.ScannedUser) error) error {
	for _, u := range s.users {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// TestResidentUserOfAGroupNotReadIn: a user of a group that the read-in did not read (made
// between its reading of groups and of users) is not kept, nor one of a group whose expiry
// could not be kept; the other members are, with their groups.
func TestResidentUserOfAGroupNotReadIn(t *testing.T) {
	odd := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC) // not a whole millisecond
	r := newResidentIndex(groupsAndUsers{
		groups: []storage.ScannedGroup{
			{OrgID: "o1", GroupID: "eng", DisplayName: "Eng", Grants: []storage.ScannedGrant{{ResourceID: "r1"}}},
			{OrgID: "o1", GroupID: "odd", DisplayName: "Odd", Grants: []storage.ScannedGrant{{ResourceID: "r2", ExpiresAt: odd}}},
		},
		users: []storage.ScannedUser{
			{User: storage.User{OrgID: "o1", ID: "ada", Active: true}, Groups: []string{"eng"}},
			{User: storage.User{OrgID: "o1", ID: "bob", Active: true}, Groups: []string{"eng", "new"}},
			{User: storage.User{OrgID: "o1", ID: "carl", Active: true}, Groups: []string{"odd"}},
		},
	}, 1000)
	read, err := r.readIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if read.Users != 1 || read.Groups != 1 {
		t.Errorf("read in %+v, want 1 user and 1 group", read)
	}
	f, ok := r.facts("o1", "ada")
	if !ok || len(f.Groups) != 1 || f.Groups[0].ID != "eng" || f.Groups[0].DisplayName != "Eng" ||
		len(f.GroupGrants) != 1 || f.GroupGrants[0] != (storage.GroupGrant{OrgID: "o1", GroupID: "eng", ResourceID: "r1"}) {
		t.Errorf("ada = %+v (%v), want a member of Eng, which holds r1", f, ok)
	}
	for _, u := range []string{"bob", "carl"} {
		if _, ok := r.facts("o1", u); ok {
			t.Errorf("%s held", u)
		}
	}
}
