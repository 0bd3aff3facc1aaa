package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// scopedKey makes a key of scope for the organization through the admin API.
func (f *fixture) scopedKey(org, scope string) string {
	f.tb.Helper()
	k := decode[struct {
		APIKey string `json:"api_key"`
		Scope  string `json:"scope"`
	}](f.tb, f.must("POST", "/admin/orgs/"+org+"/api_keys", adminToken, map[string]string{"scope": scope}))
	if k.Scope != scope {
		f.tb.Fatalf("key made with scope %s says scope %s", scope, k.Scope)
	}
	return k.APIKey
}

// The classes of calls, by the scopes that may make them.
const (
	anyScope    = "admin manage check"
	manageScope = "admin manage"
	adminScope  = "admin"
)

// TestScopes makes every call of the API with a key of each scope: a call the scope allows
// gets past authorization (its own answer, never 403), one it does not gets 403 {"detail"} and
// changes nothing. Every route the router serves behind an API key is in the table, so a new
// route must be classified here.
func TestScopes(t *testing.T) {
	f := newFixture(t)
	org, admin := f.org("acme")
	keys := map[string]string{"admin": admin, "manage": f.scopedKey(org, "manage"), "check": f.scopedKey(org, "check")}
	model := f.model(admin, "gpt")
	ada := f.user(admin, "ada@acme.test")
	eng := f.group(admin, "Engineering")
	spare := decode[struct{ ID string }](t, f.must("POST", "/api_keys", admin, map[string]string{"scope": "check"})).ID
	grant := map[string]string{"user_id": ada, "svc_id": model}

	calls := []struct {
		method, route, path string
		body                any
		scopes              string
	}{
		{"POST", "/provisions/can_user_access", "", grant, anyScope},
		{"POST", "/provisions/can_user_access_all", "", map[string]any{"user_id": ada, "tags": []string{model}}, anyScope},
		{"POST", "/provisions/check_batch", "", map[string]any{"checks": []any{grant}}, anyScope},
		{"POST", "/provisions/explain", "", grant, anyScope},
		{"GET", "/provisions/users_with_access", "/provisions/users_with_access?svc_id=" + model, nil, anyScope},
		{"GET", "/users/:id/access", "/users/" + ada + "/access", nil, anyScope},
		{"GET", "/policy", "", nil, anyScope},
		{"GET", "/audit/decisions", "", nil, anyScope},
		{"GET", "/audit/decisions/", "", nil, anyScope},
		{"GET", "/audit/events", "", nil, anyScope},
		{"GET", "/audit/events/", "", nil, anyScope},
		{"GET", "/llm_integration/list", "", nil, anyScope},
		{"GET", "/llm_integration/list/", "", nil, anyScope},
		{"GET", "/functions/list", "", nil, anyScope},
		{"GET", "/functions/list/", "", nil, anyScope},
		{"GET", "/data_integration/list", "", nil, anyScope},
		{"GET", "/data_integration/list/", "", nil, anyScope},
		{"GET", "/auth_integration/list", "", nil, anyScope},
		{"GET", "/auth_integration/list/", "", nil, anyScope},
		{"GET", "/users/list", "", nil, anyScope},
		{"GET", "/users/list/", "", nil, anyScope},
		{"GET", "/groups/list", "", nil, anyScope},
		{"GET", "/groups/list/", "", nil, anyScope},

		{"POST", "/provisions/add_to_user", "", grant, manageScope},
		{"POST", "/provisions/remove_from_user", "", map[string]string{"user_id": ada, "svc_id": "00000000-0000-4000-8000-000000000000"}, manageScope},
		{"POST", "/provisions/add_to_group", "", map[string]string{"group_id": eng, "svc_id": model}, manageScope},
		{"POST", "/provisions/remove_from_group", "", map[string]string{"group_id": eng, "svc_id": model}, manageScope},
		{"POST", "/llm_integration/custom_model", "", map[string]string{"model_name": "m-SCOPE"}, manageScope},
		{"POST", "/llm_integration/remove", "", map[string]string{"svc_id": "00000000-0000-4000-8000-000000000000"}, manageScope},
		{"POST", "/llm_integration/:provider", "/llm_integration/nosuchprovider", map[string]string{"provider_key": "k"}, manageScope},
		{"POST", "/functions/create", "", map[string]string{"function_name": "f-SCOPE", "description": "d"}, manageScope},
		{"POST", "/functions/remove", "", map[string]string{"svc_id": "00000000-0000-4000-8000-000000000000"}, manageScope},
		{"POST", "/data_integration/custom", "", map[string]string{"dataset_name": "d-SCOPE"}, manageScope},
		{"POST", "/data_integration/remove", "", map[string]string{"svc_id": "00000000-0000-4000-8000-000000000000"}, manageScope},
		{"POST", "/data_integration/:provider/integrate", "/data_integration/nosuchprovider/integrate", map[string]string{"api_key": "k"}, manageScope},
		{"POST", "/auth_integration/create", "", map[string]string{"name": "i-SCOPE"}, manageScope},
		{"POST", "/users/import", "", map[string]any{"auth_integration_id": "nope", "users": []map[string]string{{"email": "x@x"}}}, manageScope},
		{"POST", "/groups/create", "", map[string]string{"name": "g-SCOPE"}, manageScope},
		{"POST", "/groups/add_member", "", map[string]string{"group_id": eng, "user_id": ada}, manageScope},
		{"POST", "/groups/remove_member", "", map[string]string{"group_id": eng, "user_id": ada}, manageScope},
		{"POST", "/groups/remove", "", map[string]string{"group_id": "nope"}, manageScope},
		{"POST", "/auth_integration/remove", "", map[string]string{"auth_integration_id": "nope"}, manageScope},

		{"GET", "/api_keys", "", nil, adminScope},
		{"GET", "/api_keys/", "", nil, adminScope},
		{"POST", "/api_keys", "", map[string]string{"scope": "check"}, adminScope},
		{"DELETE", "/api_keys/:id", "/api_keys/" + spare, nil, adminScope},
		{"POST", "/auth_integration/scim_token/rotate", "", map[string]string{"auth_integration_id": "nope"}, adminScope},
		{"POST", "/auth_integration/scim_token/revoke", "", map[string]string{"auth_integration_id": "nope"}, adminScope},
	}

	classified := map[string]bool{}
	for _, c := range calls {
		classified[c.method+" "+c.route] = true
	}
	for _, r := range f.srv.Routes() {
		if strings.HasPrefix(r.Path, "/admin/") || strings.HasPrefix(r.Path, "/scim/") || !needsKey(f, r.Method, r.Path) {
			continue
		}
		if !classified[r.Method+" "+r.Path] {
			t.Errorf("%s %s is not in TestScopes' table: say which scopes may call it", r.Method, r.Path)
		}
	}

	// Refused calls first, with every scope, so that nothing the allowed ones do (deleting
	// the spare key) changes what is refused.
	for _, scope := range []string{"check", "manage", "admin"} {
		for _, c := range calls {
			path := c.path
			if path == "" {
				path = c.route
			}
			body := c.body
			if m, ok := body.(map[string]string); ok {
				body = withScope(m, scope)
			}
			r := f.do(c.method, path, keys[scope], body)
			allowed := strings.Contains(" "+c.scopes+" ", " "+scope+" ")
			switch {
			case allowed && r.Status == http.StatusForbidden:
				t.Errorf("%s key: %s %s = 403 %s, want it allowed", scope, c.method, path, r.Body)
			case !allowed && r.Status != http.StatusForbidden:
				t.Errorf("%s key: %s %s = %d %s, want 403", scope, c.method, path, r.Status, r.Body)
			case !allowed:
				jsonEqual(t, r.Body, `{"detail":"This API key's scope (`+scope+`) does not allow this call."}`)
			}
		}
	}
	// What the refused calls would have made was not made.
	for _, name := range []string{"m-check", "f-check", "d-check", "i-check", "g-check"} {
		for _, p := range []string{"/llm_integration/list", "/functions/list", "/data_integration/list", "/auth_integration/list", "/groups/list"} {
			if r := f.must("GET", p, admin, nil); contains(r.Body, name) {
				t.Errorf("%s shows %s, made by a check key", p, name)
			}
		}
	}
}

// needsKey reports whether a route answers 401 without a key: it is behind authentication.
func needsKey(f *fixture, method, route string) bool {
	path := strings.NewReplacer(":provider", "x", ":id", "x", ":asset", "x").Replace(route)
	return f.do(method, path, "", nil).Status == http.StatusUnauthorized
}

// withScope makes the names a call creates tell which key made them.
func withScope(body map[string]string, scope string) map[string]string {
	out := make(map[string]string, len(body))
	for k, v := range body {
		out[k] = strings.ReplaceAll(v, "SCOPE", scope)
	}
	return out
}

// TestKeyManagement: an admin key manages its organization's keys and scopes; keys of other
// organizations are out of its reach; a revoked key is refused at once.
func TestKeyManagement(t *testing.T) {
	f := newFixture(t)
	orgA, adminA := f.org("a")
	_, adminB := f.org("b")
	made := decode[struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
		Scope  string `json:"scope"`
	}](t, f.must("POST", "/api_keys", adminA, map[string]string{"scope": "check"}))
	if made.Scope != "check" || !strings.HasPrefix(made.APIKey, "gry_") {
		t.Fatalf("made = %+v", made)
	}
	byDefault := decode[struct{ Scope string }](t, f.must("POST", "/api_keys", adminA, nil))
	viaAdmin := decode[struct{ Scope string }](t, f.must("POST", "/admin/orgs/"+orgA+"/api_keys", adminToken, nil))
	if byDefault.Scope != "admin" || viaAdmin.Scope != "admin" {
		t.Errorf("keys made without a scope have scopes %q and %q, want admin", byDefault.Scope, viaAdmin.Scope)
	}
	list := decode[struct {
		APIKeys []struct {
			ID, Prefix, Scope string
			CreatedAt         string `json:"created_at"`
		} `json:"api_keys"`
	}](t, f.must("GET", "/api_keys", adminA, nil))
	var scopes []string
	for _, k := range list.APIKeys {
		scopes = append(scopes, k.Scope)
		if !strings.HasPrefix(k.Prefix, "gry_") || len(k.Prefix) > 12 || k.CreatedAt == "" {
			t.Errorf("listed key %+v", k)
		}
	}
	if show(scopes) != `["admin","check","admin","admin"]` {
		t.Errorf("scopes listed = %v, want the first key, then check, admin, admin", scopes)
	}
	if r := f.must("GET", "/api_keys", adminA, nil); contains(r.Body, made.APIKey) {
		t.Error("GET /api_keys shows a key")
	}

	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"unknown scope", map[string]string{"scope": "root"}, `[{"loc":["body","scope"],"msg":"Input should be 'admin', 'manage' or 'check'","type":"literal_error"}]`},
		{"scope not a string", map[string]any{"scope": 1}, `[{"loc":["body","scope"],"msg":"Input should be a valid string","type":"string_type"}]`},
	} {
		for _, call := range [][2]string{{"/api_keys", adminA}, {"/admin/orgs/" + orgA + "/api_keys", adminToken}} {
			r := f.do("POST", call[0], call[1], tc.body)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%s: POST %s = %d %s, want 422", tc.name, call[0], r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":`+tc.want+`}`)
		}
	}

	if r := f.do("DELETE", "/api_keys/"+made.ID, adminB, nil); r.Status != http.StatusNotFound {
		t.Errorf("B revoking A's key = %d %s, want 404", r.Status, r.Body)
	}
	if r := f.do("GET", "/llm_integration/list", made.APIKey, nil); r.Status != http.StatusOK {
		t.Fatalf("A's check key after B tried to revoke it = %d, want 200", r.Status)
	}
	jsonEqual(t, f.must("DELETE", "/api_keys/"+made.ID, adminA, nil).Body, `{"message":"API key revoked"}`)
	if r := f.do("GET", "/llm_integration/list", made.APIKey, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("a revoked key = %d, want 401", r.Status)
	}
	if r := f.do("DELETE", "/api_keys/"+made.ID, adminA, nil); r.Status != http.StatusNotFound {
		t.Errorf("revoking again = %d, want 404", r.Status)
	}
}
