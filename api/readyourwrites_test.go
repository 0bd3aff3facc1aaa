package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/storage"
)

// slowLoads answers the reads of the check path (UserFacts, AskedGrants) a pause after making
// them, as a loaded store might: a load that read before a write then ends after the write has
// returned, and its facts must not be kept.
type slowLoads struct {
	storage.Store
	pause time.Duration
}

func (s slowLoads) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	f, err := s.Store.UserFacts(ctx, orgID, userID)
	time.Sleep(s.pause)
	return f, err
}

func (s slowLoads) AskedGrants(ctx context.Context, orgID, userID string, resourceIDs []string) (storage.Asked, error) {
	a, err := s.Store.AskedGrants(ctx, orgID, userID, resourceIDs)
	time.Sleep(s.pause)
	return a, err
}

func withSlowLoads(pause time.Duration) fixtureOption {
	return func(c *api.Config) { c.Store = slowLoads{c.Store, pause} }
}

// TestWritesReachTheNextCheckUnderLoad: while other clients ask about the same users and
// resources without pause, every grant, revoke, membership and group change is seen by the
// next check made after it returns, through the router on the embedded store. With the
// default cache the users are kept, given a set and memoised answers between writes; with a
// cache of one user a shard, the other clients' questions about a crowd of users evict ada
// and bob over and over, so that their loads run across the writes; and with loads slowed, so
// that, with another client's writes dropping their facts all the while, many a load reads the
// store before a write and ends after it (its facts must not be kept:
// TestAccessCacheLoadRacingAWrite holds the cache to that alone).
func TestWritesReachTheNextCheckUnderLoad(t *testing.T) {
	tests := []struct {
		name  string
		opts  []fixtureOption
		crowd int  // other users the other clients ask about
		churn bool // another client grants ada and bob a third model and revokes it, over and over
	}{
		{"default cache", nil, 0, false},
		{"users evicted all the time", []fixtureOption{withCacheEntries(1)}, 40, false},
		{"loads across the writes", []fixtureOption{withSlowLoads(time.Millisecond)}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { writesUnderLoad(t, newFixture(t, tc.opts...), tc.crowd, tc.churn) })
	}
}

func writesUnderLoad(t *testing.T, f *fixture, crowd int, churn bool) {
	_, key := f.org("acme")
	model, other, third := f.model(key, "gpt"), f.model(key, "llama"), f.model(key, "mistral")
	ada, bob := f.user(key, "ada@acme.test"), f.user(key, "bob@acme.test")
	eng := f.group(key, "Engineering")
	asked := []string{ada, bob, ada, bob}
	for i := range crowd {
		asked = append(asked, f.user(key, fmt.Sprintf("u%d@acme.test", i)))
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var checks atomic.Int64
	if churn {
		// Each of these writes drops ada's or bob's facts, so that the other clients load them
		// again and again, and some load is under way whenever a write below is made.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				user, path := []string{ada, bob}[i%2], []string{"/provisions/add_to_user", "/provisions/remove_from_user"}[i/2%2]
				if r := f.do("POST", path, key, map[string]string{"user_id": user, "svc_id": third}); r.Status != http.StatusOK {
					t.Errorf("POST %s = %d %s", path, r.Status, r.Body)
					return
				}
			}
		}()
	}
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; !stop.Load(); i++ {
				// ada and bob every other question, the crowd in between.
				user := asked[i%4]
				if crowd > 0 && i%2 == 1 {
					user = asked[4+i%crowd]
				}
				for _, svc := range []string{model, other} {
					r := f.do("POST", "/provisions/can_user_access", key, map[string]string{"user_id": user, "svc_id": svc})
					if r.Status != http.StatusOK || (string(r.Body) != "true" && string(r.Body) != "false") {
						t.Errorf("a check under load = %d %s", r.Status, r.Body)
						return
					}
					checks.Add(1)
				}
			}
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()

	post := func(path string, body map[string]string) func() {
		return func() { f.must("POST", path, key, body) }
	}
	steps := []struct {
		name     string
		do       func()
		ada, bob bool // what the check of model answers afterwards
	}{
		{"ada is granted the model", post("/provisions/add_to_user", map[string]string{"user_id": ada, "svc_id": model}), true, false},
		{"the group is granted the model", post("/provisions/add_to_group", map[string]string{"group_id": eng, "svc_id": model}), true, false},
		{"bob joins the group", post("/groups/add_member", map[string]string{"group_id": eng, "user_id": bob}), true, true},
		{"ada's own grant is revoked", post("/provisions/remove_from_user", map[string]string{"user_id": ada, "svc_id": model}), false, true},
		{"ada joins the group", post("/groups/add_member", map[string]string{"group_id": eng, "user_id": ada}), true, true},
		{"the group's grant is revoked", post("/provisions/remove_from_group", map[string]string{"group_id": eng, "svc_id": model}), false, false},
		{"bob is granted the model", post("/provisions/add_to_user", map[string]string{"user_id": bob, "svc_id": model}), false, true},
		{"the group is granted it again", post("/provisions/add_to_group", map[string]string{"group_id": eng, "svc_id": model}), true, true},
		{"ada leaves the group", post("/groups/remove_member", map[string]string{"group_id": eng, "user_id": ada}), false, true},
		{"bob leaves the group", post("/groups/remove_member", map[string]string{"group_id": eng, "user_id": bob}), false, true},
		{"bob's grant is revoked", post("/provisions/remove_from_user", map[string]string{"user_id": bob, "svc_id": model}), false, false},
		{"the group's grant is revoked again", post("/provisions/remove_from_group", map[string]string{"group_id": eng, "svc_id": model}), false, false},
	}
	const rounds = 15
	for round := range rounds {
		for _, st := range steps {
			st.do()
			if got := f.check(key, ada, model); got != st.ada {
				t.Fatalf("round %d, after %s: ada may use the model = %v, want %v", round, st.name, got, st.ada)
			}
			if got := f.check(key, bob, model); got != st.bob {
				t.Fatalf("round %d, after %s: bob may use the model = %v, want %v", round, st.name, got, st.bob)
			}
			if f.check(key, ada, other) || f.check(key, bob, other) {
				t.Fatalf("round %d, after %s: a model granted to nobody is allowed", round, st.name)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	// The load must have run alongside the writes, or the test proved nothing about racing.
	if n := checks.Load(); n < rounds*int64(len(steps)) {
		t.Errorf("the other clients made %d checks during %d writes, want at least one a write", n, rounds*len(steps))
	}
}
