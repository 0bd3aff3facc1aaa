package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// readsCounted is a store that records whom the check path read from it, and reads every
// user's grants in one pass as the store it wraps does.
type readsCounted struct {
	storage.Store
	mu   sync.Mutex
	read [][2]string // the organization and user of each read
	// scanned, when set, is called once ScanUsers has read every user, before it returns.
	scanned func()
	// resourcesFail, when set, is what reading resources fails with.
	resourcesFail error
}

func (s *readsCounted) GetResources(ctx context.Context, orgID string, ids []string) ([]storage.Resource, error) {
	s.mu.Lock()
	err := s.resourcesFail
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.Store.GetResources(ctx, orgID, ids)
}

func (s *readsCounted) note(orgID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = append(s.read, [2]string{orgID, userID})
}

// readUsers returns the users read from the store since the last call, each once.
func (s *readsCounted) readUsers() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	read := s.read
	s.read = nil
	slices.SortFunc(read, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	return slices.Compact(read)
}

func (s *readsCounted) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	s.note(orgID, userID)
	return s.Store.UserFacts(ctx, orgID, userID)
}

func (s *readsCounted) AskedGrants(ctx context.Context, orgID, userID string, ids []string) (storage.Asked, error) {
	s.note(orgID, userID)
	return s.Store.AskedGrants(ctx, orgID, userID, ids)
}

func (s *readsCounted) ScanUsers(ctx context.Context, fn func(storage.ScannedUser) error) error {
	err := s.Store.ScanUsers(ctx, fn)
	if s.scanned != nil {
		s.scanned()
	}
	return err
}

// residentWorld is one embedded store served twice: by res, which reads users' grants in
// (ReadIn) when told, and by plain, which keeps nothing in memory and so answers every check
// from the store: the reference res is held to.
type residentWorld struct {
	res, plain *fixture
	reads      *readsCounted
	org, key   string
	scim       string
	models     []string
	// ada and bob hold grants of their own, carl is in a group, dana was deactivated, erin holds
	// a grant that expires in 30 seconds and one that expired 30 seconds ago; eve belongs to
	// another organization and holds the same grants as ada there.
	ada, bob, carl, dana, erin string
	group                      string
	otherOrg, otherKey, eve    string
	otherModels                []string
}

func newResidentWorld(t *testing.T, residentGrants int, configure ...func(*api.Config)) *residentWorld {
	t.Helper()
	ctx := context.Background()
	engine, err := policy.New(ctx, policy.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)}
	reads := &readsCounted{Store: bolttest.Open(t)}
	server := func(store storage.Store, cfg api.Config) *fixture {
		cfg.Store, cfg.Decider, cfg.AdminToken, cfg.Now = store, engine, adminToken, clk.Now
		return &fixture{tb: t, srv: api.New(cfg), store: store, clock: clk}
	}
	cfg := api.Config{ResidentGrants: residentGrants}
	for _, c := range configure {
		c(&cfg)
	}
	w := &residentWorld{
		res:   server(reads, cfg),
		plain: server(reads.Store, api.Config{CacheEntries: -1}), // its reads are not counted
		reads: reads,
	}
	f := w.res
	w.org, w.key = f.org("acme")
	_, w.scim = f.scimIntegration(w.key, "okta")
	for i := range 4 {
		w.models = append(w.models, f.model(w.key, fmt.Sprintf("model %d", i)))
	}
	grant := func(key, user, model string, expires ...time.Time) {
		body := map[string]string{"user_id": user, "svc_id": model}
		if len(expires) > 0 {
			body["expires_at"] = expires[0].Format(time.RFC3339)
		}
		f.must("POST", "/provisions/add_to_user", key, body)
	}
	w.ada, w.bob, w.carl, w.dana, w.erin = f.scimUser(w.scim, "ada"), f.scimUser(w.scim, "bob"), f.scimUser(w.scim, "carl"), f.scimUser(w.scim, "dana"), f.scimUser(w.scim, "erin")
	grant(w.key, w.ada, w.models[0])
	grant(w.key, w.ada, w.models[1])
	grant(w.key, w.bob, w.models[1])
	grant(w.key, w.dana, w.models[0])
	if r := f.scimDo("PATCH", "/scim/v2/Users/"+w.dana, w.scim, patchInactive); r.Status != http.StatusOK {
		t.Fatalf("deactivate dana = %d %s", r.Status, r.Body)
	}
	now := clk.Now()
	grant(w.key, w.erin, w.models[0], now.Add(2*time.Minute))
	grant(w.key, w.erin, w.models[1], now.Add(time.Minute))
	clk.Advance(90 * time.Second) // erin's second grant has expired, her first not yet
	w.group = f.group(w.key, "Engineering")
	f.grantGroup(w.key, w.group, w.models[2])
	f.addMember(w.key, w.group, w.carl)
	grant(w.key, w.carl, w.models[0])

	w.otherOrg, w.otherKey = f.org("globex")
	for i := range 2 {
		w.otherModels = append(w.otherModels, f.model(w.otherKey, fmt.Sprintf("model %d", i)))
	}
	w.eve = f.user(w.otherKey, "eve@globex.test")
	grant(w.otherKey, w.eve, w.otherModels[0])
	return w
}

// readIn reads users' grants into res, and forgets whom the store was asked about so far.
func (w *residentWorld) readIn(t *testing.T) api.ResidentRead {
	t.Helper()
	read, err := w.res.srv.ReadIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.reads.readUsers()
	return read
}

// sameAnswers asks res and plain every question about the users of both organizations, alone
// and together (can_user_access_all), and fails unless they answer alike. It returns res's
// answers, by user and model.
func (w *residentWorld) sameAnswers(t *testing.T, when string) map[[2]string]bool {
	t.Helper()
	got := map[[2]string]bool{}
	ask := func(key string, users, models []string) {
		for _, u := range users {
			for _, m := range append(slices.Clone(models), "00000000-0000-4000-8000-000000000000") {
				body := map[string]string{"user_id": u, "svc_id": m}
				r, p := w.res.do("POST", "/provisions/can_user_access", key, body), w.plain.do("POST", "/provisions/can_user_access", key, body)
				if r.Status != p.Status || string(r.Body) != string(p.Body) {
					t.Errorf("%s: can_user_access(%s, %s) = %d %s, the store says %d %s", when, u, m, r.Status, r.Body, p.Status, p.Body)
				}
				got[[2]string{u, m}] = string(r.Body) == "true"
			}
			all := map[string]any{"user_id": u, "tags": models[:2]}
			r, p := w.res.do("POST", "/provisions/can_user_access_all", key, all), w.plain.do("POST", "/provisions/can_user_access_all", key, all)
			if r.Status != p.Status || string(r.Body) != string(p.Body) {
				t.Errorf("%s: can_user_access_all(%s) = %d %s, the store says %d %s", when, u, r.Status, r.Body, p.Status, p.Body)
			}
		}
	}
	ask(w.key, []string{w.ada, w.bob, w.carl, w.dana, w.erin, w.eve, "no-such-user"}, w.models)
	ask(w.otherKey, []string{w.eve, w.ada}, w.otherModels)
	return got
}

// readAfterWrite asks every question after a write (sameAnswers), and fails unless the answer
// to q, which the write turns around, differs from before's, q's user was read from the store,
// and of the users the write does not concern bob was read only if the write reached the whole
// organization (orgWide), eve, of the other organization, never.
func (w *residentWorld) readAfterWrite(t *testing.T, write string, before map[[2]string]bool, q [2]string, orgWide bool) {
	t.Helper()
	after := w.sameAnswers(t, "after "+write)
	if before[q] == after[q] {
		t.Errorf("can_user_access(%s, %s) = %v before and after: the write changed nothing to test", q[0], q[1], after[q])
	}
	read := w.reads.readUsers()
	if !slices.Contains(read, [2]string{w.org, q[0]}) {
		t.Errorf("%s, whom the write concerns, was not read from the store after it: read %v", q[0], read)
	}
	if bob := slices.Contains(read, [2]string{w.org, w.bob}); bob != orgWide {
		t.Errorf("bob, whom the write does not concern, read from the store after it: %v, want %v", bob, orgWide)
	}
	if slices.Contains(read, [2]string{w.otherOrg, w.eve}) {
		t.Errorf("eve, of another organization, read from the store after it: %v", read)
	}
}

// TestResidentIndexAnswersAsTheStore: with users' and groups' grants read in, every check
// answers as the store does, the first question about a user too, and only users the
// organization does not know are read from the store; with a bound below everyone's grants,
// users beyond it are read.
func TestResidentIndexAnswersAsTheStore(t *testing.T) {
	w := newResidentWorld(t, 1000)
	if read := w.readIn(t); read.Users != 6 || read.Groups != 1 || read.Grants != 9 {
		t.Errorf("read in %+v, want 6 users and 1 group with 9 grants", read)
	}
	// First questions about a user, answered from what is asked (AskedGrants' part) rather
	// than from a user kept whole: carl's through his group, alone and with his own grant.
	for _, q := range []struct {
		path string
		body map[string]any
	}{
		{"/provisions/can_user_access", map[string]any{"user_id": w.carl, "svc_id": w.models[2]}},
		{"/provisions/can_user_access_all", map[string]any{"user_id": w.carl, "tags": []string{w.models[0], w.models[2]}}},
		{"/provisions/can_user_access", map[string]any{"user_id": w.erin, "svc_id": w.models[0]}},
	} {
		r, p := w.res.do("POST", q.path, w.key, q.body), w.plain.do("POST", q.path, w.key, q.body)
		if string(r.Body) != "true" || string(p.Body) != "true" {
			t.Errorf("first question %s %v = %s, the store says %s; want true", q.path, q.body, r.Body, p.Body)
		}
	}
	if read := w.reads.readUsers(); len(read) > 0 {
		t.Errorf("first questions read from the store: %v", read)
	}
	got := w.sameAnswers(t, "read in")
	for _, c := range []struct {
		user, model string
		want        bool
	}{
		{w.ada, w.models[0], true}, {w.ada, w.models[2], false}, {w.bob, w.models[1], true},
		{w.carl, w.models[2], true}, {w.dana, w.models[0], false}, {w.erin, w.models[0], true},
		{w.erin, w.models[1], false}, {w.eve, w.otherModels[0], true},
	} {
		if got[[2]string{c.user, c.model}] != c.want {
			t.Errorf("can_user_access(%s, %s) = %v, want %v", c.user, c.model, !c.want, c.want)
		}
	}
	// Read from the store: only users unknown to the organization asked about.
	want := [][2]string{{w.org, w.eve}, {w.org, "no-such-user"}, {w.otherOrg, w.ada}}
	slices.SortFunc(want, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	if read := w.reads.readUsers(); !slices.Equal(read, want) {
		t.Errorf("read from the store %v, want %v", read, want)
	}

	// Bounded to 5, users and groups counting as a grant: the group (2), then one user.
	bounded := newResidentWorld(t, 5)
	if read := bounded.readIn(t); read.Users != 1 || read.Groups != 1 || read.Users+read.Groups+read.Grants > 5 || !read.Full {
		t.Errorf("bounded to 5: read in %+v", read)
	}
	bounded.sameAnswers(t, "read in up to 5")
}

// TestWritesReachResidentUsers: each write that may change a decision, made after users'
// grants were read in, is seen by the next check exactly as the store sees it (checked against
// a server that keeps nothing, for every user and model), and the user it concerns is read
// from the store from then on; a new resource drops no one.
func TestWritesReachResidentUsers(t *testing.T) {
	type world = residentWorld
	post := func(path string, body func(w *world) map[string]string) func(*world) {
		return func(w *world) { w.res.must("POST", path, w.key, body(w)) }
	}
	scim := func(method string, user func(w *world) string, body string, want int) func(*world) {
		return func(w *world) {
			if r := w.res.scimDo(method, "/scim/v2/Users/"+user(w), w.scim, body); r.Status != want {
				t.Fatalf("%s user = %d %s, want %d", method, r.Status, r.Body, want)
			}
		}
	}
	ada := func(w *world) string { return w.ada }
	tests := []struct {
		name    string
		write   func(w *world)
		changed func(w *world) [2]string // a question whose answer the write turns around
		orgWide bool                     // whether the write drops every user of the organization
	}{
		{"a grant", post("/provisions/add_to_user", func(w *world) map[string]string {
			return map[string]string{"user_id": w.ada, "svc_id": w.models[3]}
		}), func(w *world) [2]string { return [2]string{w.ada, w.models[3]} }, false},
		{"a revoke", post("/provisions/remove_from_user", func(w *world) map[string]string {
			return map[string]string{"user_id": w.ada, "svc_id": w.models[0]}
		}), func(w *world) [2]string { return [2]string{w.ada, w.models[0]} }, false},
		{"a grant made to expire, and expired", func(w *world) {
			expires := w.res.clock.Now().Add(time.Second).Format(time.RFC3339)
			w.res.must("POST", "/provisions/add_to_user", w.key, map[string]string{"user_id": w.ada, "svc_id": w.models[0], "expires_at": expires})
			w.res.clock.Advance(time.Minute)
		}, func(w *world) [2]string { return [2]string{w.ada, w.models[0]} }, false},
		{"a deactivation", scim("PATCH", ada, patchInactive, http.StatusOK),
			func(w *world) [2]string { return [2]string{w.ada, w.models[0]} }, false},
		{"a reactivation", scim("PATCH", func(w *world) string { return w.dana }, patchActive, http.StatusOK),
			func(w *world) [2]string { return [2]string{w.dana, w.models[0]} }, false},
		{"a user deleted", scim("DELETE", ada, "", http.StatusNoContent),
			func(w *world) [2]string { return [2]string{w.ada, w.models[0]} }, false},
		{"a resource removed", post("/llm_integration/remove", func(w *world) map[string]string {
			return map[string]string{"svc_id": w.models[0]}
		}), func(w *world) [2]string { return [2]string{w.ada, w.models[0]} }, true},
		{"a group joined", func(w *world) { w.res.addMember(w.key, w.group, w.ada) },
			func(w *world) [2]string { return [2]string{w.ada, w.models[2]} }, false},
		{"a group left", post("/groups/remove_member", func(w *world) map[string]string {
			return map[string]string{"group_id": w.group, "user_id": w.carl}
		}), func(w *world) [2]string { return [2]string{w.carl, w.models[2]} }, false},
		{"a group's grant revoked", post("/provisions/remove_from_group", func(w *world) map[string]string {
			return map[string]string{"group_id": w.group, "svc_id": w.models[2]}
		}), func(w *world) [2]string { return [2]string{w.carl, w.models[2]} }, false},
		{"a group granted", func(w *world) { w.res.grantGroup(w.key, w.group, w.models[3]) },
			func(w *world) [2]string { return [2]string{w.carl, w.models[3]} }, false},
		{"a new resource granted", func(w *world) {
			m := w.res.model(w.key, "model 4")
			w.models = append(w.models, m)
			w.sameAnswers(t, "after the new resource, before its grant")
			if read := w.reads.readUsers(); slices.Contains(read, [2]string{w.org, w.ada}) {
				t.Errorf("a new resource dropped ada from memory: read %v", read)
			}
			w.res.must("POST", "/provisions/add_to_user", w.key, map[string]string{"user_id": w.ada, "svc_id": m})
		}, func(w *world) [2]string { return [2]string{w.ada, w.models[4]} }, false},
	}
	for _, tc := range tests {
		// Warmed: every user is kept in the cache with their set (WarmCache) before the write.
		for _, warmed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/warmed=%v", tc.name, warmed), func(t *testing.T) {
				w := newResidentWorld(t, 1000)
				w.readIn(t)
				if warmed {
					if n := w.res.srv.WarmCache(context.Background()); n != 6 {
						t.Fatalf("WarmCache kept %d users, want 6", n)
					}
				}
				before := w.sameAnswers(t, "before")
				w.reads.readUsers()
				tc.write(w)
				w.readAfterWrite(t, tc.name, before, tc.changed(w), tc.orgWide)
			})
		}
	}
}

// TestWritesDuringReadInAreKept: a write made while users' grants are being read in, after the
// users it concerns were read, is not undone when what was read is kept: those users are read
// from the store from then on, and every other user is kept.
func TestWritesDuringReadInAreKept(t *testing.T) {
	tests := []struct {
		name    string
		write   func(w *residentWorld)
		changed func(w *residentWorld) [2]string // a question whose answer the write turns around
		orgWide bool                             // whether the write drops every user of the organization
		dropped int                              // users read in but not kept
	}{
		{"a grant", func(w *residentWorld) {
			w.res.must("POST", "/provisions/add_to_user", w.key, map[string]string{"user_id": w.ada, "svc_id": w.models[3]})
		}, func(w *residentWorld) [2]string { return [2]string{w.ada, w.models[3]} }, false, 1},
		{"a resource removed", func(w *residentWorld) {
			w.res.must("POST", "/llm_integration/remove", w.key, map[string]string{"svc_id": w.models[0]})
		}, func(w *residentWorld) [2]string { return [2]string{w.ada, w.models[0]} }, true, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newResidentWorld(t, 1000)
			before := w.sameAnswers(t, "before")
			w.reads.scanned = func() { tc.write(w) }
			read, err := w.res.srv.ReadIn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if read.Users != 6 || read.Dropped != tc.dropped {
				t.Errorf("read in %d users, %d of them dropped; want 6 and %d", read.Users, read.Dropped, tc.dropped)
			}
			w.reads.readUsers()
			w.readAfterWrite(t, tc.name, before, tc.changed(w), tc.orgWide)
		})
	}
}

// TestResidentIndexIsReadInAgain: KeepResident reads users' grants in at once, and again once
// writes have dropped (or created) enough users, the users held then answering from memory
// as the store does; with nothing written, it reads nothing again.
func TestResidentIndexIsReadInAgain(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *residentWorld) (held []string) // users then held, in w.org
		users int                                    // users read in again
	}{
		{"a resource removed", func(w *residentWorld) []string {
			w.res.must("POST", "/llm_integration/remove", w.key, map[string]string{"svc_id": w.models[0]})
			return []string{w.ada, w.bob, w.carl, w.dana, w.erin}
		}, 6},
		{"a user created and granted", func(w *residentWorld) []string {
			frank := w.res.scimUser(w.scim, "frank")
			w.res.must("POST", "/provisions/add_to_user", w.key, map[string]string{"user_id": frank, "svc_id": w.models[3]})
			return []string{w.ada, w.carl, frank}
		}, 7},
		{"nothing written", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newResidentWorld(t, 1000)
			ctx, cancel := context.WithCancel(context.Background())
			reads := make(chan api.ResidentRead, 10)
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.res.srv.KeepResident(ctx, 5*time.Millisecond, func(read api.ResidentRead, _ time.Duration, err error) {
					if err != nil {
						t.Errorf("read-in: %v", err)
					}
					reads <- read
				})
			}()
			defer func() { cancel(); <-done }()
			next := func(within time.Duration) (api.ResidentRead, bool) {
				select {
				case read := <-reads:
					return read, true
				case <-time.After(within):
					return api.ResidentRead{}, false
				}
			}
			if read, ok := next(10 * time.Second); !ok || read.Users != 6 {
				t.Fatalf("first read-in: %+v (%v), want 6 users", read, ok)
			}
			if tc.write == nil {
				if read, ok := next(300 * time.Millisecond); ok {
					t.Errorf("read in again with nothing written: %+v", read)
				}
				return
			}
			held := tc.write(w)
			read, ok := next(10 * time.Second)
			if !ok || read.Users != tc.users {
				t.Fatalf("read-in after the write: %+v (%v), want %d users", read, ok, tc.users)
			}
			if w.res.srv.ResidentReading() {
				t.Error("ResidentReading after the read-in ended")
			}
			w.reads.readUsers()
			w.sameAnswers(t, "after reading in again")
			fromStore := w.reads.readUsers()
			for _, u := range held {
				if slices.Contains(fromStore, [2]string{w.org, u}) {
					t.Errorf("%s read from the store after reading in again: %v", u, fromStore)
				}
			}
		})
	}
}
