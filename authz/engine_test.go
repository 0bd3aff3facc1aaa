package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// The world of the engine's property tests: two organizations with the same users' ids, an
// import and a SCIM integration each, resources of every kind from two sources, plain groups.
var (
	worldOrgs     = []string{"org-a", "org-b"}
	worldUsers    = []string{"alice", "bob", "carol", "dave", "erin", "sam", "sue"} // sam and sue come through SCIM
	worldGroups   = []string{"g-fn", "g-admins", "g-team"}
	worldAPIKeys  = []string{"", "5e0b7a3c-2d41-4f8e-9c6a-1b2d3e4f5a06", "8d3f2a1b-6c5e-4d7f-a9b8-0e1f2a3b4c07"}
	worldBase     = time.Date(2026, 12, 31, 17, 0, 0, 0, time.UTC)
	worldGroupFor = map[string][]string{"g-fn": {"fn-tools", "tools"}, "g-admins": {"admins", "ops"}, "g-team": {"team", "Team QUARANTINED"}}
)

func scimUser(id string) bool { return id == "sam" || id == "sue" }

func integrationOf(org, userID string) string {
	if scimUser(userID) {
		return org + "-scim"
	}
	return org + "-import"
}

// world is a store with the engine over it, and what the test draws from. Copies of it with an
// rng each (fork) change and ask concurrently.
type world struct {
	t      *testing.T
	ctx    context.Context
	rng    *rand.Rand
	store  storage.Store
	live   *policy.Live
	engine *Engine
	now    time.Time
	*resources
}

// resources are the resources of each organization, by id, as a world made them.
type resources struct {
	mu   sync.Mutex
	ids  map[string][]string
	next int
}

func (r *resources) of(org string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids[org])
}

// fork returns a copy of w drawing from an rng of its own.
func (w *world) fork(seed uint64) *world {
	c := *w
	c.rng = rand.New(rand.NewPCG(seed, 2))
	return &c
}

func newWorld(t *testing.T, seed uint64, mods []policy.Module, maxUsers int) *world {
	ctx := context.Background()
	pe, err := policy.New(ctx, mods)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, rng: rand.New(rand.NewPCG(seed, 1)), store: bolttest.OpenNoSync(t), live: policy.NewLive(pe), now: worldBase, resources: &resources{ids: map[string][]string{}}}
	w.engine = New(Config{Store: w.store, Policies: w.live, MaxUsers: maxUsers, MemoBytes: DefaultMemoBytes})
	st := w.engine.Store()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, org := range worldOrgs {
		must(st.CreateOrg(ctx, storage.Org{ID: org, Name: org, CreatedAt: worldBase}))
		must(st.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: org + "-import", Name: "directory", Type: storage.IntegrationImport, CreatedAt: worldBase}))
		must(st.CreateSCIMIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: org + "-scim", Name: "entra", Type: storage.IntegrationSCIM, CreatedAt: worldBase},
			storage.SCIMToken{ID: org + "-token", OrgID: org, IntegrationID: org + "-scim", Prefix: "x", Hash: org + "-hash", CreatedAt: worldBase}))
		for range 6 {
			w.createResource(org)
		}
		for _, id := range worldUsers {
			must(st.CreateUser(ctx, w.randomUser(org, id)))
		}
		for _, g := range worldGroups {
			must(st.CreateGroup(ctx, storage.Group{OrgID: org, ID: g, DisplayName: worldGroupFor[g][0], Members: w.someUsers(), CreatedAt: worldBase}))
		}
		for range 25 {
			w.grantRandom(org)
		}
	}
	return w
}

func (w *world) pick(xs []string) string { return xs[w.rng.IntN(len(xs))] }

func (w *world) someUsers() []string {
	var out []string
	for _, u := range worldUsers {
		if w.rng.IntN(3) == 0 {
			out = append(out, u)
		}
	}
	return out
}

func (w *world) createResource(org string) {
	w.mu.Lock()
	w.next++
	n := w.next
	w.mu.Unlock()
	kind := []storage.Kind{storage.KindModel, storage.KindFunction, storage.KindDataset}[n%3]
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	r := storage.Resource{OrgID: org, ID: id, Kind: kind, Source: w.pick([]string{storage.SourceCustom, "openai"}), Name: fmt.Sprintf("%s-%d", kind, n), CreatedAt: worldBase}
	if err := w.engine.Store().CreateResource(w.ctx, r); err != nil {
		w.t.Error(err)
		return
	}
	w.mu.Lock()
	w.ids[org] = append(w.ids[org], id)
	w.mu.Unlock()
}

// removeResource removes one of the organization's resources, if it has more than a few.
func (w *world) removeResource(org string) {
	w.mu.Lock()
	ids := w.ids[org]
	if len(ids) <= 3 {
		w.mu.Unlock()
		return
	}
	i := w.rng.IntN(len(ids))
	id := ids[i]
	w.ids[org] = slices.Delete(slices.Clone(ids), i, i+1)
	w.mu.Unlock()
	w.allow(w.engine.Store().DeleteResource(w.ctx, org, id), storage.ErrNotFound)
}

// randomUser draws a user's record: email, activity and attributes.
func (w *world) randomUser(org, id string) storage.User {
	u := storage.User{OrgID: org, ID: id, IntegrationID: integrationOf(org, id), Active: w.rng.IntN(6) != 0,
		Email: id + w.pick([]string{"@example.com", "@EXAMPLE.com", "@other.example"}), First: id, Last: "Tester", ImportedAt: worldBase, ModifiedAt: worldBase}
	w.setAttributes(&u)
	return u
}

func (w *world) setAttributes(u *storage.User) {
	attrs := map[string]string{}
	for k, vs := range map[string][]string{"department": {"research", "Research", "sales"}, "tier": {"premium", "basic"}, "suspended": {"true", "false"}} {
		if w.rng.IntN(2) == 0 {
			attrs[k] = w.pick(vs)
		}
	}
	var doc any = attrs
	if scimUser(u.ID) {
		ext := map[string]any{}
		if d, ok := attrs["department"]; ok {
			ext["department"] = d
		}
		doc = map[string]any{"title": "Engineer", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": ext}
	}
	u.Attributes, _ = json.Marshal(doc)
}

// expiry draws a grant's expiry: none, or a time about the world's clock.
func (w *world) expiry() time.Time {
	if w.rng.IntN(3) != 0 {
		return time.Time{}
	}
	return w.now.Add(time.Duration(w.rng.IntN(240)-60) * time.Minute).Truncate(time.Millisecond)
}

func (w *world) grantRandom(org string) {
	st := w.engine.Store()
	r := w.pick(w.of(org))
	if w.rng.IntN(3) == 0 {
		_, err := st.SetGroupGrant(w.ctx, storage.GroupGrant{OrgID: org, GroupID: w.pick(worldGroups), ResourceID: r, CreatedAt: worldBase, ExpiresAt: w.expiry()})
		w.allow(err, storage.ErrNotFound)
		return
	}
	_, err := st.SetGrant(w.ctx, storage.Grant{OrgID: org, UserID: w.pick(worldUsers), ResourceID: r, CreatedAt: worldBase, ExpiresAt: w.expiry()})
	w.allow(err, storage.ErrNotFound)
}

// allow fails the test on err, unless it is one of the errors a random change may meet.
func (w *world) allow(err error, ok ...error) {
	w.t.Helper()
	if err == nil {
		return
	}
	for _, e := range ok {
		if errorsIs(err, e) {
			return
		}
	}
	w.t.Error(err)
}

// change makes one random change of the kind the engine must see at once, and says what it was.
func (w *world) change(policies [][]policy.Module) string {
	st := w.engine.Store()
	org := w.pick(worldOrgs)
	user := w.pick(worldUsers)
	switch w.rng.IntN(14) {
	case 0, 1:
		w.grantRandom(org)
		return "grant"
	case 2:
		w.allow(storage.Revoke(w.ctx, st, org, user, w.pick(w.of(org))), storage.ErrNotFound)
		return "revoke"
	case 3:
		_, err := st.RevokeGroupGrant(w.ctx, org, w.pick(worldGroups), w.pick(w.of(org)))
		w.allow(err, storage.ErrNotFound)
		return "revoke a group's grant"
	case 4:
		g := w.pick(worldGroups)
		_, err := st.UpdateGroup(w.ctx, org, "", g, func(gr *storage.Group) error {
			if i := slices.Index(gr.Members, user); i >= 0 {
				gr.Members = slices.Delete(gr.Members, i, i+1)
			} else {
				gr.Members = append(gr.Members, user)
			}
			return nil
		})
		w.allow(err, storage.ErrNotFound, storage.ErrUnknownMember)
		return "group membership"
	case 5:
		g := w.pick(worldGroups)
		_, err := st.UpdateGroup(w.ctx, org, "", g, func(gr *storage.Group) error {
			gr.DisplayName = w.pick(worldGroupFor[g])
			return nil
		})
		w.allow(err, storage.ErrNotFound)
		return "group name"
	case 6:
		g := w.pick(worldGroups)
		if err := st.DeleteGroup(w.ctx, org, "", g); err == nil {
			w.allow(st.CreateGroup(w.ctx, storage.Group{OrgID: org, ID: g, DisplayName: worldGroupFor[g][0], Members: w.someUsers(), CreatedAt: w.now}), storage.ErrUnknownMember)
		}
		return "group removed and made again"
	case 7:
		_, err := st.UpdateUser(w.ctx, org, integrationOf(org, user), user, func(u *storage.User) error {
			w.setAttributes(u)
			if w.rng.IntN(3) == 0 {
				u.Active = !u.Active
			}
			if w.rng.IntN(3) == 0 {
				u.Email = user + w.pick([]string{"@example.com", "@other.example"})
			}
			return nil
		})
		w.allow(err, storage.ErrNotFound)
		return "user's attributes, activity or email"
	case 8:
		if err := st.DeleteUser(w.ctx, org, integrationOf(org, user), user, w.now); err == nil && w.rng.IntN(2) == 0 {
			w.allow(st.CreateUser(w.ctx, w.randomUser(org, user)))
		}
		return "user removed"
	case 9:
		w.removeResource(org)
		w.createResource(org)
		return "resource removed and another made"
	case 10:
		w.now = w.now.Add(time.Duration(w.rng.IntN(120)) * time.Minute)
		return "time"
	case 11:
		_, err := st.DeleteExpiredGrants(w.ctx, w.now)
		w.allow(err)
		return "expired grants removed"
	case 12:
		mods := policies[w.rng.IntN(len(policies))]
		if _, err := w.live.Replace(w.ctx, mods); err != nil && !errorsIs(err, policy.ErrUnchanged) {
			w.t.Fatal(err)
		}
		return "policy reloaded"
	}
	_, err := st.ImportUsers(w.ctx, org, org+"-import", []storage.UserImport{{Email: "new" + strconv.Itoa(w.rng.IntN(3)) + "@example.com", First: "New"}}, w.now)
	w.allow(err)
	return "import"
}

// question draws a question about the world.
func (w *world) question() Question {
	org := w.pick(worldOrgs)
	q := Question{OrgID: org, UserID: w.pick(append(worldUsers, "nobody")), Now: w.now, APIKeyID: w.pick(worldAPIKeys)}
	ids := append(w.of(org), "00000000-0000-4000-8000-999999999999")
	if w.rng.IntN(2) == 0 {
		q.ResourceIDs = []string{w.pick(ids)}
	} else {
		q.All = true
		for range w.rng.IntN(3) {
			q.ResourceIDs = append(q.ResourceIDs, w.pick(ids))
		}
	}
	return q
}

// truth is what the policy running answers to q over an input built straight from the store.
func (w *world) truth(q Question) bool {
	allowed, err := w.live.Engine().Decide(w.ctx, q.All, referenceInput(w.t, w.ctx, w.store, q))
	if err != nil {
		w.t.Fatalf("evaluate the truth of %+v: %v", q, err)
	}
	return allowed
}

// check asks n questions and fails on any answer that is not the truth.
func (w *world) check(n int, after string) {
	w.t.Helper()
	for range n {
		w.checkOne(w.question(), after)
	}
}

// checkOne asks q and fails if the answer is not the truth.
func (w *world) checkOne(q Question, after string) {
	w.t.Helper()
	{
		d, err := w.engine.Decide(w.ctx, q)
		if err != nil {
			w.t.Fatalf("decide %+v: %v", q, err)
		}
		if want := w.truth(q); d.Allowed != want {
			v, _ := w.engine.view(w.ctx, &q)
			w.t.Fatalf("after %s: %+v answered %v, the policy over the store says %v\nrevision %s\nengine's input: %v\nstore's input:  %v", after, q, d.Allowed, want, d.Revision[:8], v.input(), referenceInput(w.t, w.ctx, w.store, q))
		}
	}
}

// referenceInput builds the policy's input for q straight from the store's records, as the
// engine's input table documents it, sharing nothing with the engine's own building of it.
func referenceInput(tb testing.TB, ctx context.Context, st storage.Store, q Question) ast.Value {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	rs, err := st.ListResources(ctx, q.OrgID, "")
	must(err)
	resources := map[string]storage.Resource{}
	for _, r := range rs {
		resources[r.ID] = r
	}
	grantList := func(grants map[string]time.Time) map[string]any {
		out := map[string]any{}
		for id, exp := range grants {
			r, ok := resources[id]
			if !ok {
				continue
			}
			g := map[string]any{"name": r.Name}
			if !exp.IsZero() {
				g["expires_at"] = json.Number(strconv.FormatInt(exp.UnixNano(), 10))
			}
			out[id] = g
		}
		return out
	}
	in := map[string]any{"resource_ids": q.ResourceIDs, "now": json.Number(strconv.FormatInt(q.Now.UnixNano(), 10))}
	asked := map[string]any{}
	for _, id := range q.ResourceIDs {
		if r, ok := resources[id]; ok {
			asked[id] = map[string]any{"kind": string(r.Kind), "name": r.Name, "integration_type": r.Source}
		}
	}
	in["resources"] = asked
	request := map[string]any{}
	if q.APIKeyID != "" {
		request["api_key_id"] = q.APIKeyID
	}
	in["request"] = request
	u, err := st.GetUser(ctx, q.OrgID, q.UserID)
	if err == nil {
		own := map[string]time.Time{}
		grants, err := st.UserGrants(ctx, q.OrgID, q.UserID)
		must(err)
		for _, g := range grants {
			own[g.ResourceID] = g.ExpiresAt
		}
		groups, err := st.UserGroups(ctx, q.OrgID, q.UserID)
		must(err)
		byGroup := map[string]any{}
		for _, g := range groups {
			gg, err := st.GroupGrants(ctx, q.OrgID, []string{g.ID})
			must(err)
			held := map[string]time.Time{}
			for _, x := range gg {
				held[x.ResourceID] = x.ExpiresAt
			}
			byGroup[g.ID] = map[string]any{"name": g.DisplayName, "resource_list": grantList(held)}
		}
		user := map[string]any{"id": u.ID, "active": u.Active, "email": u.Email, "first": u.First, "last": u.Last,
			"resource_list": grantList(own), "groups": byGroup, "attributes": map[string]any{}}
		integrations, err := st.ListAuthIntegrations(ctx, q.OrgID)
		must(err)
		for _, a := range integrations {
			if a.ID == u.IntegrationID {
				user["source"] = map[string]any{"id": a.ID, "name": a.Name, "type": a.Type}
				attrs := map[string]any{}
				for k, v := range referenceAttributes(u.Attributes, a.Type) {
					attrs[k] = v
				}
				user["attributes"] = attrs
			}
		}
		in["user"] = user
	} else if !errorsIs(err, storage.ErrNotFound) {
		tb.Fatal(err)
	}
	v, err := ast.InterfaceToValue(in)
	must(err)
	return v
}

// referenceAttributes reads input.user.attributes from a user's stored attributes as the input
// table says: a SCIM user's title, userType and enterprise extension's fields; an imported
// user's object of strings.
func referenceAttributes(stored []byte, typ string) map[string]string {
	out := map[string]string{}
	if len(stored) == 0 {
		return out
	}
	if typ != storage.IntegrationSCIM {
		_ = json.Unmarshal(stored, &out)
		return out
	}
	var doc map[string]any
	_ = json.Unmarshal(stored, &doc)
	for k, v := range doc {
		if s, ok := v.(string); ok && (strings.EqualFold(k, "title") || strings.EqualFold(k, "userType")) {
			out[map[bool]string{true: "title", false: "userType"}[strings.EqualFold(k, "title")]] = s
		}
		if ext, ok := v.(map[string]any); ok && strings.EqualFold(k, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User") {
			for _, name := range []string{"department", "division", "organization", "costCenter", "employeeNumber"} {
				for ek, ev := range ext {
					if s, ok := ev.(string); ok && strings.EqualFold(ek, name) {
						out[name] = s
					}
				}
			}
		}
	}
	return out
}

// deterministic reports whether every answer of the policy is a function of its input, so that
// the engine's and the reference's can be compared.
func deterministic(tb testing.TB, mods []policy.Module) bool {
	pe, err := policy.New(context.Background(), mods)
	if err != nil {
		tb.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		if strings.Contains(pe.Reads(all).Why(), "not a function of its arguments") {
			return false
		}
	}
	return true
}

// TestEngineAnswersAsTheStore holds every route of the engine to the truth: over random
// changes of every kind, each followed at once by questions, every answer (from the memo, held
// facts, or an evaluation) is the one the running policy gives over an input built straight
// from the store, for every deterministic policy of the family, and with reloads among them.
func TestEngineAnswersAsTheStore(t *testing.T) {
	all := testPolicies(t)
	var pool [][]policy.Module
	for _, mods := range all {
		if deterministic(t, mods) {
			pool = append(pool, mods)
		}
	}
	type run struct {
		mods     []policy.Module
		maxUsers int
	}
	runs := map[string]run{"shipped, two users held at most": {policy.Embedded(), 2}}
	for name, mods := range all {
		if deterministic(t, mods) {
			runs[name] = run{mods, 1000}
			// Nothing held: every question gathers its facts from the store alone, as on a
			// shared store whose change feed is late.
			runs[name+", nothing held"] = run{mods, -1}
		}
	}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, uint64(len(name)), r.mods, r.maxUsers)
			w.check(40, "the start")
			for range 150 {
				what := w.change(pool)
				w.check(4, what)
			}
			if held := w.engine.Counts().UsersHeld; held > max(r.maxUsers, 0) {
				t.Errorf("%d users held, more than %d", held, r.maxUsers)
			}
		})
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestEngineAnswersAsTheStoreUnderConcurrentChanges: writers make every kind of change while
// readers keep asking, so that loads of facts race the writes that drop them; once the writers
// are done, every answer is the store's. A load kept although a write raced it would stay
// wrong until the next change of what it read.
func TestEngineAnswersAsTheStoreUnderConcurrentChanges(t *testing.T) {
	for name, mods := range map[string][]policy.Module{"shipped": policy.Embedded(), "groups and attributes": testPolicies(t)["testdata/policies/fn-groups"]} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 99, mods, 1000)
			pool := [][]policy.Module{mods}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for i := range 4 {
				wg.Go(func() {
					r := w.fork(uint64(i))
					for {
						select {
						case <-stop:
							return
						default:
						}
						q := r.question()
						if _, err := r.engine.Decide(r.ctx, q); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var writers sync.WaitGroup
			for i := range 3 {
				writers.Go(func() {
					c := w.fork(uint64(100 + i))
					for range 150 {
						if what := c.change(pool); what == "policy reloaded" || what == "time" {
							continue
						}
					}
				})
			}
			writers.Wait()
			close(stop)
			wg.Wait()
			// Every user about every resource of each organization, alone and all together.
			for _, org := range worldOrgs {
				ids := w.of(org)
				for _, u := range worldUsers {
					for _, id := range ids {
						w.checkOne(Question{OrgID: org, UserID: u, ResourceIDs: []string{id}, Now: w.now}, "the concurrent changes")
					}
					w.checkOne(Question{OrgID: org, UserID: u, ResourceIDs: ids, All: true, Now: w.now}, "the concurrent changes")
				}
			}
		})
	}
}

// TestCountsByOutcome: each decision is counted once, by its outcome, a policy that cannot be
// evaluated as failed and not also as denied, and the memo's counts do not go back to zero
// when a reload replaces the memo: /metrics serves them as counters, which never go down.
func TestCountsByOutcome(t *testing.T) {
	// bob is allowed, carol denied; for alice the rule has two values, which fails evaluation.
	conflict := []policy.Module{{Name: "authz.rego", Source: `package grantry.authz

default allow_all := false

allow = true if input.user.id in {"alice", "bob"}

allow = false if input.user.id in {"alice", "carol"}
`}}
	w := newWorld(t, 1, conflict, 1000)
	ask := func(user string) {
		t.Helper()
		if _, err := w.engine.Decide(w.ctx, Question{OrgID: worldOrgs[0], UserID: user, ResourceIDs: w.resources.of(worldOrgs[0])[:1], Now: w.now}); err != nil {
			t.Fatal(err)
		}
	}
	for _, user := range []string{"bob", "bob", "carol", "alice", "alice"} {
		ask(user)
	}
	want := Counts{Allowed: 2, Denied: 1, Failed: 2, Evaluations: 4, MemoHits: 1, MemoMisses: 4}
	got := w.engine.Counts()
	got.MemoAnswers, got.UsersHeld, got.UserHits, got.UserMisses = 0, 0, 0, 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if _, err := w.live.Replace(w.ctx, policy.Embedded()); err != nil {
		t.Fatal(err)
	}
	ask("bob")
	if got, want := w.engine.Revision(), policy.Revision(policy.Embedded()); got != want {
		t.Fatalf("after the reload the engine decides with %s, want %s", got, want)
	}
	if c := w.engine.Counts(); c.MemoHits+c.MemoMisses != 6 {
		t.Errorf("memo hits %d + misses %d after a reload = %d, want the 5 before and this one", c.MemoHits, c.MemoMisses, c.MemoHits+c.MemoMisses)
	}
}

// factsCounter counts the reads of a user's facts.
type factsCounter struct {
	storage.Store
	reads atomic.Int64
}

func (c *factsCounter) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	c.reads.Add(1)
	return c.Store.UserFacts(ctx, orgID, userID)
}

// TestDecideEachReadsEachUserOnce: questions about a few users, interleaved, are each answered
// as the store says, and each user's facts are read once, even with nothing held.
func TestDecideEachReadsEachUserOnce(t *testing.T) {
	for name, maxUsers := range map[string]int{"held": 1000, "nothing held": -1} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 7, policy.Embedded(), 1000)
			store := &factsCounter{Store: w.store}
			engine := New(Config{Store: store, Policies: w.live, MaxUsers: maxUsers, MemoBytes: DefaultMemoBytes})
			org, users := worldOrgs[0], []string{"alice", "bob", "nobody"}
			var qs []Question
			for _, id := range append(w.of(org), "00000000-0000-4000-8000-999999999999") {
				for _, u := range users {
					qs = append(qs, Question{OrgID: org, UserID: u, ResourceIDs: []string{id}, Now: w.now})
				}
			}
			got, _, err := engine.DecideEach(w.ctx, qs)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				if want := w.truth(q); got[i] != want {
					t.Errorf("%s asked of %s: %v, the store says %v", q.UserID, q.ResourceIDs[0], got[i], want)
				}
			}
			if n := store.reads.Load(); n != int64(len(users)) {
				t.Errorf("read users' facts %d times for %d users", n, len(users))
			}
		})
	}
}

// wholeCatalogRefused is a store that refuses to list an organization's whole catalog.
type wholeCatalogRefused struct{ storage.Store }

func (wholeCatalogRefused) ListResources(_ context.Context, _ string, kind storage.Kind) ([]storage.Resource, error) {
	if kind == "" {
		return nil, errors.New("listed every resource")
	}
	return nil, errors.New("listed every resource of a kind")
}

func (wholeCatalogRefused) ListAuthIntegrations(context.Context, string) ([]storage.AuthIntegration, error) {
	return nil, errors.New("listed every integration")
}

// TestResourceNamesReadWhatIsAsked: with nothing held, the names of a few resources are read
// as those resources, not as the organization's whole catalog.
func TestResourceNamesReadWhatIsAsked(t *testing.T) {
	w := newWorld(t, 3, policy.Embedded(), 1000)
	engine := New(Config{Store: wholeCatalogRefused{w.store}, Policies: w.live, MaxUsers: -1, MemoBytes: DefaultMemoBytes})
	org := worldOrgs[0]
	ids := append(w.of(org)[:2:2], "00000000-0000-4000-8000-999999999999")
	got, err := engine.ResourceNames(w.ctx, org, ids)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := w.store.GetResources(w.ctx, org, ids[:2])
	if err != nil || len(rs) != 2 {
		t.Fatalf("the store's resources: %v %v", rs, err)
	}
	if want := []string{rs[0].Name, rs[1].Name, ""}; !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}
