package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/internal/decisionlog"
)

// specClient sends requests through the real router and checks every exchange against the
// document with libopenapi-validator: the response's status, headers and body must be what the
// document says that operation answers, and a request the server accepted must be one the
// document allows. It remembers which statuses each operation was seen to answer.
type specClient struct {
	tb   testing.TB
	spec *openAPISpec
	srv  http.Handler
	seen map[string]map[int]bool // operationId → statuses validated
}

func newSpecClient(tb testing.TB, spec *openAPISpec, srv http.Handler) *specClient {
	return &specClient{tb: tb, spec: spec, srv: srv, seen: map[string]map[int]bool{}}
}

// request is one request of a flow. Its path and body may hold {{NAME}} placeholders, filled
// from the values earlier steps saved.
type request struct {
	method, path string
	token        string // the credential: a saved value's name, or "" for none
	body         string // sent as it is; "" sends no body
	contentType  string // "" means application/json when there is a body
	header       []string
}

func (c *specClient) newRequest(r request) *http.Request {
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Set(r.header[i], r.header[i+1])
	}
	return req
}

// send serves r and validates the exchange; it fails the test if the answer is not want or
// does not match the document. label names the request in failures.
func (c *specClient) send(label string, r request, want int) response {
	c.tb.Helper()
	where := label + ": " + r.method + " " + r.path
	path, _, _ := strings.Cut(r.path, "?")
	op, ok := c.spec.matchOp(r.method, path)
	if !ok {
		c.tb.Fatalf("%s: no operation of the document serves this", where)
	}
	rec := httptest.NewRecorder()
	c.srv.ServeHTTP(rec, c.newRequest(r))
	res := rec.Result()
	if res.StatusCode != want {
		c.tb.Fatalf("%s = %d %s, want %d", where, res.StatusCode, rec.Body, want)
	}
	v := c.spec.validator
	if strictlyChecked(op.Path) {
		v = c.spec.strict
	}
	if valid, errs := v.ValidateHttpResponse(c.newRequest(r), res); !valid {
		c.tb.Errorf("%s (%s) answered %d %s, which the document does not allow:%s",
			where, op.ID, res.StatusCode, truncate(rec.Body.String()), describe(errs))
	}
	// A request the server accepted must be one the document allows, or clients generated
	// from the document could not send it. (Undocumented forms are not validated: the
	// validator knows only the documented path.)
	if _, direct := matchTemplate(op.Path, path); want < 300 && direct {
		if valid, errs := v.ValidateHttpRequest(c.newRequest(r)); !valid {
			c.tb.Errorf("%s (%s) was accepted by the server, but the document refuses it:%s", where, op.ID, describe(errs))
		}
	}
	if c.seen[op.ID] == nil {
		c.seen[op.ID] = map[int]bool{}
	}
	c.seen[op.ID][res.StatusCode] = true
	return response{Status: res.StatusCode, Header: res.Header, Body: rec.Body.Bytes()}
}

func truncate(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// step is one request of a flow with the status it must get, and the values of the answer
// later steps use: name → a dotted path into the JSON body ("model.id", "users.0.id").
type step struct {
	name string
	request
	want int
	save map[string]string
}

// runFlow sends each step in order through c, with placeholders filled from vars, which it
// extends with what each step saves.
func runFlow(t *testing.T, c *specClient, vars map[string]string, steps []step) {
	t.Helper()
	fill := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "{{"+k+"}}", v)
		}
		if strings.Contains(s, "{{") {
			t.Fatalf("unfilled placeholder in %q", s)
		}
		return s
	}
	for _, st := range steps {
		r := st.request
		r.path, r.body = fill(r.path), fill(r.body)
		if r.token != "" {
			r.token = vars[r.token]
		}
		r.header = slices.Clone(r.header)
		for i := range r.header {
			r.header[i] = fill(r.header[i])
		}
		got := c.send(st.name, r, st.want)
		for name, path := range st.save {
			v, ok := dig(got.Body, path)
			if !ok {
				t.Fatalf("%s: the answer %s has no %s", st.name, got.Body, path)
			}
			vars[name] = v
		}
	}
}

// dig returns the string at a dotted path of a JSON body.
func dig(body []byte, path string) (string, bool) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", false
	}
	for part := range strings.SplitSeq(path, ".") {
		switch n := v.(type) {
		case map[string]any:
			v = n[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(n) {
				return "", false
			}
			v = n[i]
		default:
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}

const scimUserBody = `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"grace@acme.test","externalId":"00u1",
	"name":{"givenName":"Grace","familyName":"Hopper"},"emails":[{"value":"grace@acme.test","primary":true}],"active":true,
	"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"R&D"}}`

// apiFlow is a representative request, and the usual failures, of every operation.
var apiFlow = []step{
	{"liveness", request{method: "GET", path: "/healthz"}, 200, nil},
	{"readiness", request{method: "GET", path: "/readyz"}, 200, nil},
	{"metrics", request{method: "GET", path: "/metrics"}, 200, nil},
	{"the document", request{method: "GET", path: "/openapi.json"}, 200, nil},
	{"the docs page", request{method: "GET", path: "/docs"}, 200, nil},
	{"its script", request{method: "GET", path: "/docs/swagger-ui-bundle.js"}, 200, nil},
	{"its style", request{method: "GET", path: "/docs/swagger-ui.css"}, 200, nil},
	{"its icon", request{method: "GET", path: "/docs/favicon-32x32.png"}, 200, nil},
	{"no such asset", request{method: "GET", path: "/docs/app.js"}, 404, nil},

	{"create an organization", request{method: "POST", path: "/admin/orgs", token: "ADMIN", body: `{"name":"acme"}`}, 200,
		map[string]string{"ORG": "id", "KEY": "api_key"}},
	{"its name is taken", request{method: "POST", path: "/admin/orgs", token: "ADMIN", body: `{"name":"acme"}`}, 409, nil},
	{"an organization needs a name", request{method: "POST", path: "/admin/orgs", token: "ADMIN", body: `{}`}, 422, nil},
	{"the admin API needs its token", request{method: "POST", path: "/admin/orgs", token: "KEY", body: `{"name":"x"}`}, 401, nil},
	{"list organizations", request{method: "GET", path: "/admin/orgs", token: "ADMIN"}, 200, nil},
	{"list organizations, slash", request{method: "GET", path: "/admin/orgs/", token: "ADMIN"}, 200, nil},
	{"add a key", request{method: "POST", path: "/admin/orgs/{{ORG}}/api_keys", token: "ADMIN"}, 200,
		map[string]string{"KEY2": "id"}},
	{"add a key of a scope", request{method: "POST", path: "/admin/orgs/{{ORG}}/api_keys", token: "ADMIN", body: `{"scope":"manage"}`}, 200, nil},
	{"add a key of no scope", request{method: "POST", path: "/admin/orgs/{{ORG}}/api_keys", token: "ADMIN", body: `{"scope":"all"}`}, 422, nil},
	{"add a key to no organization", request{method: "POST", path: "/admin/orgs/nope/api_keys", token: "ADMIN"}, 404, nil},
	{"revoke the key", request{method: "DELETE", path: "/admin/api_keys/{{KEY2}}", token: "ADMIN"}, 200, nil},
	{"revoke it again", request{method: "DELETE", path: "/admin/api_keys/{{KEY2}}", token: "ADMIN"}, 404, nil},

	{"register a custom model", request{method: "POST", path: "/llm_integration/custom_model", token: "KEY", body: `{"model_name":"llama"}`}, 200,
		map[string]string{"MODEL": "model.id"}},
	{"its name is taken", request{method: "POST", path: "/llm_integration/custom_model", token: "KEY", body: `{"model_name":"llama"}`}, 409, nil},
	{"a model needs a name", request{method: "POST", path: "/llm_integration/custom_model", token: "KEY", body: `{"model_name":""}`}, 422, nil},
	{"no key", request{method: "POST", path: "/llm_integration/custom_model", body: `{"model_name":"x"}`}, 401, nil},
	{"not JSON", request{method: "POST", path: "/llm_integration/custom_model", token: "KEY", body: `model_name=x`,
		contentType: "application/x-www-form-urlencoded"}, 415, nil},
	{"too large", request{method: "POST", path: "/llm_integration/custom_model", token: "KEY",
		body: `{"model_name":"` + strings.Repeat("x", 1<<20) + `"}`}, 413, nil},
	{"integrate the default model provider", request{method: "POST", path: "/llm_integration/hostedllm", token: "KEY",
		body: `{"provider_key":"good-sk-1"}`}, 200, nil},
	{"the provider refuses the key", request{method: "POST", path: "/llm_integration/openai", token: "KEY",
		body: `{"provider_key":"401-sk-1"}`}, 400, nil},
	{"the provider fails", request{method: "POST", path: "/llm_integration/anthropic", token: "KEY",
		body: `{"provider_key":"500-sk-1"}`}, 502, nil},
	{"no such provider", request{method: "POST", path: "/llm_integration/nope", token: "KEY", body: `{"provider_key":"good-sk-1"}`}, 404, nil},
	{"list models", request{method: "GET", path: "/llm_integration/list/", token: "KEY"}, 200, nil},
	{"list models, no slash", request{method: "GET", path: "/llm_integration/list", token: "KEY"}, 200, nil},
	{"the model list is not posted to", request{method: "POST", path: "/llm_integration/list", token: "KEY", body: `{}`}, 405, nil},

	{"register a function", request{method: "POST", path: "/functions/create", token: "KEY",
		body: `{"function_name":"search","description":"Searches."}`}, 200, map[string]string{"FUNCTION": "function.id"}},
	{"its name is taken", request{method: "POST", path: "/functions/create", token: "KEY", body: `{"function_name":"search"}`}, 409, nil},
	{"list functions", request{method: "GET", path: "/functions/list/", token: "KEY"}, 200, nil},

	{"register a custom dataset", request{method: "POST", path: "/data_integration/custom", token: "KEY", body: `{"dataset_name":"tickets"}`}, 200,
		map[string]string{"DATASET": "datasets.0.id"}},
	{"its name is taken", request{method: "POST", path: "/data_integration/custom", token: "KEY", body: `{"dataset_name":"tickets"}`}, 409, nil},
	{"integrate the default vector database", request{method: "POST", path: "/data_integration/vectordb/integrate", token: "KEY",
		body: `{"api_key":"good-pc-1","environment":"us-east-1"}`}, 200, nil},
	{"the vector database refuses the key", request{method: "POST", path: "/data_integration/pinecone/integrate", token: "KEY",
		body: `{"api_key":"403-pc-1"}`}, 400, nil},
	{"list datasets", request{method: "GET", path: "/data_integration/list/", token: "KEY"}, 200, nil},

	{"create an auth integration", request{method: "POST", path: "/auth_integration/create", token: "KEY", body: `{"name":"hr","metadata":"{}"}`}, 200,
		map[string]string{"INTEGRATION": "auth_integration.id"}},
	{"its name is taken", request{method: "POST", path: "/auth_integration/create", token: "KEY", body: `{"name":"hr"}`}, 409, nil},
	{"create a SCIM integration", request{method: "POST", path: "/auth_integration/create", token: "KEY", body: `{"name":"okta","type":"scim"}`}, 200,
		map[string]string{"SCIM": "scim.token", "SINTEG": "auth_integration.id"}},
	{"list auth integrations", request{method: "GET", path: "/auth_integration/list", token: "KEY"}, 200, nil},
	{"import a user", request{method: "POST", path: "/users/import", token: "KEY",
		body: `{"auth_integration_id":"{{INTEGRATION}}","users":[{"id":"ada","email":"ada@acme.test","first":"Ada","last":"Lovelace",
			"attributes":{"department":"Analytical Engines","title":"Analyst"}}]}`}, 200, nil},
	{"attributes are for the identity provider to set on a SCIM integration's users", request{method: "POST", path: "/users/import", token: "KEY",
		body: `{"auth_integration_id":"{{SINTEG}}","users":[{"email":"grace@acme.test","attributes":{}}]}`}, 409, nil},
	{"import into no integration", request{method: "POST", path: "/users/import", token: "KEY",
		body: `{"auth_integration_id":"nope","users":[{"email":"x@acme.test"}]}`}, 404, nil},
	{"an import may not change a user's id", request{method: "POST", path: "/users/import", token: "KEY",
		body: `{"auth_integration_id":"{{INTEGRATION}}","users":[{"id":"lovelace","email":"ada@acme.test"}]}`}, 409, nil},

	{"check before the grant", request{method: "POST", path: "/provisions/can_user_access", token: "KEY", body: `{"user_id":"ada","svc_id":"{{MODEL}}"}`}, 200, nil},
	{"grant", request{method: "POST", path: "/provisions/add_to_user", token: "KEY", body: `{"user_id":"ada","svc_id":"{{MODEL}}"}`}, 200, nil},
	{"grant the function", request{method: "POST", path: "/provisions/add_to_user", token: "KEY", body: `{"user_id":"ada","svc_id":"{{FUNCTION}}"}`}, 200, nil},
	{"grant to no user", request{method: "POST", path: "/provisions/add_to_user", token: "KEY", body: `{"user_id":"nobody","svc_id":"{{MODEL}}"}`}, 404, nil},
	{"check after the grant", request{method: "POST", path: "/provisions/can_user_access", token: "KEY", body: `{"user_id":"ada","svc_id":"{{MODEL}}"}`}, 200, nil},
	{"check with no svc_id", request{method: "POST", path: "/provisions/can_user_access", token: "KEY", body: `{"user_id":"ada","svc_id":"x"}`}, 422, nil},
	{"check many", request{method: "POST", path: "/provisions/can_user_access_all", token: "KEY",
		body: `{"user_id":"ada","tags":["{{MODEL}}","{{DATASET}}"]}`}, 200, nil},
	{"check none", request{method: "POST", path: "/provisions/can_user_access_all", token: "KEY", body: `{"user_id":"ada","tags":[]}`}, 422, nil},
	{"explain", request{method: "POST", path: "/provisions/explain", token: "KEY", body: `{"user_id":"ada","svc_id":"{{DATASET}}"}`}, 200, nil},
	{"grant until a time", request{method: "POST", path: "/provisions/add_to_user", token: "KEY",
		body: `{"user_id":"ada","svc_id":"{{DATASET}}","expires_at":"2030-01-01T00:00:00Z"}`}, 200, nil},
	{"grant until a past time", request{method: "POST", path: "/provisions/add_to_user", token: "KEY",
		body: `{"user_id":"ada","svc_id":"{{DATASET}}","expires_at":"2020-01-01T00:00:00Z"}`}, 422, nil},
	{"check a batch", request{method: "POST", path: "/provisions/check_batch", token: "KEY",
		body: `{"checks":[{"user_id":"ada","svc_id":"{{MODEL}}","correlation_id":"c1"},{"user_id":"nobody","svc_id":"{{MODEL}}"}]}`}, 200, nil},
	{"check an empty batch", request{method: "POST", path: "/provisions/check_batch", token: "KEY", body: `{"checks":[]}`}, 422, nil},
	{"who may use the model", request{method: "GET", path: "/provisions/users_with_access?svc_id={{MODEL}}&limit=10", token: "KEY"}, 200, nil},
	{"who may use nothing", request{method: "GET", path: "/provisions/users_with_access?svc_id=00000000-0000-4000-8000-000000000000", token: "KEY"}, 404, nil},
	{"who may use what", request{method: "GET", path: "/provisions/users_with_access", token: "KEY"}, 422, nil},
	{"create a group", request{method: "POST", path: "/groups/create", token: "KEY", body: `{"name":"eng"}`}, 200,
		map[string]string{"GROUP": "group.id"}},
	{"its name is taken", request{method: "POST", path: "/groups/create", token: "KEY", body: `{"name":"eng"}`}, 409, nil},
	{"add a member", request{method: "POST", path: "/groups/add_member", token: "KEY", body: `{"group_id":"{{GROUP}}","user_id":"ada"}`}, 200, nil},
	{"add no user", request{method: "POST", path: "/groups/add_member", token: "KEY", body: `{"group_id":"{{GROUP}}","user_id":"nobody"}`}, 404, nil},
	{"grant to the group", request{method: "POST", path: "/provisions/add_to_group", token: "KEY",
		body: `{"group_id":"{{GROUP}}","svc_id":"{{FUNCTION}}","expires_at":"2030-01-01T00:00:00Z"}`}, 200, nil},
	{"grant to no group", request{method: "POST", path: "/provisions/add_to_group", token: "KEY",
		body: `{"group_id":"nope","svc_id":"{{FUNCTION}}"}`}, 404, nil},
	{"list groups", request{method: "GET", path: "/groups/list", token: "KEY"}, 200, nil},
	{"where ada's access comes from", request{method: "GET", path: "/users/ada/access", token: "KEY"}, 200, nil},
	{"where no one's access comes from", request{method: "GET", path: "/users/nobody/access", token: "KEY"}, 404, nil},
	{"revoke from the group", request{method: "POST", path: "/provisions/remove_from_group", token: "KEY",
		body: `{"group_id":"{{GROUP}}","svc_id":"{{FUNCTION}}"}`}, 200, nil},
	{"remove the member", request{method: "POST", path: "/groups/remove_member", token: "KEY", body: `{"group_id":"{{GROUP}}","user_id":"ada"}`}, 200, nil},
	{"remove the group", request{method: "POST", path: "/groups/remove", token: "KEY", body: `{"group_id":"{{GROUP}}"}`}, 200, nil},
	{"remove it again", request{method: "POST", path: "/groups/remove", token: "KEY", body: `{"group_id":"{{GROUP}}"}`}, 404, nil},
	{"make a key that may only check", request{method: "POST", path: "/api_keys", token: "KEY", body: `{"scope":"check"}`}, 200,
		map[string]string{"CHECKER": "api_key", "CHECKER_ID": "id"}},
	{"make a key of no scope", request{method: "POST", path: "/api_keys", token: "KEY", body: `{"scope":"root"}`}, 422, nil},
	{"list the keys", request{method: "GET", path: "/api_keys", token: "KEY"}, 200, nil},
	{"the checking key may check", request{method: "POST", path: "/provisions/can_user_access", token: "CHECKER",
		body: `{"user_id":"ada","svc_id":"{{MODEL}}"}`}, 200, nil},
	{"but not register", request{method: "POST", path: "/llm_integration/custom_model", token: "CHECKER", body: `{"model_name":"x"}`}, 403, nil},
	{"revoke the checking key", request{method: "DELETE", path: "/api_keys/{{CHECKER_ID}}", token: "KEY"}, 200, nil},
	{"revoke it again", request{method: "DELETE", path: "/api_keys/{{CHECKER_ID}}", token: "KEY"}, 404, nil},
	{"list users", request{method: "GET", path: "/users/list", token: "KEY"}, 200, nil},
	{"a user's models", request{method: "GET", path: "/llm_integration/list/?user_id=ada", token: "KEY"}, 200, nil},
	{"no user's functions", request{method: "GET", path: "/functions/list/?user_id=nobody", token: "KEY"}, 404, nil},
	{"an empty user_id", request{method: "GET", path: "/data_integration/list/?user_id=", token: "KEY"}, 422, nil},
	{"revoke", request{method: "POST", path: "/provisions/remove_from_user", token: "KEY", body: `{"user_id":"ada","svc_id":"{{MODEL}}"}`}, 200, nil},
	{"revoke from no user", request{method: "POST", path: "/provisions/remove_from_user", token: "KEY", body: `{"user_id":"nobody","svc_id":"{{MODEL}}"}`}, 404, nil},

	{"the policy", request{method: "GET", path: "/policy", token: "KEY"}, 200, nil},

	{"remove the function", request{method: "POST", path: "/functions/remove", token: "KEY", body: `{"svc_id":"{{FUNCTION}}"}`}, 200, nil},
	{"remove it again", request{method: "POST", path: "/functions/remove", token: "KEY", body: `{"svc_id":"{{FUNCTION}}"}`}, 404, nil},
	{"remove the dataset", request{method: "POST", path: "/data_integration/remove", token: "KEY", body: `{"svc_id":"{{DATASET}}"}`}, 200, nil},
	{"remove it again", request{method: "POST", path: "/data_integration/remove", token: "KEY", body: `{"svc_id":"{{DATASET}}"}`}, 404, nil},

	{"SCIM configuration", request{method: "GET", path: "/scim/v2/ServiceProviderConfig", token: "SCIM"}, 200, nil},
	{"SCIM resource types", request{method: "GET", path: "/scim/v2/ResourceTypes", token: "SCIM"}, 200, nil},
	{"SCIM user type", request{method: "GET", path: "/scim/v2/ResourceTypes/User", token: "SCIM"}, 200, nil},
	{"no such type", request{method: "GET", path: "/scim/v2/ResourceTypes/Device", token: "SCIM"}, 404, nil},
	{"SCIM schemas", request{method: "GET", path: "/scim/v2/Schemas", token: "SCIM"}, 200, nil},
	{"SCIM user schema", request{method: "GET", path: "/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", token: "SCIM"}, 200, nil},
	{"SCIM with an API key", request{method: "GET", path: "/scim/v2/Users", token: "KEY"}, 401, nil},
	{"create a SCIM user", request{method: "POST", path: "/scim/v2/Users", token: "SCIM", body: scimUserBody,
		contentType: "application/scim+json"}, 201, map[string]string{"SUSER": "id"}},
	{"its userName is taken", request{method: "POST", path: "/scim/v2/Users", token: "SCIM", body: scimUserBody,
		contentType: "application/scim+json"}, 409, nil},
	{"a user needs a userName", request{method: "POST", path: "/scim/v2/Users", token: "SCIM",
		body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"]}`, contentType: "application/scim+json"}, 400, nil},
	{"too large for SCIM", request{method: "POST", path: "/scim/v2/Users", token: "SCIM",
		body: `{"userName":"` + strings.Repeat("x", 1<<20) + `"}`, contentType: "application/scim+json"}, 413, nil},
	{"list SCIM users", request{method: "GET", path: "/scim/v2/Users?filter=userName%20eq%20%22grace@acme.test%22&count=5", token: "SCIM"}, 200, nil},
	{"a bad filter", request{method: "GET", path: "/scim/v2/Users?filter=userName%20zz", token: "SCIM"}, 400, nil},
	{"search SCIM users", request{method: "POST", path: "/scim/v2/Users/.search", token: "SCIM",
		body: `{"filter":"active eq true","attributes":["userName"]}`, contentType: "application/scim+json"}, 200, nil},
	{"get the SCIM user", request{method: "GET", path: "/scim/v2/Users/{{SUSER}}", token: "SCIM"}, 200, nil},
	{"get no SCIM user", request{method: "GET", path: "/scim/v2/Users/nope", token: "SCIM"}, 404, nil},
	{"replace the SCIM user", request{method: "PUT", path: "/scim/v2/Users/{{SUSER}}", token: "SCIM",
		body: strings.Replace(scimUserBody, "Hopper", "Murray Hopper", 1), contentType: "application/scim+json"}, 200, nil},
	{"deactivate the SCIM user", request{method: "PATCH", path: "/scim/v2/Users/{{SUSER}}", token: "SCIM", body: patchInactive,
		contentType: "application/scim+json"}, 200, nil},
	{"patch a stale version", request{method: "PATCH", path: "/scim/v2/Users/{{SUSER}}", token: "SCIM", body: patchInactive,
		contentType: "application/scim+json", header: []string{"If-Match", `W/"1"`}}, 412, nil},
	{"create a SCIM group", request{method: "POST", path: "/scim/v2/Groups", token: "SCIM",
		body:        `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"eng","members":[{"value":"{{SUSER}}"}]}`,
		contentType: "application/scim+json"}, 201, map[string]string{"SGROUP": "id"}},
	{"a group of strangers", request{method: "POST", path: "/scim/v2/Groups", token: "SCIM",
		body: `{"displayName":"ops","members":[{"value":"ada"}]}`, contentType: "application/scim+json"}, 400, nil},
	{"list SCIM groups", request{method: "GET", path: "/scim/v2/Groups/", token: "SCIM"}, 200, nil},
	{"search SCIM groups", request{method: "POST", path: "/scim/v2/Groups/.search", token: "SCIM",
		body: `{"filter":"displayName eq \"eng\""}`, contentType: "application/scim+json"}, 200, nil},
	{"get the SCIM group", request{method: "GET", path: "/scim/v2/Groups/{{SGROUP}}?excludedAttributes=members", token: "SCIM"}, 200, nil},
	{"replace the SCIM group", request{method: "PUT", path: "/scim/v2/Groups/{{SGROUP}}", token: "SCIM",
		body: `{"displayName":"engineering","members":[]}`, contentType: "application/scim+json"}, 200, nil},
	{"patch the SCIM group", request{method: "PATCH", path: "/scim/v2/Groups/{{SGROUP}}", token: "SCIM",
		body:        `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":"members","value":[{"value":"{{SUSER}}","display":"ada"}]}]}`,
		contentType: "application/scim+json"}, 204, nil},
	{"patch the SCIM group, asking for it back", request{method: "PATCH", path: "/scim/v2/Groups/{{SGROUP}}?attributes=members", token: "SCIM",
		body:        `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"externalId","value":"e-1"}]}`,
		contentType: "application/scim+json"}, 200, nil},
	{"a SCIM group changes only through SCIM", request{method: "POST", path: "/groups/add_member", token: "KEY",
		body: `{"group_id":"{{SGROUP}}","user_id":"ada"}`}, 409, nil},
	{"delete the SCIM group", request{method: "DELETE", path: "/scim/v2/Groups/{{SGROUP}}", token: "SCIM"}, 204, nil},
	{"delete it again", request{method: "DELETE", path: "/scim/v2/Groups/{{SGROUP}}", token: "SCIM"}, 404, nil},
	{"delete the SCIM user", request{method: "DELETE", path: "/scim/v2/Users/{{SUSER}}", token: "SCIM"}, 204, nil},
	{"rotate the SCIM token", request{method: "POST", path: "/auth_integration/scim_token/rotate", token: "KEY",
		body: `{"auth_integration_id":"{{SINTEG}}"}`}, 200, map[string]string{"SCIM": "scim.token"}},
	{"an import integration has no SCIM token", request{method: "POST", path: "/auth_integration/scim_token/rotate", token: "KEY",
		body: `{"auth_integration_id":"{{INTEGRATION}}"}`}, 404, nil},
	{"revoke the SCIM token", request{method: "POST", path: "/auth_integration/scim_token/revoke", token: "KEY",
		body: `{"auth_integration_id":"{{SINTEG}}"}`}, 200, nil},
	{"the operator rotates it", request{method: "POST", path: "/admin/orgs/{{ORG}}/auth_integrations/{{SINTEG}}/scim_token", token: "ADMIN"}, 200, nil},
	{"the operator revokes it", request{method: "DELETE", path: "/admin/orgs/{{ORG}}/auth_integrations/{{SINTEG}}/scim_token", token: "ADMIN"}, 200, nil},
	{"the operator names no such integration", request{method: "DELETE", path: "/admin/orgs/{{ORG}}/auth_integrations/nope/scim_token", token: "ADMIN"}, 404, nil},
	{"remove the SCIM integration", request{method: "POST", path: "/auth_integration/remove", token: "KEY",
		body: `{"auth_integration_id":"{{SINTEG}}"}`}, 200, nil},
	{"remove it again", request{method: "POST", path: "/auth_integration/remove", token: "KEY",
		body: `{"auth_integration_id":"{{SINTEG}}"}`}, 404, nil},

	{"remove the model", request{method: "POST", path: "/llm_integration/remove", token: "KEY", body: `{"svc_id":"{{MODEL}}"}`}, 200, nil},
	{"remove it again", request{method: "POST", path: "/llm_integration/remove", token: "KEY", body: `{"svc_id":"{{MODEL}}"}`}, 404, nil},
}

// auditFlow reads the audit lists once apiFlow's decisions are written.
var auditFlow = []step{
	{"the decision log", request{method: "GET", path: "/audit/decisions", token: "KEY"}, 200, nil},
	{"its first page", request{method: "GET", path: "/audit/decisions?limit=1", token: "KEY"}, 200,
		map[string]string{"CURSOR": "next_cursor"}},
	{"its second page", request{method: "GET", path: "/audit/decisions/?limit=1&result=false&cursor={{CURSOR}}", token: "KEY"}, 200, nil},
	{"a bad page size", request{method: "GET", path: "/audit/decisions?limit=0", token: "KEY"}, 422, nil},
	{"the audit trail", request{method: "GET", path: "/audit/events", token: "KEY"}, 200, nil},
	{"its grants", request{method: "GET", path: "/audit/events?action=grant.created&user_id=ada", token: "KEY"}, 200, nil},
}

// TestOpenAPIMatchesResponses drives a representative flow of every operation through the
// real router and validates every request and response against the document, so that the
// document cannot drift from what the server sends. It fails for any operation the flow did
// not see succeed, so a new route needs a step here as well as its description.
func TestOpenAPIMatchesResponses(t *testing.T) {
	spec := loadOpenAPI(t)
	spec.loadValidators(t, true)
	var store *faultyStore
	var dl *decisionlog.Log
	f := newIntegrationFixture(t, withAudit, withFaultyStore(&store), withDecisionLog(&dl, decisionlog.Config{}, nil))
	c := newSpecClient(t, spec, f.srv)
	vars := map[string]string{"ADMIN": adminToken}
	runFlow(t, c, vars, apiFlow)
	gatewayFlow(t, c, f.fixture, vars["KEY"])
	flush(t, dl)
	runFlow(t, c, vars, auditFlow)

	// The failures no step above can cause on a healthy server.
	store.set(broken)
	c.send("the store is down", request{method: "POST", path: "/provisions/can_user_access", token: vars["KEY"],
		body: `{"user_id":"ada","svc_id":"` + vars["DATASET"] + `"}`}, http.StatusServiceUnavailable)
	store.set(healthy)
	f.srv.SetReady(false)
	c.send("shutting down", request{method: "GET", path: "/readyz"}, http.StatusServiceUnavailable)
	limited := newFixture(t, withRateLimit(1, 1))
	_, key := limited.org("acme")
	lc := newSpecClient(t, spec, limited.srv)
	lc.seen = c.seen
	lc.send("the last request the limit allows", request{method: "GET", path: "/users/list", token: key}, http.StatusOK)
	lc.send("one too many", request{method: "GET", path: "/users/list", token: key}, http.StatusTooManyRequests)

	// Every operation was seen to succeed (or, for the one that only refuses, to refuse).
	var missing []string
	for _, o := range spec.ops {
		var want []int
		for code := range o.Op["responses"].(map[string]any) {
			if n, err := strconv.Atoi(code); err == nil && n < 300 {
				want = append(want, n)
			}
		}
		if len(want) == 0 {
			want = []int{http.StatusMethodNotAllowed}
		}
		for _, code := range want {
			if !c.seen[o.ID][code] {
				missing = append(missing, fmt.Sprintf("%s %s (%s) answering %d", o.Method, o.Path, o.ID, code))
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the flow never validated %s: add a step to apiFlow", m)
	}
	// And every kind of error response was checked against its description at least once.
	statuses := map[int]bool{}
	for _, codes := range c.seen {
		for code := range codes {
			statuses[code] = true
		}
	}
	for _, code := range []int{400, 401, 403, 404, 405, 409, 412, 413, 415, 422, 429, 502, 503} {
		if !statuses[code] {
			t.Errorf("no step validated a %d response", code)
		}
	}
}

// gatewayFlow turns the gateway endpoints on and sends them a request of every method they
// serve, and their refusals.
func gatewayFlow(t *testing.T, c *specClient, f *fixture, key string) {
	t.Helper()
	g, err := gateway.New(gateway.Config{UserHeader: "X-User"}, f.srv, f.srv, f.srv)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.SetGateway(g)
	model := f.model(key, "gateway-model")
	user := f.user(key, "gateway-user@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": model})
	for _, path := range []string{"/gateway/auth", "/gateway/auth/completions"} {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			// Caddy and nginx's auth_request ask with GET and no body: the model is then in a
			// header or the path, which this gateway is not set to read, so every method here
			// carries a body.
			r := request{method: m, path: path, body: `{"model":"gateway-model","messages":[]}`,
				header: []string{"X-Grantry-Key", key, "X-User", user, "X-Request-ID", "gw-1"}}
			c.send("gateway "+m, r, http.StatusOK)
		}
	}
	c.send("a model the user may not use", request{method: "POST", path: "/gateway/auth", body: `{"model":"llama"}`,
		header: []string{"X-Grantry-Key", key, "X-User", user}}, http.StatusForbidden)
	c.send("no user", request{method: "POST", path: "/gateway/auth", body: `{"model":"llama"}`,
		header: []string{"X-Grantry-Key", key}}, http.StatusUnauthorized)
	c.send("no gateway key", request{method: "POST", path: "/gateway/auth", body: `{"model":"llama"}`, token: key}, http.StatusUnauthorized)
	c.send("the user's models", request{method: "GET", path: "/gateway/v1/models", header: []string{"X-Grantry-Key", key, "X-User", user}}, http.StatusOK)
	c.send("the user's models, with a slash", request{method: "GET", path: "/gateway/v1/models/", header: []string{"X-Grantry-Key", key, "X-User", user}}, http.StatusOK)
}
