package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the bodies the server gives now")

const adminToken = "test-admin-token"

// fixture is a Grantry server on a fresh embedded store, driven through its real router.
type fixture struct {
	tb     testing.TB
	srv    *api.Server
	engine *authz.Engine
	store  storage.Store // the embedded store, beneath the engine
	clock  *clock
	cfg    fixtureConfig // what srv was made with
}

// fixtureConfig is what a fixture's server and its decision engine are made from: the
// server's Store and Decider are the engine's, as store and decider change them when set.
type fixtureConfig struct {
	api.Config
	Engine  authz.Config
	store   func(storage.Store) storage.Store
	decider func(api.Decider) api.Decider
}

// clock is a settable time source, so tests can see timestamps move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixtureOption func(*fixtureConfig)

func newFixture(tb testing.TB, opts ...fixtureOption) *fixture {
	tb.Helper()
	ctx := context.Background()
	store := bolttest.OpenNoSync(tb)
	engine, err := policy.New(ctx, policy.Embedded())
	if err != nil {
		tb.Fatal(err)
	}
	clk := &clock{now: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)}
	cfg := fixtureConfig{Config: api.Config{AdminToken: adminToken, Now: clk.Now}, Engine: authz.Config{Store: store, Policies: policy.NewLive(engine)}}
	for _, o := range opts {
		o(&cfg)
	}
	f := &fixture{tb: tb, store: store, clock: clk, cfg: cfg}
	f.serve()
	return f
}

// serve makes f's engine and server from f.cfg.
func (f *fixture) serve() {
	f.engine = authz.New(f.cfg.Engine)
	c := f.cfg.Config
	c.Store, c.Decider = f.engine.Store(), f.engine
	if f.cfg.store != nil {
		c.Store = f.cfg.store(c.Store)
	}
	if f.cfg.decider != nil {
		c.Decider = f.cfg.decider(f.engine)
	}
	f.srv = api.New(c)
}

// withPolicy makes the fixture decide with the policy p gives.
func withPolicy(p authz.Policies) fixtureOption {
	return func(c *fixtureConfig) { c.Engine.Policies = p }
}

// withMaxUsers bounds the users the engine holds; less than zero holds none.
func withMaxUsers(n int) fixtureOption {
	return func(c *fixtureConfig) { c.Engine.MaxUsers = n }
}

// replica returns a second server, with an engine of its own, on f's store and clock, made as
// f's was and then changed by opts: another replica of the service, or the same one with
// settings that would get in the way of preparing the store through f (a request timeout that
// a commit on a loaded machine may exceed).
func (f *fixture) replica(opts ...fixtureOption) *fixture {
	f.tb.Helper()
	r := &fixture{tb: f.tb, store: f.store, clock: f.clock, cfg: f.cfg}
	for _, o := range opts {
		o(&r.cfg)
	}
	r.serve()
	return r
}

// response is what a request got back.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a value of type T.
func decode[T any](tb testing.TB, r response) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		tb.Fatalf("body %s: %v", r.Body, err)
	}
	return v
}

// do sends a request with a bearer token (none if empty) and a JSON body (none if nil; a string
// is sent as it is, anything else is encoded).
func (f *fixture) do(method, path, token string, body any) response {
	f.tb.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			f.tb.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// must sends a request that must answer 200, and returns the body.
func (f *fixture) must(method, path, token string, body any) response {
	f.tb.Helper()
	r := f.do(method, path, token, body)
	if r.Status != http.StatusOK {
		f.tb.Fatalf("%s %s = %d %s, want 200", method, path, r.Status, r.Body)
	}
	return r
}

// org creates an organization through the admin API and returns its id and first API key.
func (f *fixture) org(name string) (id, key string) {
	f.tb.Helper()
	o := decode[struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}](f.tb, f.must("POST", "/admin/orgs", adminToken, map[string]string{"name": name}))
	return o.ID, o.APIKey
}

// model registers a custom model and returns its id.
func (f *fixture) model(key, name string) string {
	f.tb.Helper()
	return decode[struct{ Model struct{ ID string } }](f.tb, f.must("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": name})).Model.ID
}

// user imports one user through a new auth integration and returns the user's id.
func (f *fixture) user(key, email string) string {
	f.tb.Helper()
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](f.tb,
		f.must("POST", "/auth_integration/create", key, map[string]string{"name": "import-" + email}))
	users := decode[struct{ Users []struct{ ID string } }](f.tb, f.must("POST", "/users/import", key, map[string]any{
		"auth_integration_id": integ.AuthIntegration.ID,
		"users":               []map[string]string{{"email": email, "first": "F", "last": "L"}},
	}))
	return users.Users[0].ID
}

// check asks can_user_access.
func (f *fixture) check(key, userID, svcID string) bool {
	f.tb.Helper()
	return decode[bool](f.tb, f.must("POST", "/provisions/can_user_access", key, map[string]string{"user_id": userID, "svc_id": svcID}))
}

// golden compares got with testdata/api/<name>.json, or rewrites that file under -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("..", "testdata", "api", name+".json")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		tb.Fatalf("%s: body %q is not JSON: %v", name, got, err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test ./api -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
		tb.Errorf("%s: body differs from %s (-want +got):\n%s", name, path, diff)
	}
}

func jsonEqual(tb testing.TB, got []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("want %q: %v", want, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		tb.Errorf("body (-want +got):\n%s", diff)
	}
}
