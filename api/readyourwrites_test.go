package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// slowLoads answers the engine's reads of a user (UserFacts) a pause after making them, as a
// loaded store might: a load that read before a write then ends after the write has
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

func withSlowLoads(pause time.Duration) fixtureOption {
	return func(c *fixtureConfig) { c.Engine.Store = slowLoads{c.Engine.Store, pause} }
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
		{"users evicted all the time", []fixtureOption{withMaxUsers(1)}, 40, false},
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

	var stopChurn atomic.Bool
	var churning sync.WaitGroup
	if churn {
		// Each of these writes drops ada's or bob's facts, so that the other clients load them
		// again and again, and some load is under way whenever a write below is made.
		churning.Add(1)
		go func() {
			defer churning.Done()
			for i := 0; !stopChurn.Load(); i++ {
				user, path := []string{ada, bob}[i%2], []string{"/provisions/add_to_user", "/provisions/remove_from_user"}[i/2%2]
				if r := f.do("POST", path, key, map[string]string{"user_id": user, "svc_id": third}); r.Status != http.StatusOK {
					t.Errorf("POST %s = %d %s", path, r.Status, r.Body)
					return
				}
			}
		}()
	}
	// ada and bob every other pair of questions, the crowd in between; each about both models.
	stopLoad := checkLoad(t, f, key, func(i int) (user, svc string) {
		user = asked[i/2%4]
		if crowd > 0 && i/2%2 == 1 {
			user = asked[4+i/2%crowd]
		}
		return user, []string{model, other}[i%2]
	})
	stop := func() int64 {
		stopChurn.Store(true)
		churning.Wait()
		return stopLoad()
	}
	defer stop()

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
	// The load must have run alongside the writes, or the test proved nothing about racing.
	if n := stop(); n < rounds*int64(len(steps)) {
		t.Errorf("the other clients made %d checks during %d writes, want at least one a write", n, rounds*len(steps))
	}
}

// checkLoad starts two clients that ask can_user_access without pause, the question of their
// i-th ask being next(i), until the returned stop is called; stop waits for them and returns
// how many checks they made. Any answer but a 200 true or false fails the test. Two keep a
// check under way across most writes; more would only take CPU from the writer on a small
// machine, and make these tests slow.
func checkLoad(t *testing.T, f *fixture, key string, next func(i int) (user, svc string)) (stop func() int64) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var checks atomic.Int64
	for c := range 2 {
		wg.Go(func() {
			for i := c; !done.Load(); i += 2 {
				user, svc := next(i)
				r := f.do("POST", "/provisions/can_user_access", key, map[string]string{"user_id": user, "svc_id": svc})
				if r.Status != http.StatusOK || (string(r.Body) != "true" && string(r.Body) != "false") {
					t.Errorf("a check under load = %d %s", r.Status, r.Body)
					return
				}
				checks.Add(1)
			}
		})
	}
	return func() int64 {
		done.Store(true)
		wg.Wait()
		return checks.Load()
	}
}

const patchActive = `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":true}}]}`

// TestLifecycleReachesTheNextCheckUnderLoad: while other clients ask about the same users and
// resources without pause, deactivating and reactivating a user, removing a group, a user or a
// resource, a directory adding a member to its group over SCIM, taking them out and deleting
// the group, and a grant's expiry are each seen by the next check made after the change, as
// TestWritesReachTheNextCheckUnderLoad holds for grants and memberships. Each round makes its
// own users, group and model, since it removes them; with loads slowed as there, many a load
// of carl or dana reads the store before a change and ends after it.
func TestLifecycleReachesTheNextCheckUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []fixtureOption
	}{
		{"default cache", nil},
		{"loads across the changes", []fixtureOption{withSlowLoads(time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) { lifecycleUnderLoad(t, newFixture(t, tc.opts...)) })
	}
}

func lifecycleUnderLoad(t *testing.T, f *fixture) {
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	other := f.model(key, "granted to nobody")

	type round struct{ carl, dana, model, group, directoryGroup string }
	newRound := func(n int) *round {
		r := &round{
			carl:  f.scimUser(token, fmt.Sprintf("carl%d@acme.test", n)),
			dana:  f.scimUser(token, fmt.Sprintf("dana%d@acme.test", n)),
			model: f.model(key, fmt.Sprintf("model %d", n)),
			group: f.group(key, fmt.Sprintf("group %d", n)),
		}
		g := f.scimDo("POST", "/scim/v2/Groups", token, fmt.Sprintf(`{"displayName":"directory group %d"}`, n))
		r.directoryGroup = decode[struct{ ID string }](t, g).ID
		f.grantGroup(key, r.directoryGroup, r.model)
		return r
	}
	var current atomic.Pointer[round]
	current.Store(newRound(0))
	stop := checkLoad(t, f, key, func(i int) (user, svc string) {
		r := current.Load()
		return []string{r.carl, r.dana}[i/2%2], []string{r.model, other}[i%2]
	})
	defer stop()

	scim := func(method, user, body string, want int) func() {
		return func() {
			if r := f.scimDo(method, "/scim/v2/Users/"+user, token, body); r.Status != want {
				t.Fatalf("%s user = %d %s, want %d", method, r.Status, r.Body, want)
			}
		}
	}
	post := func(path string, body map[string]string) func() {
		return func() { f.must("POST", path, key, body) }
	}
	scimGroup := func(method, group, body string, want int) func() {
		return func() {
			if r := f.scimDo(method, "/scim/v2/Groups/"+group, token, body); r.Status != want {
				t.Fatalf("%s group = %d %s, want %d", method, r.Status, r.Body, want)
			}
		}
	}
	members := func(op, user string) string {
		return `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"` + op + `","path":"members","value":[{"value":"` + user + `"}]}]}`
	}
	const rounds = 10
	for n := range rounds {
		if n > 0 {
			current.Store(newRound(n))
		}
		r := current.Load()
		expires := f.clock.Now().Add(time.Minute).Format(time.RFC3339)
		steps := []struct {
			name       string
			do         func()
			carl, dana bool // what the check of the round's model answers afterwards
		}{
			{"carl is granted the model", post("/provisions/add_to_user", map[string]string{"user_id": r.carl, "svc_id": r.model}), true, false},
			{"carl is deactivated", scim("PATCH", r.carl, patchInactive, http.StatusOK), false, false},
			{"carl is reactivated", scim("PATCH", r.carl, patchActive, http.StatusOK), true, false},
			{"dana joins the group", post("/groups/add_member", map[string]string{"group_id": r.group, "user_id": r.dana}), true, false},
			{"the group is granted the model", post("/provisions/add_to_group", map[string]string{"group_id": r.group, "svc_id": r.model}), true, true},
			{"dana is deactivated", scim("PATCH", r.dana, patchInactive, http.StatusOK), true, false},
			{"dana is reactivated", scim("PATCH", r.dana, patchActive, http.StatusOK), true, true},
			{"the group is removed", post("/groups/remove", map[string]string{"group_id": r.group}), true, false},
			{"the directory adds dana to its group", scimGroup("PATCH", r.directoryGroup, members("add", r.dana), http.StatusNoContent), true, true},
			{"the directory takes dana out of its group", scimGroup("PATCH", r.directoryGroup, members("remove", r.dana), http.StatusNoContent), true, false},
			{"the directory adds dana again", scimGroup("PATCH", r.directoryGroup, members("add", r.dana), http.StatusNoContent), true, true},
			{"the directory removes its group", scimGroup("DELETE", r.directoryGroup, "", http.StatusNoContent), true, false},
			{"dana is granted the model for a minute", post("/provisions/add_to_user", map[string]string{"user_id": r.dana, "svc_id": r.model, "expires_at": expires}), true, true},
			{"the minute passes", func() { f.clock.Advance(time.Minute + time.Second) }, true, false},
			{"carl is removed", scim("DELETE", r.carl, "", http.StatusNoContent), false, false},
			{"dana is granted the model again", post("/provisions/add_to_user", map[string]string{"user_id": r.dana, "svc_id": r.model}), false, true},
			{"the model is removed", post("/llm_integration/remove", map[string]string{"svc_id": r.model}), false, false},
		}
		for _, st := range steps {
			st.do()
			if got := f.check(key, r.carl, r.model); got != st.carl {
				t.Fatalf("round %d, after %s: carl may use the model = %v, want %v", n, st.name, got, st.carl)
			}
			if got := f.check(key, r.dana, r.model); got != st.dana {
				t.Fatalf("round %d, after %s: dana may use the model = %v, want %v", n, st.name, got, st.dana)
			}
			if f.check(key, r.carl, other) || f.check(key, r.dana, other) {
				t.Fatalf("round %d, after %s: a model granted to nobody is allowed", n, st.name)
			}
		}
	}
	if n := stop(); n < rounds*17 {
		t.Errorf("the other clients made %d checks during %d changes, want at least one a change", n, rounds*17)
	}
}
