package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/internal/decisionlog"
)

// recorded keeps the decisions a server logs.
type recorded struct {
	mu      sync.Mutex
	entries []decisionlog.Entry
}

func (r *recorded) Record(e decisionlog.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

func (r *recorded) last(tb testing.TB) decisionlog.Entry {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) == 0 {
		tb.Fatal("no decision was logged")
	}
	return r.entries[len(r.entries)-1]
}

// gatewayFixture is a fixture whose gateway endpoints are on, reading users from X-User,
// models from the body, X-Model or /deployments/{model}/, with the alias "fast" for
// "gpt-4o-mini"; an organization with two models, a user granted one of them, and its key.
type gatewayFixture struct {
	*fixture
	log                 *recorded
	key, user, other    string
	allowedID, deniedID string
}

func newGatewayFixture(tb testing.TB) *gatewayFixture {
	tb.Helper()
	log := &recorded{}
	f := newFixture(tb, func(c *fixtureConfig) { c.Decisions = log })
	g, err := gateway.New(gateway.Config{
		UserHeader: "X-User", ModelHeader: "X-Model", ModelPath: "/deployments/{model}/",
		Aliases: map[string]string{"fast": "gpt-4o-mini"},
	}, f.srv, f.srv, f.srv)
	if err != nil {
		tb.Fatal(err)
	}
	f.srv.SetGateway(g)
	_, key := f.org("acme")
	gf := &gatewayFixture{fixture: f, log: log, key: key}
	gf.allowedID = f.model(key, "gpt-4o-mini")
	gf.deniedID = f.model(key, "gpt-4o")
	gf.user = f.user(key, "ada@example.com")
	gf.other = f.user(key, "bob@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": gf.user, "svc_id": gf.allowedID})
	return gf
}

// ask sends a forward-auth request to path with the gateway's key and headers h (pairs).
func (f *gatewayFixture) ask(method, path string, body string, h ...string) response {
	f.tb.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader([]byte(body)))
	req.Header.Set(api.GatewayKeyHeader, f.key)
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func chat(model string) string {
	return `{"messages":[{"role":"user","content":"hi"}],"model":"` + model + `","stream":false}`
}

func TestForwardAuthDecides(t *testing.T) {
	f := newGatewayFixture(t)
	tests := []struct {
		name       string
		method     string
		path, body string
		headers    []string
		status     int
		reason     string
	}{
		{"granted model in the body", "POST", "/gateway/auth", chat("gpt-4o-mini"), []string{"X-User", f.user}, 200, ""},
		{"alias of a granted model", "POST", "/gateway/auth", chat("fast"), []string{"X-User", f.user}, 200, ""},
		{"model not granted", "POST", "/gateway/auth", chat("gpt-4o"), []string{"X-User", f.user}, 403, gateway.ReasonNotPermitted},
		{"unregistered model", "POST", "/gateway/auth", chat("gpt-5"), []string{"X-User", f.user}, 403, gateway.ReasonNotPermitted},
		{"user without the grant", "POST", "/gateway/auth", chat("gpt-4o-mini"), []string{"X-User", f.other}, 403, gateway.ReasonNotPermitted},
		{"user unknown to the organization", "POST", "/gateway/auth", chat("gpt-4o-mini"), []string{"X-User", "nobody"}, 403, gateway.ReasonNotPermitted},
		{"no user", "POST", "/gateway/auth", chat("gpt-4o-mini"), nil, 401, gateway.ReasonNoUser},
		{"no model anywhere", "POST", "/gateway/auth", `{"messages":[]}`, []string{"X-User", f.user}, 403, gateway.ReasonNoModel},
		{"body that is not JSON, model in a header", "POST", "/gateway/auth", "a=b", []string{"X-User", f.user, "X-Model", "gpt-4o-mini"}, 200, ""},
		{"the body wins over the header", "POST", "/gateway/auth", chat("gpt-4o"), []string{"X-User", f.user, "X-Model", "gpt-4o-mini"}, 403, gateway.ReasonNotPermitted},
		{"model in the forwarded path (Caddy, Traefik)", "GET", "/gateway/auth", "", []string{"X-User", f.user, "X-Forwarded-Method", "POST", "X-Forwarded-Uri", "/deployments/gpt-4o-mini/chat/completions?api-version=1"}, 200, ""},
		{"model in the path after the prefix (Envoy)", "POST", "/gateway/auth/deployments/gpt-4o/chat/completions", "", []string{"X-User", f.user}, 403, gateway.ReasonNotPermitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqID := "gw-" + strings.ReplaceAll(tt.name, " ", "-")
			r := f.ask(tt.method, tt.path, tt.body, append(tt.headers, "X-Request-Id", reqID)...)
			if r.Status != tt.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.status)
			}
			if tt.status == 200 {
				if r.Header.Get("X-Grantry-Decision-Id") == "" || r.Header.Get("X-Grantry-User") != f.user {
					t.Errorf("headers %v: want a decision id and the user", r.Header)
				}
				return
			}
			body := decode[struct {
				Detail, Reason string
				DecisionID     string `json:"decision_id"`
			}](t, r)
			if body.Reason != tt.reason || body.Detail == "" {
				t.Errorf("body %s: want reason %q and a detail", r.Body, tt.reason)
			}
			if tt.status == 401 {
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				return
			}
			e := f.log.last(t)
			if e.RequestID != reqID || e.Endpoint != gateway.EndpointForwardAuth || e.Allowed || e.ID != body.DecisionID {
				t.Errorf("logged %+v, want a denial of request %s with id %s", e, reqID, body.DecisionID)
			}
		})
	}
}

func TestForwardAuthLogsAndFollowsRevokes(t *testing.T) {
	f := newGatewayFixture(t)
	r := f.ask("POST", "/gateway/auth", chat("gpt-4o-mini"), "X-User", f.user, "X-Request-Id", "req-1")
	if r.Status != 200 {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	e := f.log.last(t)
	if e.ID != r.Header.Get("X-Grantry-Decision-Id") || e.RequestID != "req-1" || !e.Allowed || !slices.Equal(e.ResourceIDs, []string{f.allowedID}) || e.UserID != f.user {
		t.Errorf("logged %+v", e)
	}
	f.must("POST", "/provisions/remove_from_user", f.key, map[string]string{"user_id": f.user, "svc_id": f.allowedID})
	if r := f.ask("POST", "/gateway/auth", chat("gpt-4o-mini"), "X-User", f.user); r.Status != 403 {
		t.Fatalf("after the revoke: status %d %s, want 403", r.Status, r.Body)
	}
	// A model registered after the index of names was read is found at once.
	id := f.model(f.key, "o3")
	f.must("POST", "/provisions/add_to_user", f.key, map[string]string{"user_id": f.user, "svc_id": id})
	if r := f.ask("POST", "/gateway/auth", chat("o3"), "X-User", f.user); r.Status != 200 {
		t.Fatalf("new model: status %d %s, want 200", r.Status, r.Body)
	}
}

func TestForwardAuthNeedsTheGatewayKey(t *testing.T) {
	f := newGatewayFixture(t)
	for _, key := range []string{"", "gry_unknown", "Bearer " + f.key} {
		req := httptest.NewRequest("POST", "/gateway/auth", bytes.NewReader([]byte(chat("gpt-4o-mini"))))
		req.Header.Set("X-User", f.user)
		if key != "" {
			req.Header.Set(api.GatewayKeyHeader, key)
		}
		// The client's own Authorization header names no organization here.
		req.Header.Set("Authorization", "Bearer "+f.key)
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		want := http.StatusUnauthorized
		if key == "Bearer "+f.key {
			want = http.StatusOK
		}
		if rec.Code != want {
			t.Errorf("key %q: status %d %s, want %d", key, rec.Code, rec.Body, want)
		}
	}
	// A key of scope check is enough.
	check := decode[struct {
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/api_keys", f.key, map[string]string{"scope": "check"}))
	f.key = check.APIKey
	if r := f.ask("POST", "/gateway/auth", chat("gpt-4o-mini"), "X-User", f.user); r.Status != 200 {
		t.Errorf("check key: status %d %s", r.Status, r.Body)
	}
}

func TestForwardAuthAccelRedirect(t *testing.T) {
	f := newGatewayFixture(t)
	r := f.ask("POST", "/gateway/auth/v1/chat/completions", chat("gpt-4o-mini"), "X-User", f.user, "X-Grantry-Accel-Redirect", "@llm")
	if r.Status != 200 || r.Header.Get("X-Accel-Redirect") != "@llm" {
		t.Errorf("allowed: status %d, X-Accel-Redirect %q", r.Status, r.Header.Get("X-Accel-Redirect"))
	}
	r = f.ask("POST", "/gateway/auth/v1/chat/completions", chat("gpt-4o"), "X-User", f.user, "X-Grantry-Accel-Redirect", "@llm")
	if r.Status != 403 || r.Header.Get("X-Accel-Redirect") != "" {
		t.Errorf("denied: status %d, X-Accel-Redirect %q", r.Status, r.Header.Get("X-Accel-Redirect"))
	}
	// Only a named location: a path could send nginx anywhere.
	r = f.ask("POST", "/gateway/auth", chat("gpt-4o-mini"), "X-User", f.user, "X-Grantry-Accel-Redirect", "/internal/secret")
	if r.Header.Get("X-Accel-Redirect") != "" {
		t.Errorf("X-Accel-Redirect %q for a path", r.Header.Get("X-Accel-Redirect"))
	}
}

func TestGatewayModelList(t *testing.T) {
	f := newGatewayFixture(t)
	type list struct {
		Object string
		Data   []struct {
			ID, Object string
			OwnedBy    string `json:"owned_by"`
		}
	}
	ids := func(l list) []string {
		var out []string
		for _, m := range l.Data {
			out = append(out, m.ID)
		}
		return out
	}
	r := f.ask("GET", "/gateway/v1/models", "", "X-User", f.user)
	l := decode[list](t, r)
	if r.Status != 200 || l.Object != "list" || !slices.Equal(ids(l), []string{"gpt-4o-mini", "fast"}) {
		t.Errorf("models of the user: %d %s", r.Status, r.Body)
	}
	if l.Data[0].OwnedBy != "custom" {
		t.Errorf("owned_by %q, want custom", l.Data[0].OwnedBy)
	}
	for _, user := range []string{f.other, "nobody"} {
		r = f.ask("GET", "/gateway/v1/models/", "", "X-User", user)
		if r.Status != 200 || len(decode[list](t, r).Data) != 0 {
			t.Errorf("models of %s: %d %s, want none", user, r.Status, r.Body)
		}
	}
	if r = f.ask("GET", "/gateway/v1/models", ""); r.Status != 401 {
		t.Errorf("no user: %d %s", r.Status, r.Body)
	}
}

func TestGatewayOffAnswers404(t *testing.T) {
	f := newFixture(t)
	if r := f.do("POST", "/gateway/auth", "", nil); r.Status != 404 {
		t.Errorf("status %d, want 404", r.Status)
	}
}
