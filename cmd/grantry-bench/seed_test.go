package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/rego"
	"google.golang.org/grpc"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/extauthz"
	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// wrapperModules are Grantry's policy, the wrapper and the wrapper's tests, as OPA's server and
// `opa test` see them.
func wrapperModules(tb testing.TB) []policy.Module {
	tb.Helper()
	var mods []policy.Module
	for _, m := range policy.Embedded() {
		if !m.IsTest() {
			mods = append(mods, m)
		}
	}
	tests, err := os.ReadFile("wrapper_test.rego")
	if err != nil {
		tb.Fatal(err)
	}
	return append(mods, policy.Module{Name: "wrapper.rego", Source: wrapperRego}, policy.Module{Name: "wrapper_test.rego", Source: string(tests)})
}

// TestWrapperRegoTests runs wrapper_test.rego.
func TestWrapperRegoTests(t *testing.T) {
	ran, failures, err := policy.RunTests(t.Context(), wrapperModules(t))
	if err != nil {
		t.Fatal(err)
	}
	if ran < 8 {
		t.Errorf("ran %d Rego tests, want every test of wrapper_test.rego", ran)
	}
	for _, f := range failures {
		t.Errorf("Rego test %s", f)
	}
}

// seeded is a small workload written for both Grantry and OPA.
type seeded struct {
	w   *workload
	dir string
	key string
}

func seedSmall(tb testing.TB) seeded {
	tb.Helper()
	w := mustWorkload(tb, smallParams())
	dir := tb.TempDir()
	if err := seedGrantry(tb.Context(), dir, w); err != nil {
		tb.Fatal(err)
	}
	if err := seedOPA(dir, w); err != nil {
		tb.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		tb.Fatal(err)
	}
	return seeded{w: w, dir: dir, key: string(key)}
}

// grantryServer serves Grantry's real router on the seeded store.
func (s seeded) grantryServer(tb testing.TB) *httptest.Server {
	srv, _ := s.grantryServers(tb)
	return srv
}

// grantryServers serves Grantry's real router on the seeded store, with its gateways set up as
// the bench's Grantry has them, and its Envoy ext_authz server over gRPC at grpcAddr.
func (s seeded) grantryServers(tb testing.TB) (srv *httptest.Server, grpcAddr string) {
	tb.Helper()
	store, err := bolt.Open(tb.Context(), filepath.Join(s.dir, grantryDir, "grantry.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close(context.Background()) })
	g := serveGrantry(tb, store, false)
	return g.http, g.extAuthz(tb)
}

// served is Grantry's router served over HTTP, and its gateway.
type served struct {
	http   *httptest.Server
	api    *api.Server
	engine *authz.Engine
	gw     *gateway.Gateway
}

// serveGrantry serves Grantry's router on store, its gateway reading users from
// benchUserHeader; shared says the store is shared with other servers (MongoDB).
func serveGrantry(tb testing.TB, store storage.Store, shared bool) served {
	tb.Helper()
	engine, err := policy.New(tb.Context(), policy.Embedded())
	if err != nil {
		tb.Fatal(err)
	}
	eng := authz.New(authz.Config{Store: store, Policies: policy.NewLive(engine), Shared: shared})
	a := api.New(api.Config{Store: eng.Store(), Decider: eng})
	gw, err := gateway.New(gateway.Config{UserHeader: benchUserHeader}, a, a, a)
	if err != nil {
		tb.Fatal(err)
	}
	a.SetGateway(gw)
	srv := httptest.NewServer(a)
	tb.Cleanup(srv.Close)
	return served{http: srv, api: a, engine: eng, gw: gw}
}

// extAuthz serves the server's ext_authz over gRPC on a loopback port and returns its address.
func (s served) extAuthz(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	g := grpc.NewServer()
	extauthz.New(s.gw, s.api, 0, nil).Register(g)
	go g.Serve(ln)
	tb.Cleanup(g.Stop)
	return ln.Addr().String()
}

// TestLoadAgainstGrantry drives Grantry's real router, on a store seeded by seedGrantry, with the
// load generator's own requests: every check must get the answer the workload knows, and every
// grant and revoke must succeed. It is the proof that the seeded store, the API key and the
// requests fit together, so that a `wrong` of 0 in the table means something.
func TestLoadAgainstGrantry(t *testing.T) {
	s := seedSmall(t)
	srv, grpcAddr := s.grantryServers(t)
	tests := []struct {
		target string
		window time.Duration
	}{
		{targetGrantry, 300 * time.Millisecond},
		{targetReplicas, 300 * time.Millisecond},
		{targetForwardAuth, 300 * time.Millisecond},
		{targetExtAuthz, 300 * time.Millisecond},
		// A write waits for its commit's fsync, which the disk of a CI machine running every
		// package's tests at once has held past 300 ms; measureSome then measures longer.
		{targetWrites, 300 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			tg, err := newTarget(tc.target, s.w)
			if err != nil {
				t.Fatal(err)
			}
			addr := srv.Listener.Addr().String()
			if tc.target == targetExtAuthz {
				addr = grpcAddr
			}
			g := &generator{target: tg, addrs: []string{addr}, key: s.key, conns: 4}
			res := measureSome(t, g, tc.window)
			if res.Requests == 0 || res.Mismatches != 0 || res.Errors != 0 {
				t.Errorf("%d requests, %d wrong, %d errors (first: %s); want some, all right", res.Requests, res.Mismatches, res.Errors, res.FirstError)
			}
		})
	}
}

// TestLoadCountsWrongAnswers checks the other side: answers that differ from the workload's are
// counted as wrong, a gateway's 403 for its 200 and the other way round included, and failures
// as errors. A key of another organization makes Grantry answer 401 to every request.
func TestLoadCountsWrongAnswers(t *testing.T) {
	s := seedSmall(t)
	srv, grpcAddr := s.grantryServers(t)
	tests := []struct {
		name      string
		target    string
		key       string
		flip      bool // expect the opposite of every answer
		wantWrong bool
		wantError bool
	}{
		{name: "every answer flipped", target: targetGrantry, key: s.key, flip: true, wantWrong: true},
		{name: "every forward-auth answer flipped", target: targetForwardAuth, key: s.key, flip: true, wantWrong: true},
		{name: "every ext_authz answer flipped", target: targetExtAuthz, key: s.key, flip: true, wantWrong: true},
		{name: "unknown key", target: targetGrantry, key: "gry_unknown", wantError: true},
		{name: "unknown key, ext_authz", target: targetExtAuthz, key: "gry_unknown", wantError: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := *s.w
			if tc.flip {
				w.Checks = make([]pair, len(s.w.Checks))
				for i, c := range s.w.Checks {
					c.Granted = !c.Granted
					w.Checks[i] = c
				}
			}
			tg, err := newTarget(tc.target, &w)
			if err != nil {
				t.Fatal(err)
			}
			addr := srv.Listener.Addr().String()
			if tc.target == targetExtAuthz {
				addr = grpcAddr
			}
			g := &generator{target: tg, addrs: []string{addr}, key: tc.key, conns: 2}
			res := measureSome(t, g, 200*time.Millisecond)
			if got := res.Mismatches > 0 && res.Mismatches == res.Requests; got != tc.wantWrong {
				t.Errorf("%d of %d answers counted wrong; want all: %v", res.Mismatches, res.Requests, tc.wantWrong)
			}
			if got := res.Errors > 0 && res.Requests == 0; got != tc.wantError {
				t.Errorf("%d errors, %d answers; want only errors: %v", res.Errors, res.Requests, tc.wantError)
			}
		})
	}
}

// TestOPAAnswersTheWorkload evaluates, in process, what each OPA server is started with (the
// files seedOPA and seedOPALight write) on the very bodies the load generator sends it, and
// checks that every answer is the one the load generator expects.
func TestOPAAnswersTheWorkload(t *testing.T) {
	s := seedSmall(t)
	if err := seedOPALight(s.dir, s.w); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, query, path, dir string
		files                    []string
	}{
		{targetOPA, "data.grantry.bench.allow", opaQueryPath, opaDir, []string{"authz.rego", "wrapper.rego", opaDataFile}},
		{targetOPALight, "data.grantry.light.allow", opaLightQueryPath, opaLightDir, []string{"light.rego", opaDataFile}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			var files []string
			for _, f := range tc.files {
				files = append(files, filepath.Join(s.dir, tc.dir, f))
			}
			pq, err := rego.New(rego.Query(tc.query), rego.Load(files, nil)).PrepareForEval(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			tg, err := newTarget(tc.target, s.w)
			if err != nil {
				t.Fatal(err)
			}
			granted := 0
			for _, c := range s.w.Checks[:500] {
				x := tg.ask(c, nil)[0]
				if x.path != tc.path {
					t.Fatalf("path %s, want %s", x.path, tc.path)
				}
				var body struct{ Input map[string]any }
				if err := json.Unmarshal(x.body, &body); err != nil {
					t.Fatalf("body %s: %v", x.body, err)
				}
				rs, err := pq.Eval(t.Context(), rego.EvalInput(body.Input))
				if err != nil {
					t.Fatal(err)
				}
				answer, err := json.Marshal(map[string]any{"result": rs[0].Expressions[0].Value})
				if err != nil {
					t.Fatal(err)
				}
				if string(answer) != string(x.want) {
					t.Fatalf("check %+v: OPA answers %s, the load generator expects %s", c, answer, x.want)
				}
				if c.Granted {
					granted++
				}
			}
			if granted == 0 || granted == 500 {
				t.Errorf("%d of 500 checks granted; the test needs both answers", granted)
			}
		})
	}
}

// measureSome measures g for window, and again for twice as long while no exchange was answered
// within it: only answers that arrive within the window count, and a machine busy with other
// work may answer none in a short one.
func measureSome(t *testing.T, g *generator, window time.Duration) loadResult {
	t.Helper()
	for {
		res, err := g.measure(t.Context(), 0, window, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests+res.Errors > 0 || window >= time.Minute {
			return res
		}
		t.Logf("no answer within %s; measuring again for twice as long", window)
		window *= 2
	}
}

// TestSeededUsersHaveAttributes: every seeded user has an email of the bench's domain and its
// department as attributes, as the grantry-abac row's policy reads them.
func TestSeededUsersHaveAttributes(t *testing.T) {
	s := seedSmall(t)
	store, err := bolt.Open(t.Context(), filepath.Join(s.dir, grantryDir, "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(context.Background())
	users, total, err := store.IntegrationUsers(t.Context(), s.w.OrgID, "00000000-0000-4000-8000-000000000001", 0, s.w.Users)
	if err != nil || total != s.w.Users {
		t.Fatalf("IntegrationUsers = %d users of %d, %v; want %d", len(users), total, err, s.w.Users)
	}
	for _, u := range users {
		var n int
		if _, err := fmt.Sscanf(u.ID, "user-%d", &n); err != nil {
			t.Fatalf("user id %q: %v", u.ID, err)
		}
		var attrs map[string]string
		if err := json.Unmarshal(u.Attributes, &attrs); err != nil {
			t.Fatalf("user %s attributes %q: %v", u.ID, u.Attributes, err)
		}
		if diff := cmp.Diff(map[string]string{"department": s.w.department(n)}, attrs); diff != "" || u.Email != userEmail(n) {
			t.Errorf("user %s: email %q, attributes (-want +got):\n%s", u.ID, u.Email, diff)
		}
	}
}
