package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/client"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// world is a real Grantry server with an organization holding the model "gpt", the user
// "ada", and a client of it.
type world struct {
	c     *client.Client
	model string
}

func newWorld(t *testing.T) world {
	t.Helper()
	engine, err := policy.New(context.Background(), policy.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	eng := authz.New(authz.Config{Store: bolttest.Open(t), Policies: policy.NewLive(engine)})
	srv := httptest.NewServer(api.New(api.Config{Store: eng.Store(), Decider: eng, AdminToken: "admin"}))
	t.Cleanup(srv.Close)
	post := func(path, token, body string) map[string]any {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	key := post("/admin/orgs", "admin", `{"name":"acme"}`)["api_key"].(string)
	model := post("/llm_integration/custom_model", key, `{"model_name":"gpt"}`)["model"].(map[string]any)["id"].(string)
	integ := post("/auth_integration/create", key, `{"name":"idp"}`)["auth_integration"].(map[string]any)["id"].(string)
	post("/users/import", key, `{"auth_integration_id":"`+integ+`","users":[{"id":"ada","email":"ada@example.com","first":"A","last":"L"}]}`)
	c, err := client.New(srv.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return world{c: c, model: model}
}

func TestClientAgainstTheServer(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if ok, err := w.c.CanUserAccess(ctx, "ada", w.model); err != nil || ok {
		t.Fatalf("before the grant: %v %v", ok, err)
	}
	if err := w.c.Grant(ctx, "ada", w.model); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.c.CanUserAccess(ctx, "ada", w.model); err != nil || !ok {
		t.Fatalf("after the grant: %v %v", ok, err)
	}
	if ok, err := w.c.CanUserAccessAll(ctx, "ada", []string{w.model}); err != nil || !ok {
		t.Fatalf("all: %v %v", ok, err)
	}
	id := "one"
	res, err := w.c.CheckBatch(ctx, []client.Check{{UserID: "ada", SvcID: w.model, CorrelationID: &id}, {UserID: "bob", SvcID: w.model}})
	if err != nil || len(res) != 2 || !res[0].Allowed || *res[0].CorrelationID != "one" || res[1].Allowed {
		t.Fatalf("batch: %+v %v", res, err)
	}
	models, err := w.c.Models(ctx, "ada")
	if err != nil || len(models) != 1 || models[0].ModelName != "gpt" {
		t.Fatalf("models of ada: %+v %v", models, err)
	}
	if users, err := w.c.Users(ctx); err != nil || len(users) != 1 || users[0].ResourceList[0].Name != "gpt" {
		t.Fatalf("users: %+v %v", users, err)
	}
	if left, err := w.c.Revoke(ctx, "ada", w.model); err != nil || len(left) != 0 {
		t.Fatalf("revoke: %+v %v", left, err)
	}
	if ok, _ := w.c.CanUserAccess(ctx, "ada", w.model); ok {
		t.Fatal("allowed after the revoke")
	}
	if _, err := w.c.Revoke(ctx, "nobody", w.model); !client.IsNotFound(err) {
		t.Fatalf("revoke from an unknown user: %v, want a 404", err)
	}
	if _, err := w.c.CanUserAccess(ctx, "ada", "not-a-uuid"); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("a bad id: %v, want a 422", err)
	}
}

// flaky answers status with Retry-After retry the first fails times, then true.
func flaky(t *testing.T, fails int, status int, retry string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(n.Add(1)) <= fails {
			if retry != "" {
				w.Header().Set("Retry-After", retry)
			}
			w.WriteHeader(status)
			w.Write([]byte(`{"detail":"busy"}`))
			return
		}
		w.Write([]byte("true"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClientRetries(t *testing.T) {
	tests := []struct {
		name    string
		fails   int
		status  int
		retry   string
		retries int
		want    error // nil: true in the end
		tries   int32
	}{
		{"429 then an answer", 2, http.StatusTooManyRequests, "", 3, nil, 3},
		{"503 with Retry-After", 1, http.StatusServiceUnavailable, "1", 3, nil, 2},
		{"gives up after the retries", 5, http.StatusServiceUnavailable, "", 2, &client.Error{}, 3},
		{"no retry on 401", 1, http.StatusUnauthorized, "", 3, &client.Error{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := flaky(t, tt.fails, tt.status, tt.retry)
			c, _ := client.New(srv.URL, "k", client.WithRetries(tt.retries), client.WithBackoff(time.Millisecond, 2*time.Second))
			start := time.Now()
			ok, err := c.CanUserAccess(context.Background(), "ada", "x")
			if n.Load() != tt.tries {
				t.Errorf("tried %d times, want %d", n.Load(), tt.tries)
			}
			if tt.want == nil && (err != nil || !ok) {
				t.Fatalf("%v %v, want true", ok, err)
			}
			var e *client.Error
			if tt.want != nil && (!errors.As(err, &e) || e.Status != tt.status) {
				t.Fatalf("%v, want a %d", err, tt.status)
			}
			if tt.retry == "1" && time.Since(start) < time.Second {
				t.Errorf("retried after %s, before Retry-After", time.Since(start))
			}
		})
	}
}

func TestClientKeepsTheDeadline(t *testing.T) {
	srv, n := flaky(t, 10, http.StatusServiceUnavailable, "30")
	c, _ := client.New(srv.URL, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.CanUserAccess(ctx, "ada", "x")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.RetryAfter != 30*time.Second || n.Load() != 1 {
		t.Fatalf("%v after %d tries: want the 503 at once, as waiting 30 s would pass the deadline", err, n.Load())
	}
}

func TestMiddleware(t *testing.T) {
	w := newWorld(t)
	if err := w.c.Grant(context.Background(), "ada", w.model); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /models/{id}/chat", w.c.Middleware(client.Gate{
		User:     func(r *http.Request) string { return r.Header.Get("X-User") },
		Resource: func(r *http.Request) string { return r.PathValue("id") },
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })))
	for _, tt := range []struct {
		user, model string
		status      int
	}{
		{"ada", w.model, 200},
		{"bob", w.model, 403},
		{"", w.model, 401},
		{"ada", "not-a-uuid", 403},
	} {
		req := httptest.NewRequest("POST", "/models/"+tt.model+"/chat", nil)
		if tt.user != "" {
			req.Header.Set("X-User", tt.user)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s on %s: %d %s, want %d", tt.user, tt.model, rec.Code, rec.Body, tt.status)
		}
	}
}
