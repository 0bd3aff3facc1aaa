package storagetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/grantry/grantry/storage"
)

// testChanges checks what the audit trail relies on: GetAPIKey, and that a grant or a revoke
// that changed nothing says so, so that the trail never records it.
func testChanges(t *testing.T, open opener) {
	t.Run("GetAPIKey", func(t *testing.T) {
		s := open(t)
		createOrg(t, s, "org-1", "acme", at(0))
		k := storage.APIKey{ID: "key-1", OrgID: "org-1", Prefix: "gry_1", Hash: hash(1), Scope: "read", CreatedAt: at(1)}
		noErr(t, "CreateAPIKey", s.CreateAPIKey(t.Context(), k))
		got, err := s.GetAPIKey(t.Context(), "key-1")
		noErr(t, "GetAPIKey", err)
		diff(t, "GetAPIKey", k, got)
		_, err = s.GetAPIKey(t.Context(), "key-2")
		wantErr(t, "GetAPIKey(unknown)", err, storage.ErrNotFound)
		noErr(t, "DeleteAPIKey", s.DeleteAPIKey(t.Context(), "key-1"))
		_, err = s.GetAPIKey(t.Context(), "key-1")
		wantErr(t, "GetAPIKey(deleted)", err, storage.ErrNotFound)
	})

	t.Run("GrantAndRevokeChanged", func(t *testing.T) {
		s := open(t)
		withGrantees(t, s)
		ctx := t.Context()
		g := storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: rid(1), CreatedAt: at(1)}
		steps := []struct {
			name string
			do   func() (bool, error)
			want bool
		}{
			{"grant", func() (bool, error) { return setNew(ctx, s, g) }, true},
			{"grant again", func() (bool, error) { return setNew(ctx, s, g) }, false},
			{"grant in the other org", func() (bool, error) {
				return setNew(ctx, s, storage.Grant{OrgID: "org-2", UserID: "u-1", ResourceID: rid(9), CreatedAt: at(1)})
			}, true},
			{"revoke", func() (bool, error) { return s.RevokeGrant(ctx, "org-1", "u-1", rid(1)) }, true},
			{"revoke again", func() (bool, error) { return s.RevokeGrant(ctx, "org-1", "u-1", rid(1)) }, false},
			{"revoke never granted", func() (bool, error) { return s.RevokeGrant(ctx, "org-1", "u-2", rid(2)) }, false},
			{"revoke unknown resource", func() (bool, error) { return s.RevokeGrant(ctx, "org-1", "u-1", rid(8)) }, false},
			{"revoke from the other org's user of the same id", func() (bool, error) { return s.RevokeGrant(ctx, "org-1", "u-1", rid(9)) }, false},
			{"grant once more", func() (bool, error) { return setNew(ctx, s, g) }, true},
		}
		for _, st := range steps {
			got, err := st.do()
			noErr(t, st.name, err)
			if got != st.want {
				t.Errorf("%s: changed = %v, want %v", st.name, got, st.want)
			}
		}
		checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-1": {{OrgID: "org-2", UserID: "u-1", ResourceID: rid(9), CreatedAt: at(1)}}},
			[]storage.Grant{{OrgID: "org-2", UserID: "u-1", ResourceID: rid(9), CreatedAt: at(1)}})

		_, err := setNew(ctx, s, storage.Grant{OrgID: "org-1", UserID: "u-8", ResourceID: rid(1), CreatedAt: at(1)})
		wantErr(t, "SetGrant(unknown user)", err, storage.ErrNotFound)
		_, err = setNew(ctx, s, storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: rid(9), CreatedAt: at(1)})
		wantErr(t, "SetGrant(resource of another org)", err, storage.ErrNotFound)
		_, err = s.RevokeGrant(ctx, "org-1", "u-9", rid(1))
		wantErr(t, "RevokeGrant(user of another org)", err, storage.ErrNotFound)
	})

	// Racing callers doing the same thing: exactly one of them changed something.
	t.Run("ExactlyOneRacerChanges", func(t *testing.T) {
		const racers = 8
		s := open(t)
		withGrantees(t, s)
		g := storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: rid(1), CreatedAt: at(1)}
		for _, step := range []struct {
			name string
			do   func() (bool, error)
		}{
			{"SetGrant", func() (bool, error) { return setNew(t.Context(), s, g) }},
			{"RevokeGrant", func() (bool, error) { return s.RevokeGrant(t.Context(), "org-1", "u-1", rid(1)) }},
		} {
			var changed atomic.Int32
			var wg sync.WaitGroup
			for range racers {
				wg.Go(func() {
					ok, err := step.do()
					if err != nil {
						t.Errorf("%s: %v", step.name, err)
					}
					if ok {
						changed.Add(1)
					}
				})
			}
			wg.Wait()
			if n := changed.Load(); n != 1 {
				t.Errorf("%s: %s reported a change %d times, want once", step.name, fmt.Sprint(racers, " racers"), n)
			}
		}
	})
}

// setNew is SetGrant, and reports whether the grant was new.
func setNew(ctx context.Context, s storage.GrantWriter, g storage.Grant) (bool, error) {
	prev, err := s.SetGrant(ctx, g)
	return err == nil && prev == nil, err
}
