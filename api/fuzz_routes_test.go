package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzEndpoints are the routes FuzzAPI drives: every API route but SCIM's (whose parsers have
// fuzz targets of their own in internal/scim), with {seg} standing for a path segment, {query}
// for the user_id query parameter and {raw} for a whole query string, all taken from the
// fuzzer's input.
var fuzzEndpoints = []struct{ method, path string }{
	{"POST", "/provisions/can_user_access"},
	{"POST", "/provisions/can_user_access_all"},
	{"POST", "/provisions/add_to_user"},
	{"POST", "/provisions/remove_from_user"},
	{"POST", "/llm_integration/custom_model"},
	{"POST", "/llm_integration/remove"},
	{"GET", "/llm_integration/list/?user_id={query}"},
	{"POST", "/llm_integration/{seg}"},
	{"POST", "/functions/create"},
	{"POST", "/functions/remove"},
	{"GET", "/functions/list?user_id={query}"},
	{"POST", "/data_integration/custom"},
	{"POST", "/data_integration/remove"},
	{"GET", "/data_integration/list?user_id={query}"},
	{"POST", "/data_integration/{seg}/integrate"},
	{"POST", "/auth_integration/create"},
	{"GET", "/auth_integration/list"},
	{"POST", "/users/import"},
	{"GET", "/users/list"},
	{"POST", "/admin/orgs"},
	{"POST", "/admin/orgs/{seg}/api_keys"},
	{"DELETE", "/admin/api_keys/{seg}"},
	{"POST", "/provisions/explain"},
	{"GET", "/policy"},
	{"GET", "/audit/decisions?{raw}"},
	{"GET", "/audit/events/?{raw}"},
	{"POST", "/provisions/add_to_group"},
	{"POST", "/provisions/remove_from_group"},
	{"POST", "/provisions/check_batch"},
	{"GET", "/provisions/users_with_access?{raw}"},
	{"GET", "/users/{seg}/access"},
	{"POST", "/groups/create"},
	{"POST", "/groups/add_member"},
	{"POST", "/groups/remove_member"},
	{"POST", "/groups/remove"},
	{"GET", "/groups/list"},
	{"GET", "/api_keys"},
	{"POST", "/api_keys"},
	{"DELETE", "/api_keys/{seg}"},
}

// FuzzAPI sends untrusted bodies, path segments and query values to every route of the real
// router on the embedded store, one organization's data persisting across inputs. Whatever
// comes in, the answer is never a 5xx, is JSON, says what is wrong in {"detail"} when it is not
// 200, and carries a request id.
func FuzzAPI(f *testing.F) {
	fx := newFixture(f)
	_, key := fx.org("acme")
	model := fx.model(key, "seed-model")
	user := fx.user(key, "seed@acme.test")
	ids := map[string]string{"MODEL": model, "USER": user}
	for i := range fuzzEndpoints {
		for _, body := range []string{
			`{"user_id":"USER","svc_id":"MODEL"}`, `{"user_id":"USER","tags":["MODEL","MODEL"]}`,
			`{"model_name":"m1"}`, `{"function_name":"f","description":"d"}`, `{"dataset_name":"d"}`,
			`{"svc_id":"MODEL"}`, `{"name":"n","metadata":"{}"}`, `{"provider_key":"sk-x"}`, `{"api_key":"k","environment":"e"}`,
			`{"auth_integration_id":"x","users":[{"id":"u\u0000/%2F","email":"A@B","first":"é","last":"\ud800"}]}`,
			`{"user_id":"USER","svc_id":"MODEL"} x`, `[]`, ``,
		} {
			f.Add(uint8(i), "USER", body)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, param, body string) {
		e := fuzzEndpoints[int(which)%len(fuzzEndpoints)]
		for placeholder, id := range ids {
			body = strings.ReplaceAll(body, placeholder, id)
			param = strings.ReplaceAll(param, placeholder, id)
		}
		target := strings.ReplaceAll(e.path, "{seg}", url.PathEscape(param))
		target = strings.ReplaceAll(target, "{query}", url.QueryEscape(param))
		target = strings.ReplaceAll(target, "{raw}", url.PathEscape(param)) // keeps & and =: a query of its own
		token := key
		if strings.HasPrefix(target, "/admin/") {
			token = adminToken
		}
		req := httptest.NewRequest(e.method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		fx.srv.ServeHTTP(rec, req)

		if rec.Code >= 500 {
			t.Fatalf("%s %s %q = %d %s", e.method, target, body, rec.Code, rec.Body)
		}
		if rec.Header().Get("X-Request-ID") == "" {
			t.Fatalf("%s %s: no X-Request-ID", e.method, target)
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s %q = %d with a body that is not JSON: %q", e.method, target, body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK {
			obj, ok := v.(map[string]any)
			if _, has := obj["detail"]; !ok || !has || len(obj) != 1 {
				t.Fatalf("%s %s %q = %d %s: want {\"detail\": ...}", e.method, target, body, rec.Code, rec.Body)
			}
		}
	})
}
