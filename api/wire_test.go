package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"not bearer", "Basic " + key, http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"unknown key", "Bearer gry_0000000000000000000000000000000000000000000", http.StatusUnauthorized},
		{"admin token is not an API key", "Bearer " + adminToken, http.StatusUnauthorized},
		{"valid key", "Bearer " + key, http.StatusOK},
		{"scheme in lower case", "bearer " + key, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/functions/list", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status = %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			if tc.want == http.StatusUnauthorized {
				jsonEqual(t, rec.Body.Bytes(), `{"detail":"Not authenticated"}`)
				if got := rec.Header().Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate = %q, want Bearer", got)
				}
			}
		})
	}
}

func TestEveryAPIRouteNeedsAKey(t *testing.T) {
	f := newFixture(t)
	routes := [][2]string{
		{"POST", "/provisions/can_user_access"}, {"POST", "/provisions/can_user_access_all"},
		{"POST", "/provisions/add_to_user"}, {"POST", "/provisions/remove_from_user"},
		{"POST", "/llm_integration/custom_model"}, {"POST", "/llm_integration/remove"}, {"GET", "/llm_integration/list/"},
		{"POST", "/functions/create"}, {"POST", "/functions/remove"}, {"GET", "/functions/list/"},
		{"POST", "/data_integration/custom"}, {"POST", "/data_integration/remove"}, {"GET", "/data_integration/list/"},
		{"GET", "/users/list"}, {"POST", "/users/import"}, {"GET", "/auth_integration/list"}, {"POST", "/auth_integration/create"},
	}
	for _, r := range routes {
		// A body that is invalid must not be looked at before the caller is known.
		if got := f.do(r[0], r[1], "", "{").Status; got != http.StatusUnauthorized {
			t.Errorf("%s %s without a key = %d, want 401", r[0], r[1], got)
		}
	}
}

func TestWireErrors(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")

	t.Run("unknown route", func(t *testing.T) {
		r := f.do("GET", "/nope", key, nil)
		if r.Status != http.StatusNotFound {
			t.Fatalf("status = %d", r.Status)
		}
		jsonEqual(t, r.Body, `{"detail":"Not Found"}`)
	})
	t.Run("wrong method", func(t *testing.T) {
		r := f.do("DELETE", "/functions/create", key, nil)
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
			t.Fatalf("status = %d, Allow = %q", r.Status, r.Header.Get("Allow"))
		}
		jsonEqual(t, r.Body, `{"detail":"Method Not Allowed"}`)
	})
	t.Run("not JSON", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/functions/create", strings.NewReader("function_name=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnsupportedMediaType {
			t.Fatalf("status = %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("JSON without a content type", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/functions/create", strings.NewReader(`{"function_name":"f"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("JSON with a charset and a +json type", func(t *testing.T) {
		for i, ct := range []string{"application/json; charset=utf-8", "application/vnd.api+json"} {
			req := httptest.NewRequest("POST", "/functions/create", strings.NewReader(`{"function_name":"f`+string(rune('a'+i))+`"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Errorf("Content-Type %s: status = %d %s", ct, rec.Code, rec.Body)
			}
		}
	})
	big := `{"function_name":"` + strings.Repeat("x", 1<<20) + `"}`
	t.Run("body over 1 MiB", func(t *testing.T) {
		r := f.do("POST", "/functions/create", key, big)
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d", r.Status)
		}
		if !strings.Contains(string(r.Body), `"detail"`) {
			t.Errorf("body = %s", r.Body)
		}
	})
	t.Run("body over 1 MiB without a length", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/functions/create", strings.NewReader(big))
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d %s", rec.Code, rec.Body)
		}
	})
}

func TestRequestID(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-ID", "trace-123")
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Request-ID"); got != "trace-123" {
		t.Errorf("echoed X-Request-ID = %q", got)
	}
	for _, path := range []string{"/healthz", "/nope", "/functions/list"} {
		r := f.do("GET", path, "", nil)
		if id := r.Header.Get("X-Request-ID"); len(id) != 36 {
			t.Errorf("%s: X-Request-ID = %q, want a generated id", path, id)
		}
	}
	req = httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-ID", "bad id\x01")
	rec = httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Request-ID"); got == "bad id\x01" || len(got) != 36 {
		t.Errorf("X-Request-ID for a malformed one = %q, want a fresh id", got)
	}
}

// TestResponsesCarryTheirDate: every response, whatever its route and status, has one Date
// header of the second it was begun in, in HTTP's format: set by the server itself (an httptest
// recorder adds none) and not again by net/http.
func TestResponsesCarryTheirDate(t *testing.T) {
	f := newFixture(t)
	live := httptest.NewServer(f.srv)
	defer live.Close()
	for _, path := range []string{"/healthz", "/nope", "/functions/list"} {
		before := time.Now().Truncate(time.Second)
		r := f.do("GET", path, "", nil)
		resp, err := http.Get(live.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		after := time.Now()
		for via, h := range map[string]http.Header{"recorder": r.Header, "net/http": resp.Header} {
			d, err := http.ParseTime(h.Get("Date"))
			if len(h["Date"]) != 1 || err != nil || d.Before(before) || d.After(after) {
				t.Errorf("%s through %s: Date %q, want one of a second from %s to %s", path, via, h["Date"], before, after)
			}
		}
	}
}

// TestCheckAnswerOnTheWire: a check answers a bare JSON boolean, typed as JSON, with one
// request id, whichever way it goes and whether or not the answer comes from memory: the
// answer is written by hand, not by gin's c.Data.
func TestCheckAnswerOnTheWire(t *testing.T) {
	f := newFixture(t)
	if err := f.srv.RegisterCacheMetrics(); err != nil {
		t.Fatal(err)
	}
	_, key := f.org("acme")
	model, user := f.model(key, "gpt"), f.user(key, "ada@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": model})
	other := f.model(key, "claude")
	tests := []struct {
		path string
		body any
		want string
	}{
		{"/provisions/can_user_access", map[string]string{"user_id": user, "svc_id": model}, "true"},
		{"/provisions/can_user_access", map[string]string{"user_id": user, "svc_id": other}, "false"},
		{"/provisions/can_user_access_all", map[string]any{"user_id": user, "tags": []string{model}}, "true"},
		{"/provisions/can_user_access_all", map[string]any{"user_id": user, "tags": []string{model, other}}, "false"},
	}
	for _, tt := range tests {
		// Four times: a user is kept from their third load, so the fourth answer comes from
		// memory (counted by the decision hits metric).
		hits := func() string {
			v, ok := metricValue(t, f, "grantry_cache_decision_hits_total")
			if !ok {
				t.Fatal("no grantry_cache_decision_hits_total on /metrics")
			}
			return v
		}
		before := hits()
		for range 4 {
			r := f.do("POST", tt.path, key, tt.body)
			if r.Status != http.StatusOK || string(r.Body) != tt.want {
				t.Fatalf("POST %s %v = %d %s, want 200 %s", tt.path, tt.body, r.Status, r.Body, tt.want)
			}
			if ct := r.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json; charset=utf-8" {
				t.Errorf("POST %s: Content-Type = %q, want one application/json; charset=utf-8", tt.path, ct)
			}
			if ids := r.Header.Values("X-Request-ID"); len(ids) != 1 || len(ids[0]) != 36 {
				t.Errorf("POST %s: X-Request-ID = %q, want one generated id", tt.path, ids)
			}
		}
		if hits() == before {
			t.Errorf("POST %s %v: no answer of four came from memory", tt.path, tt.body)
		}
	}
}

func TestListPathsWithAndWithoutSlash(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	for _, p := range []string{"/llm_integration/list", "/functions/list", "/data_integration/list", "/users/list", "/auth_integration/list"} {
		a, b := f.do("GET", p, key, nil), f.do("GET", p+"/", key, nil)
		if a.Status != http.StatusOK || b.Status != http.StatusOK || string(a.Body) != string(b.Body) {
			t.Errorf("%s = %d %s; %s/ = %d %s", p, a.Status, a.Body, p, b.Status, b.Body)
		}
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t)
	if r := f.do("GET", "/healthz", "", nil); r.Status != http.StatusOK {
		t.Errorf("healthz = %d", r.Status)
	}
	if r := f.do("GET", "/readyz", "", nil); r.Status != http.StatusOK {
		t.Errorf("readyz = %d %s", r.Status, r.Body)
	}
	f.srv.SetReady(false)
	if r := f.do("GET", "/readyz", "", nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("readyz while shutting down = %d", r.Status)
	}
}

// TestValidationErrors pins the FastAPI-style 422 bodies, one golden file per case.
func TestValidationErrors(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	long := strings.Repeat("n", 257)
	tags := make([]string, 1001)
	for i := range tags {
		tags[i] = "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"
	}
	tests := []struct {
		name, path string
		body       any
	}{
		{"check_missing_fields", "/provisions/can_user_access", `{}`},
		{"check_empty_body", "/provisions/can_user_access", ``},
		{"check_wrong_types", "/provisions/can_user_access", `{"user_id": 42, "svc_id": null}`},
		{"check_svc_id_not_uuid", "/provisions/can_user_access", `{"user_id": "u", "svc_id": "not-a-uuid"}`},
		{"check_empty_user_id", "/provisions/can_user_access", `{"user_id": "", "svc_id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`},
		{"check_json_invalid", "/provisions/can_user_access", `{"user_id": "u",`},
		{"check_trailing_garbage", "/provisions/can_user_access", `{"user_id": "u"} x`},
		{"check_body_not_object", "/provisions/can_user_access", `["u"]`},
		{"check_field_names_are_exact", "/provisions/can_user_access", `{"USER_ID": "u", "Svc_Id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`},
		{"check_all_tags_missing", "/provisions/can_user_access_all", `{"user_id": "u"}`},
		{"check_all_tags_empty", "/provisions/can_user_access_all", `{"user_id": "u", "tags": []}`},
		{"check_all_tags_not_list", "/provisions/can_user_access_all", `{"user_id": "u", "tags": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`},
		{"check_all_bad_items", "/provisions/can_user_access_all", `{"user_id": "u", "tags": ["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01", 7, "x"]}`},
		{"check_all_too_many", "/provisions/can_user_access_all", map[string]any{"user_id": "u", "tags": tags}},
		{"model_name_too_long", "/llm_integration/custom_model", map[string]any{"model_name": long}},
		{"function_description_too_long", "/functions/create", map[string]any{"function_name": "f", "description": strings.Repeat("d", 4097)}},
		{"remove_svc_id_not_uuid", "/functions/remove", `{"svc_id": "12"}`},
		{"import_users_problems", "/users/import", `{"auth_integration_id": "a", "users": [{"email": ""}, {"email": "x@y", "id": ""}, {"email": 3}, 7, {"first": "no email"}]}`},
		{"import_users_empty", "/users/import", `{"auth_integration_id": "a", "users": []}`},
		{"import_users_attribute_problems", "/users/import",
			`{"auth_integration_id": "a", "users": [{"email": "", "attributes": {"title": 7, "": "x", "dept": "ok"}}, {"email": "b@x", "attributes": "Engines"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", tc.path, key, tc.body)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			golden(t, "validation/"+tc.name, r.Body)
		})
	}
	t.Run("query user_id empty", func(t *testing.T) {
		r := f.do("GET", "/functions/list?user_id=", key, nil)
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("status = %d", r.Status)
		}
		jsonEqual(t, r.Body, `{"detail":[{"loc":["query","user_id"],"msg":"String should have at least 1 character","type":"string_too_short"}]}`)
	})
	t.Run("unknown fields are ignored", func(t *testing.T) {
		f.must("POST", "/functions/create", key, `{"function_name": "f1", "owner": {"x": 1}}`)
	})
}
