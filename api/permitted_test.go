package api

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

func TestPermittedSetPermitsAll(t *testing.T) {
	p := &permittedSet{ids: newIDSet([]string{"a", "c"})}
	for _, tc := range []struct {
		all  bool
		ids  []string
		want bool
	}{
		{false, []string{"a"}, true},
		{false, []string{"b"}, false},
		{false, []string{"a", "c"}, false}, // allow asks about exactly one resource
		{false, nil, false},
		{true, []string{"a", "c", "a"}, true},
		{true, []string{"a", "b"}, false},
		{true, nil, false}, // an empty request is never allowed
	} {
		if got := p.permitsAll(tc.all, tc.ids); got != tc.want {
			t.Errorf("permitsAll(%v, %v) = %v, want %v", tc.all, tc.ids, got, tc.want)
		}
	}
}

// setMembers is the ids of s, sorted, as its slots find them.
func setMembers(s idSet) []string {
	var ids []string
	for _, sl := range s.slots {
		if sl.data != nil {
			ids = append(ids, unsafe.String(sl.data, sl.n))
		}
	}
	slices.Sort(ids)
	return ids
}

// TestIDSet holds an idSet to a map of the same ids: sets of every size up to a few thousand
// (so, full of probes that run past a slot of another id), with repeats, asked about every
// member and as many ids that are not, some a prefix or an extension of a member.
func TestIDSet(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 100, 4096} {
		ids := make([]string, 0, n+n/3)
		for i := range n {
			ids = append(ids, fmt.Sprintf("res-%d", i))
		}
		ids = append(ids, ids[:n/3]...) // repeats
		s := newIDSet(ids)
		if got := setMembers(s); len(got) != n {
			t.Fatalf("n=%d: %d members, want %d", n, len(got), n)
		}
		want := make(map[string]bool, n)
		for _, id := range ids {
			want[id] = true
		}
		asked := []string{"", "res-", "res-0x", "res-1\x00"}
		for i := range 2*n + 1 {
			asked = append(asked, fmt.Sprintf("res-%d", i), fmt.Sprintf("res-%d ", i))
		}
		for _, id := range asked {
			if got := s.has(id); got != want[id] {
				t.Fatalf("n=%d: has(%q) = %v, want %v", n, id, got, want[id])
			}
		}
		if s.has("") {
			t.Fatalf("n=%d: has the empty id", n)
		}
		if len(s.slots) < 2*n {
			t.Errorf("n=%d: %d slots, want at least twice the ids", n, len(s.slots))
		}
	}
}

// adaNow is when the tests on adaStore begin.
var adaNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// newEngine is an engine of mods; the test fails if they do not compile.
func newEngine(t testing.TB, mods []policy.Module) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), mods)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// adaStore is a store whose organization org-1 has resources id(0) to id(5) and a user ada,
// who holds 0 for good, 1 until a minute after now, 2 expired a minute before, 3 through a group
// (g1), and 5, which was removed after its grant; not 4.
func adaStore(t *testing.T, now time.Time) (storage.Store, func(int) string) {
	t.Helper()
	const org = "org-1"
	ctx := context.Background()
	store := bolttest.Open(t)
	must := fatalOn(t)
	id := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	must(store.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: now}))
	for i := range 6 {
		must(store.CreateResource(ctx, storage.Resource{OrgID: org, ID: id(i), Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("m", i), CreatedAt: now}))
	}
	must(store.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int", Name: "hr", Type: "import", CreatedAt: now}))
	_, err := store.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "ada", Email: "ada@x"}}, now)
	must(err)
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(0), CreatedAt: now}))
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(1), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}))
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(2), CreatedAt: now, ExpiresAt: now.Add(-time.Minute)}))
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "ada", ResourceID: id(5), CreatedAt: now}))
	must(store.DeleteResource(ctx, org, id(5)))
	must(store.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g1", DisplayName: "one", Members: []string{"ada"}, CreatedAt: now, ModifiedAt: now}))
	_, err = store.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: "g1", ResourceID: id(3), CreatedAt: now})
	must(err)
	return store, id
}

// TestChecksFromPermittedSet: once a user has been asked enough new questions, the checks about
// them are answered from their set, and give what the policy gives per question, for every
// kind of resource, for allow and allow_all, at and after a grant's expiry, and when the
// policy is replaced by one that Grantry must ask per question.
func TestChecksFromPermittedSet(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	clock := now
	store, id := adaStore(t, now)
	must := fatalOn(t)

	engine := newEngine(t, policy.Embedded())
	live := policy.NewLive(engine)
	s := New(Config{Store: store, Decider: live, Now: func() time.Time { return clock }})
	facts := func() *facts {
		f, err := s.userFacts(ctx, org, "ada")
		must(err)
		return f
	}
	f := facts()
	ask := func(all bool, ids ...string) bool {
		t.Helper()
		allowed, _, err := s.answerNow(ctx, org, f, all, ids)
		must(err)
		return allowed
	}
	// Every question, answered from the set or per question, is held to what the policy
	// itself answers per question now.
	questions := [][]string{{id(0)}, {id(1)}, {id(2)}, {id(3)}, {id(4)}, {id(5)}, {"unknown"}, {id(0), id(3)}, {id(0), id(4)}, {id(3), id(1)}}
	agree := func(when string) {
		t.Helper()
		for _, ids := range questions {
			for _, all := range []bool{false, true} {
				rs, err := s.resourceFacts(ctx, org, ids)
				must(err)
				want, err := s.evaluate(ctx, live.Engine(), all, policy.Input{User: f.Facts, ResourceIDs: ids, Resources: rs, Now: clock})
				must(err)
				if got := ask(all, ids...); got != want {
					t.Errorf("%s: answer(all %v, %v) = %v, the policy says %v", when, all, ids, got, want)
				}
			}
		}
	}

	// A first question is asked of the policy: a user asked once never pays for a set.
	if !ask(false, id(0)) || f.permitted.Load() != nil {
		t.Fatal("the first question built a set, or was denied")
	}
	agree("while the set is built")
	p := f.permitted.Load()
	if p == nil {
		t.Fatal("no set after many new questions")
	}
	if want := []string{id(0), id(1), id(3)}; strings.Join(setMembers(p.ids), ",") != strings.Join(want, ",") || !p.until.Equal(now.Add(time.Minute)) {
		t.Fatalf("set %v until %v, want %v until the grant of 1 expires", p.ids, p.until, want)
	}
	// A question not asked before (about a resource that does not exist) cannot be in the
	// memo: only the set answers it without asking the policy.
	hits := s.memoHits.Load()
	if ask(false, id(9)) || s.memoHits.Load() != hits+1 {
		t.Error("a question never asked was not answered from the set")
	}
	agree("from the set")

	clock = now.Add(time.Minute) // the grant of 1 expires at this instant
	if ask(false, id(1)) {
		t.Error("a grant was allowed at the instant it expired")
	}
	if p := f.permitted.Load(); p == nil || !p.until.IsZero() {
		t.Error("the set was not built again when a grant expired")
	}
	agree("after an expiry")

	// A replaced policy (here: ada may use everything) decides at once, per question.
	_, err := live.Replace(ctx, shippedEdited(t, "default allow := false", "default allow := false\n\nallow if input.user.id == \"ada\""))
	must(err)
	if !ask(false, id(4)) {
		t.Error("a check after the policy was replaced was answered from the old policy's set")
	}
	if f.permitted.Load().revision == live.Revision() {
		t.Error("a set was built for a policy that is not the shipped one")
	}
	agree("another policy")
}

// countingEngine is an Engine that counts the questions it is asked, and the sets.
type countingEngine struct {
	*policy.Engine
	asked, sets atomic.Int64
}

func (e *countingEngine) Permitted(ctx context.Context, in policy.Input) ([]string, error) {
	e.sets.Add(1)
	return e.Engine.Permitted(ctx, in)
}

func (e *countingEngine) Allow(ctx context.Context, in policy.Input) (bool, error) {
	e.asked.Add(1)
	return e.Engine.Allow(ctx, in)
}

func (e *countingEngine) AllowAll(ctx context.Context, in policy.Input) (bool, error) {
	e.asked.Add(1)
	return e.Engine.AllowAll(ctx, in)
}

// TestSetFromShapes: a user's set, when every resource the user holds has a shape (a grant of
// their own that never expires), is read from the answers to those shapes, the policy asked
// only of shapes not answered yet; otherwise it is evaluated whole. Either way it is the set
// the policy itself permits.
func TestSetFromShapes(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	store, id := adaStore(t, now)
	must := fatalOn(t)
	e := &countingEngine{Engine: newEngine(t, policy.Embedded())}
	s := New(Config{Store: store, Decider: e, Now: func() time.Time { return now }})
	grants := func(expires time.Time, is ...int) map[string]policy.Grant {
		m := map[string]policy.Grant{}
		for _, i := range is {
			m[id(i)] = policy.NewResource(id(i), "model", fmt.Sprint("m", i)).Grant(expires)
		}
		return m
	}
	forever := time.Time{}
	withExpiring := grants(forever, 0, 2)
	maps.Copy(withExpiring, grants(now.Add(time.Hour), 4))
	for _, tc := range []struct {
		name        string
		u           *policy.User
		shaped      bool
		asked, sets int64
	}{
		// id(5)'s resource was removed: a shape of its own, denied.
		{"first user", &policy.User{ID: "u1", Active: true, Grants: grants(forever, 0, 2, 5)}, true, 3, 0},
		{"the same shapes", &policy.User{ID: "u2", Active: true, Grants: grants(forever, 0, 2, 5)}, true, 0, 0},
		{"one more resource", &policy.User{ID: "u3", Active: true, Grants: grants(forever, 0, 1, 2)}, true, 1, 0},
		{"inactive", &policy.User{ID: "u4", Grants: grants(forever, 0, 2)}, true, 2, 0},
		{"a grant that expires", &policy.User{ID: "u5", Active: true, Grants: withExpiring}, false, 0, 1},
		{"a grant through a group only", &policy.User{ID: "u6", Active: true, Grants: grants(forever, 0),
			Groups: map[string]policy.Group{"g": {Name: "G", Grants: grants(forever, 3)}}}, false, 0, 1},
	} {
		asked, sets := e.asked.Load(), e.sets.Load()
		p := s.setOf(ctx, org, e, e.Revision(), &facts{Facts: tc.u}, now)
		if p == nil {
			t.Fatalf("%s: no set", tc.name)
		}
		if got, want := e.asked.Load()-asked, tc.asked; got != want {
			t.Errorf("%s: the policy was asked %d questions, want %d", tc.name, got, want)
		}
		if got, want := e.sets.Load()-sets, tc.sets; got != want {
			t.Errorf("%s: the policy evaluated %d sets, want %d", tc.name, got, want)
		}
		rs, err := s.resourceFacts(ctx, org, tc.u.HeldResources())
		must(err)
		want, err := e.Engine.Permitted(ctx, policy.Input{User: tc.u, Resources: rs, Now: now})
		must(err)
		if got := setMembers(p.ids); !slices.Equal(got, want) {
			t.Errorf("%s: set %v, the policy permits %v", tc.name, got, want)
		}
	}
}

// TestUnheldDeniedWithoutAsking: with the shipped policy, a new question about a user who does
// not exist, or naming a resource the user holds no grant on, is denied without asking the
// policy, and one naming only resources the user holds (expired or not) is asked; a replaced
// policy is asked every new question, and may allow what the shipped one would not. Both ways
// a new question is decided, a check's (answer) and a batch's or a list's (decideFor), agree.
func TestUnheldDeniedWithoutAsking(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	store, id := adaStore(t, now)
	must := fatalOn(t)
	shipped := newEngine(t, policy.Embedded())
	replaced := newEngine(t, shippedEdited(t, "default allow := false", "default allow := false\n\nallow if input.resources[input.resource_ids[0]]"))
	for _, tc := range []struct {
		name   string
		engine *policy.Engine
		user   string
		all    bool
		ids    []string
		want   bool
		asked  bool
	}{
		{"shipped, not held", shipped, "ada", false, []string{id(4)}, false, false},
		{"shipped, one of several not held", shipped, "ada", true, []string{id(0), id(4)}, false, false},
		{"shipped, no such user", shipped, "bob", false, []string{id(0)}, false, false},
		{"shipped, no such resource", shipped, "ada", false, []string{id(9)}, false, false},
		{"shipped, held", shipped, "ada", false, []string{id(0)}, true, true},
		{"shipped, held through a group", shipped, "ada", true, []string{id(0), id(3)}, true, true},
		{"shipped, held but expired", shipped, "ada", false, []string{id(2)}, false, true},
		{"replaced, not held", replaced, "ada", false, []string{id(4)}, true, true},
		{"replaced, no such user", replaced, "bob", false, []string{id(0)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &countingEngine{Engine: tc.engine}
			var s *Server // new for each way, which would otherwise find the other's answer by its shape
			decide := map[string]func(f *facts) bool{
				"answer": func(f *facts) bool {
					allowed, _, err := s.answerNow(ctx, org, f, tc.all, tc.ids)
					must(err)
					return allowed
				},
				"decideFor": func(f *facts) bool {
					rs, err := s.resourceFacts(ctx, org, tc.ids)
					must(err)
					d, revision := s.pinPolicy()
					return s.decideFor(ctx, d, revision, f, tc.all, policy.Input{User: f.Facts, ResourceIDs: tc.ids, Resources: rs, Now: now})
				},
			}
			for way, decide := range decide {
				s = New(Config{Store: store, Decider: e, Now: func() time.Time { return now }})
				e.asked.Store(0)
				f, err := s.userFacts(ctx, org, tc.user)
				must(err)
				fresh := &facts{Facts: f.Facts} // no memo, no set: a new question
				if allowed := decide(fresh); allowed != tc.want || (e.asked.Load() > 0) != tc.asked {
					t.Errorf("%s = %v after %d questions to the policy, want %v and asked: %v", way, allowed, e.asked.Load(), tc.want, tc.asked)
				}
			}
		})
	}
}

// shippedEdited is the shipped policy with the first old of its source replaced by new: a
// replaced policy, which Grantry must ask every question. It ends the test if there is no old.
func shippedEdited(tb testing.TB, old, new string) []policy.Module {
	tb.Helper()
	src := policy.Embedded()[0].Source
	if !strings.Contains(src, old) {
		tb.Fatalf("the shipped policy has no %q to replace", old)
	}
	return []policy.Module{{Name: "authz.rego", Source: strings.Replace(src, old, new, 1)}}
}

// answerNow is answer with the policy of the moment, as check pins it.
func (s *Server) answerNow(ctx context.Context, orgID string, f *facts, all bool, ids []string) (bool, string, error) {
	d, revision := s.pinPolicy()
	allowed, err := s.answer(ctx, orgID, d, revision, f, all, s.questionResources(ctx, orgID, ids), s.now())
	return allowed, revision, err
}

// fatalOn returns a function that ends the test or benchmark tb at once on an error.
func fatalOn(tb testing.TB) func(error) {
	return func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSetOf measures building a user's set of 50 grants of their own: read from the
// answers to their shapes (every grant for good), or evaluated whole by the policy (one of
// them expires, so the user has no shape for it).
func BenchmarkSetOf(b *testing.B) {
	const org, n = "org-1", 50
	ctx, now := context.Background(), adaNow
	store := bolttest.Open(b)
	must := fatalOn(b)
	must(store.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: now}))
	forever, expiring := map[string]policy.Grant{}, map[string]policy.Grant{}
	for i := range n {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		must(store.CreateResource(ctx, storage.Resource{OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("m", i), CreatedAt: now}))
		r := policy.NewResource(id, "model", fmt.Sprint("m", i))
		forever[id], expiring[id] = r.Grant(time.Time{}), r.Grant(time.Time{})
		if i == 0 {
			expiring[id] = r.Grant(now.Add(time.Hour))
		}
	}
	engine := newEngine(b, policy.Embedded())
	s := New(Config{Store: store, Decider: engine, Now: func() time.Time { return now }})
	for _, bc := range []struct {
		name   string
		grants map[string]policy.Grant
	}{{"shapes", forever}, {"evaluated", expiring}} {
		b.Run(bc.name, func(b *testing.B) {
			u := &policy.User{ID: "ada", Active: true, Grants: bc.grants}
			b.ReportAllocs()
			var p *permittedSet
			for b.Loop() {
				if p = s.setOf(ctx, org, engine, engine.Revision(), &facts{Facts: u}, now); p == nil {
					b.Fatal("no set")
				}
			}
			if got := len(setMembers(p.ids)); got != n {
				b.Fatalf("the set holds %d of the user's %d grants, all of which the policy permits", got, n)
			}
		})
	}
}
