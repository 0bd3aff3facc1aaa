package api_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// readCounting is a store that counts the reads of a user's grants: whole (UserFacts) and
// only those asked about (AskedGrants).
type readCounting struct {
	storage.Store
	whole, asked atomic.Int64
}

func (s *readCounting) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	s.whole.Add(1)
	return s.Store.UserFacts(ctx, orgID, userID)
}

func (s *readCounting) AskedGrants(ctx context.Context, orgID, userID string, ids []string) (storage.Asked, error) {
	s.asked.Add(1)
	return s.Store.AskedGrants(ctx, orgID, userID, ids)
}

// TestFirstCheckReadsOnlyTheGrantsAsked: a user's first two checks read, of their grants, only
// those asked about, and the third reads the whole user, who is then kept; with a replaced
// policy, which may read any grant, every check reads the whole user until it is kept.
func TestFirstCheckReadsOnlyTheGrantsAsked(t *testing.T) {
	src := policy.Embedded()[0].Source
	replaced, err := policy.New(context.Background(), []policy.Module{{Name: "authz.rego", Source: strings.Replace(src, "default allow := false", "default allow := false\n\n# replaced", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		decider      api.Decider // nil: the shipped policy
		asked, whole []int64     // reads after each of four checks
	}{
		{"shipped", nil, []int64{1, 2, 2, 2}, []int64{0, 0, 1, 1}},
		{"replaced", replaced, []int64{0, 0, 0, 0}, []int64{1, 2, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &readCounting{}
			f := newFixture(t, func(cfg *api.Config) {
				store.Store, cfg.Store = cfg.Store, store
				if tc.decider != nil {
					cfg.Decider = tc.decider
				}
			})
			_, key := f.org("acme")
			model, ada := f.model(key, "m"), f.user(key, "ada@acme.test")
			f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model})
			store.asked.Store(0)
			store.whole.Store(0)
			for i := range 4 {
				if !f.check(key, ada, model) {
					t.Errorf("check %d denied a granted resource", i+1)
				}
				if a, w := store.asked.Load(), store.whole.Load(); a != tc.asked[i] || w != tc.whole[i] {
					t.Errorf("after check %d: %d reads of the grants asked about and %d of all, want %d and %d", i+1, a, w, tc.asked[i], tc.whole[i])
				}
			}
		})
	}
}
