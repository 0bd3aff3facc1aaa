package storagetest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/grantry/grantry/storage"
)

// checkGrants compares UserGrants of each user in perUser, and ListGrants of org, with the
// grants wanted, which are in the order each method names.
func checkGrants(tb testing.TB, s storage.Store, org string, perUser map[string][]storage.Grant, all []storage.Grant) {
	tb.Helper()
	for user, want := range perUser {
		got, err := s.UserGrants(tb.Context(), org, user)
		noErr(tb, "UserGrants("+org+", "+user+")", err)
		diff(tb, "UserGrants("+org+", "+user+")", want, got, equateEmpty)
	}
	got, err := s.ListGrants(tb.Context(), org)
	noErr(tb, "ListGrants("+org+")", err)
	diff(tb, "ListGrants("+org+")", all, got, equateEmpty)
}

// withGrantees creates users u-1, u-2, u-3 and resources rid(1) to rid(4) in org-1, and users
// u-1 and u-9 and resource rid(9) in org-2: u-1 exists in both, u-9 and rid(9) only in org-2.
func withGrantees(tb testing.TB, s storage.Store) {
	tb.Helper()
	withUsers(tb, s, "org-1", at(0), "u-1", "u-2", "u-3")
	for n := 1; n <= 4; n++ {
		createResource(tb, s, model("org-1", n, at(0)))
	}
	withUsers(tb, s, "org-2", at(0), "u-1", "u-9")
	createResource(tb, s, model("org-2", 9, at(0)))
}

func testGrants(t *testing.T, open opener) {
	t.Run("GrantAndUserGrants", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		g1 := grant(t, s, "org-1", "u-1", rid(2), at(1))
		g2 := grant(t, s, "org-1", "u-1", rid(1), at(2))
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {g1, g2}, "u-2": nil}, []storage.Grant{g1, g2})
		checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-1": nil}, nil)
	})

	t.Run("GrantAgain", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		g := grant(t, s, "org-1", "u-1", rid(1), at(1))
		grant(t, s, "org-1", "u-1", rid(1), at(5))
		grant(t, s, "org-1", "u-1", rid(1), at(0))
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {g}}, []storage.Grant{g})
	})

	t.Run("NotFound", func(t *testing.T) {
		// The error says which one is missing, the user first, so that the API can answer
		// which without reading either.
		tests := []struct {
			name, org, user, resource string
			want                      error
		}{
			{"unknown user", "org-1", "u-8", rid(1), storage.ErrUserNotFound},
			{"unknown resource", "org-1", "u-1", rid(8), storage.ErrResourceNotFound},
			{"unknown user and resource", "org-1", "u-8", rid(8), storage.ErrUserNotFound},
			{"user of another org", "org-1", "u-9", rid(1), storage.ErrUserNotFound},
			{"resource of another org", "org-1", "u-1", rid(9), storage.ErrResourceNotFound},
			{"resource of another org, seen from the other side", "org-2", "u-1", rid(1), storage.ErrResourceNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				withGrantees(t, s)
				err := storage.AddGrant(t.Context(), s, storage.Grant{OrgID: tt.org, UserID: tt.user, ResourceID: tt.resource, CreatedAt: at(1)})
				wantErr(t, "Grant", err, tt.want)
				wantErr(t, "Grant", err, storage.ErrNotFound)
				checkGrants(t, s, "org-1", map[string][]storage.Grant{tt.user: nil}, nil)
				checkGrants(t, s, "org-2", map[string][]storage.Grant{tt.user: nil}, nil)
			})
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		grant(t, s, "org-1", "u-1", rid(1), at(1))
		g2 := grant(t, s, "org-1", "u-1", rid(2), at(2))
		g3 := grant(t, s, "org-1", "u-2", rid(1), at(1))
		theirs := grant(t, s, "org-2", "u-1", rid(9), at(1))

		noErr(t, "Revoke", storage.Revoke(t.Context(), s, "org-1", "u-1", rid(1)))
		want := map[string][]storage.Grant{"u-1": {g2}, "u-2": {g3}}
		checkGrants(t, s, "org-1", want, []storage.Grant{g2, g3})

		noErr(t, "Revoke again", storage.Revoke(t.Context(), s, "org-1", "u-1", rid(1)))
		noErr(t, "Revoke(unknown resource)", storage.Revoke(t.Context(), s, "org-1", "u-1", rid(8)))
		wantErr(t, "Revoke(unknown user)", storage.Revoke(t.Context(), s, "org-1", "u-8", rid(2)), storage.ErrUserNotFound)
		wantErr(t, "Revoke(user of another org)", storage.Revoke(t.Context(), s, "org-1", "u-9", rid(9)), storage.ErrUserNotFound)
		// org-2 has a u-1 too, but revoking there must not touch org-1's u-1.
		noErr(t, "Revoke in the other org", storage.Revoke(t.Context(), s, "org-2", "u-1", rid(2)))
		checkGrants(t, s, "org-1", want, []storage.Grant{g2, g3})
		checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-1": {theirs}}, []storage.Grant{theirs})

		// A revoked grant is gone entirely: granting it again is a new grant.
		g1 := grant(t, s, "org-1", "u-1", rid(1), at(5))
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {g2, g1}}, []storage.Grant{g2, g1, g3})
	})

	t.Run("UserGrantsOrder", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		g3 := grant(t, s, "org-1", "u-1", rid(3), at(1))
		g1 := grant(t, s, "org-1", "u-1", rid(1), at(2))
		g2 := grant(t, s, "org-1", "u-1", rid(2), at(1))
		g4 := grant(t, s, "org-1", "u-1", rid(4), ms(1, 1))
		got, err := s.UserGrants(t.Context(), "org-1", "u-1")
		noErr(t, "UserGrants", err)
		diff(t, "UserGrants", []storage.Grant{g2, g3, g4, g1}, got)
		got, err = s.UserGrants(t.Context(), "org-1", "u-8")
		noErr(t, "UserGrants(unknown user)", err)
		diff(t, "UserGrants(unknown user)", []storage.Grant(nil), got, equateEmpty)
	})

	t.Run("ListGrants", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		a := grant(t, s, "org-1", "u-2", rid(1), at(2))
		b := grant(t, s, "org-1", "u-1", rid(2), at(3))
		c := grant(t, s, "org-1", "u-3", rid(1), at(1))
		d := grant(t, s, "org-1", "u-1", rid(1), at(3))
		e := grant(t, s, "org-1", "u-2", rid(2), at(1))
		f := grant(t, s, "org-1", "u-1", rid(3), at(0))
		theirs := grant(t, s, "org-2", "u-1", rid(9), ms(0, 1))
		checkGrants(t, s, "org-1",
			map[string][]storage.Grant{"u-1": {f, d, b}, "u-2": {e, a}, "u-3": {c}},
			[]storage.Grant{f, d, b, e, a, c})
		checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-1": {theirs}, "u-9": nil}, []storage.Grant{theirs})
		checkGrants(t, s, "org-3", map[string][]storage.Grant{"u-1": nil}, nil)
	})

	// Concurrent checks that simultaneous grants and revokes of different pairs all land, none
	// lost or resurrected: a store that reads and writes in separate steps loses some. Run it
	// with -race.
	t.Run("Concurrent", func(t *testing.T) {
		const (
			users     = 4
			resources = 16
			workers   = users * resources / 2
		)
		s := open(t)
		ids := make([]string, users)
		for i := range ids {
			ids[i] = fmt.Sprintf("u-%02d", i)
		}
		withUsers(t, s, "org-1", at(0), ids...)
		for n := range resources {
			createResource(t, s, model("org-1", n, at(0)))
		}
		// Worker w grants one resource to a user and revokes another from the same user, which
		// is granted beforehand; eight workers share each user.
		granted := func(w int) (user, resource string) { return ids[w%users], rid(2 * (w / users)) }
		revoked := func(w int) (user, resource string) { return ids[w%users], rid(2*(w/users) + 1) }
		for w := range workers {
			u, r := revoked(w)
			grant(t, s, "org-1", u, r, at(1))
		}

		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				ctx := t.Context()
				<-start
				u, r := granted(w)
				if err := storage.AddGrant(ctx, s, storage.Grant{OrgID: "org-1", UserID: u, ResourceID: r, CreatedAt: at(2)}); err != nil {
					t.Errorf("Grant(%s, %s): %v", u, r, err)
				}
				ru, rr := revoked(w)
				if err := storage.Revoke(ctx, s, "org-1", ru, rr); err != nil {
					t.Errorf("Revoke(%s, %s): %v", ru, rr, err)
				}
				if err := storage.AddGrant(ctx, s, storage.Grant{OrgID: "org-1", UserID: u, ResourceID: r, CreatedAt: at(3)}); err != nil {
					t.Errorf("Grant(%s, %s) again: %v", u, r, err)
				}
			})
		}
		close(start)
		wg.Wait()

		perUser := make(map[string][]storage.Grant, users)
		var all []storage.Grant
		for w := range workers {
			u, r := granted(w)
			g := storage.Grant{OrgID: "org-1", UserID: u, ResourceID: r, CreatedAt: at(2)}
			perUser[u] = append(perUser[u], g)
			all = append(all, g)
		}
		// All share CreatedAt, so both orders come down to UserID then ResourceID.
		byUserResource := func(a, b storage.Grant) int {
			return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.ResourceID, b.ResourceID))
		}
		for _, gs := range perUser {
			slices.SortFunc(gs, byUserResource)
		}
		slices.SortFunc(all, byUserResource)
		checkGrants(t, s, "org-1", perUser, all)
	})
}
