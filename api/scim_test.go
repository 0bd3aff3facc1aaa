package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// scimDo sends a SCIM request with a bearer token (none if empty) and a body (none if empty),
// and checks that the answer, whatever it is, is SCIM's media type.
func (f *fixture) scimDo(method, path, token, body string, header ...string) response {
	f.tb.Helper()
	return f.scimDoOn(f.srv, method, path, token, body, header...)
}

// scimDoOn is scimDo on another server, such as a second replica on the same store.
func (f *fixture) scimDoOn(srv http.Handler, method, path, token, body string, header ...string) response {
	f.tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/scim+json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/scim+json" {
		f.tb.Errorf("%s %s: Content-Type = %q, want application/scim+json", method, path, ct)
	}
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// scimUser creates a SCIM user and returns its id.
func (f *fixture) scimUser(token, userName string) string {
	f.tb.Helper()
	r := f.scimDo("POST", "/scim/v2/Users", token, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"`+userName+`",
		"name":{"givenName":"Ada","familyName":"Lovelace"},"active":true}`)
	if r.Status != http.StatusCreated {
		f.tb.Fatalf("create SCIM user = %d %s", r.Status, r.Body)
	}
	return decode[struct{ ID string }](f.tb, r).ID
}

const patchInactive = `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`

func TestCreateAuthIntegrationType(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name     string
		body     map[string]any
		wantSCIM bool
	}{
		{"no type is an import", map[string]any{"name": "hr"}, false},
		{"import", map[string]any{"name": "csv", "type": "import"}, false},
		{"scim", map[string]any{"name": "okta", "type": "scim", "metadata": "{}"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.must("POST", "/auth_integration/create", key, tt.body)
			got := decode[map[string]map[string]string](t, r)
			if got["auth_integration"]["name"] != tt.body["name"] || got["auth_integration"]["id"] == "" {
				t.Errorf("auth_integration = %v", got["auth_integration"])
			}
			scim, ok := got["scim"]
			if ok != tt.wantSCIM {
				t.Fatalf("scim object present = %v, want %v: %s", ok, tt.wantSCIM, r.Body)
			}
			if ok && (scim["base_url"] != "/scim/v2" || !strings.HasPrefix(scim["token"], "gscim_") || len(scim["token"]) != len("gscim_")+43) {
				t.Errorf("scim = %v, want base_url /scim/v2 and a gscim_ token", scim)
			}
		})
	}
	r := f.do("POST", "/auth_integration/create", key, map[string]any{"name": "x", "type": "ldap"})
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("unknown type = %d %s, want 422", r.Status, r.Body)
	}
	jsonEqual(t, r.Body, `{"detail":[{"loc":["body","type"],"msg":"Input should be 'import' or 'scim'","type":"literal_error"}]}`)
	if r := f.do("POST", "/auth_integration/create", key, map[string]any{"name": "okta", "type": "scim"}); r.Status != http.StatusConflict {
		t.Errorf("a SCIM integration with a taken name = %d %s, want 409", r.Status, r.Body)
	}
	list := f.must("GET", "/auth_integration/list", key, nil)
	if n := strings.Count(string(list.Body), `"id"`); n != 3 {
		t.Errorf("list = %s, want the 3 integrations", list.Body)
	}
	if strings.Contains(string(list.Body), "gscim_") {
		t.Errorf("the list shows a token: %s", list.Body)
	}
}

// TestSCIMTokenScoping: a SCIM token works only on /scim/v2/ and only for its own integration;
// an API key does not work there at all.
func TestSCIMTokenScoping(t *testing.T) {
	f := newFixture(t)
	_, keyA := f.org("a")
	_, keyB := f.org("b")
	_, tokenA := f.scimIntegration(keyA, "okta")
	_, tokenA2 := f.scimIntegration(keyA, "entra")
	_, tokenB := f.scimIntegration(keyB, "okta")
	model := f.model(keyA, "gpt")
	userA := f.scimUser(tokenA, "ada@a.example")
	f.must("POST", "/provisions/add_to_user", keyA, map[string]string{"user_id": userA, "svc_id": model})
	groupA := decode[struct{ ID string }](t, f.scimDo("POST", "/scim/v2/Groups", tokenA, `{"displayName":"eng","members":[{"value":"`+userA+`"}]}`)).ID

	t.Run("refused on SCIM", func(t *testing.T) {
		for _, tc := range []struct{ name, header string }{
			{"no credentials", ""},
			{"the organization's API key", "Bearer " + keyA},
			{"the admin token", "Bearer " + adminToken},
			{"an unknown SCIM token", "Bearer gscim_0000000000000000000000000000000000000000000"},
			{"a SCIM token under another scheme", "Basic " + tokenA},
		} {
			for _, path := range []string{"/scim/v2/Users", "/scim/v2/Groups", "/scim/v2/ServiceProviderConfig", "/scim/v2/Users/" + userA} {
				req := httptest.NewRequest("GET", path, nil)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				rec := httptest.NewRecorder()
				f.srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != "Bearer" || rec.Header().Get("Content-Type") != "application/scim+json" {
					t.Errorf("%s: GET %s = %d %v", tc.name, path, rec.Code, rec.Header())
					continue
				}
				jsonEqual(t, rec.Body.Bytes(), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"401","detail":"Not authenticated"}`)
			}
		}
	})
	t.Run("refused outside SCIM", func(t *testing.T) {
		for _, r := range [][2]string{
			{"GET", "/users/list"}, {"GET", "/auth_integration/list"}, {"POST", "/auth_integration/create"},
			{"POST", "/provisions/can_user_access"}, {"POST", "/provisions/add_to_user"}, {"GET", "/llm_integration/list/"},
			{"POST", "/admin/orgs"},
		} {
			got := f.do(r[0], r[1], tokenA, map[string]string{"user_id": userA, "svc_id": model, "name": "x"})
			if got.Status != http.StatusUnauthorized {
				t.Errorf("%s %s with a SCIM token = %d %s, want 401", r[0], r[1], got.Status, got.Body)
			}
		}
	})
	t.Run("another organization's token sees nothing", func(t *testing.T) {
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/scim/v2/Users/" + userA, ""},
			{"PUT", "/scim/v2/Users/" + userA, `{"userName":"x@b.example"}`},
			{"PATCH", "/scim/v2/Users/" + userA, patchInactive},
			{"DELETE", "/scim/v2/Users/" + userA, ""},
			{"GET", "/scim/v2/Groups/" + groupA, ""},
			{"PATCH", "/scim/v2/Groups/" + groupA, `{"Operations":[{"op":"remove","path":"members"}]}`},
			{"DELETE", "/scim/v2/Groups/" + groupA, ""},
		} {
			for name, token := range map[string]string{"org b": tokenB, "org a's other integration": tokenA2} {
				if r := f.scimDo(tc.method, tc.path, token, tc.body); r.Status != http.StatusNotFound {
					t.Errorf("%s: %s %s = %d %s, want 404", name, tc.method, tc.path, r.Status, r.Body)
				}
			}
		}
		for _, path := range []string{
			"/scim/v2/Users", "/scim/v2/Users?filter=userName%20eq%20%22ada@a.example%22", "/scim/v2/Users?filter=id%20eq%20%22" + userA + "%22",
			"/scim/v2/Groups", "/scim/v2/Groups?filter=displayName%20eq%20%22eng%22",
		} {
			for name, token := range map[string]string{"org b": tokenB, "org a's other integration": tokenA2} {
				r := f.scimDo("GET", path, token, "")
				jsonEqual(t, r.Body, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:ListResponse"],"totalResults":0,"startIndex":1,"itemsPerPage":0,"Resources":[]}`)
				if t.Failed() {
					t.Fatalf("%s: GET %s", name, path)
				}
			}
		}
		// Nothing of A changed: the user is active, granted and in its group.
		if !f.check(keyA, userA, model) {
			t.Error("A's user lost access")
		}
		if r := f.scimDo("GET", "/scim/v2/Groups/"+groupA, tokenA, ""); !strings.Contains(string(r.Body), userA) {
			t.Errorf("A's group lost its member: %s", r.Body)
		}
		if f.check(keyB, userA, model) {
			t.Error("B's API key sees A's SCIM user's grant")
		}
		if strings.Contains(string(f.must("GET", "/users/list", keyB, nil).Body), userA) {
			t.Error("B's users list shows A's SCIM user")
		}
	})
}

// TestSCIMUsersAreUsers: a user pushed over SCIM is a Grantry user like an imported one.
func TestSCIMUsersAreUsers(t *testing.T) {
	f := newFixture(t)
	orgID, key := f.org("acme")
	integ, token := f.scimIntegration(key, "Okta")
	id := f.scimUser(token, "Ada@Example.com")

	list := decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users
	if len(list) != 1 {
		t.Fatalf("users = %+v", list)
	}
	u := list[0]
	if u.ID != id || u.Email != "Ada@Example.com" || u.First != "Ada" || u.Last != "Lovelace" || u.BaseUserID != orgID ||
		u.SourceMetadata.Name != "Okta" || u.SourceMetadata.ID != integ || u.ImportedAt != u.ModifiedAt || !strings.HasPrefix(u.ImportedAt, "2026-11-22T09:30:00.") {
		t.Errorf("listed user = %+v", u)
	}

	f.clock.Advance(time.Minute)
	f.scimDo("PATCH", "/scim/v2/Users/"+id, token, `{"Operations":[{"op":"Replace","path":"name.familyName","value":"King"}]}`)
	f.clock.Advance(time.Minute)
	// A PATCH that changes nothing leaves modified_at alone.
	f.scimDo("PATCH", "/scim/v2/Users/"+id, token, `{"Operations":[{"op":"Replace","path":"name.familyName","value":"King"}]}`)
	u2 := decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users[0]
	if u2.Last != "King" || u2.ImportedAt != u.ImportedAt || u2.ModifiedAt != "2026-11-22T09:31:00.000Z" {
		t.Errorf("after a PATCH the user is %+v", u2)
	}

	// Access follows active, and the grants stay while the user is inactive.
	model := f.model(key, "gpt")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": id, "svc_id": model})
	f.scimDo("PATCH", "/scim/v2/Users/"+id, token, patchInactive)
	if f.check(key, id, model) || decode[bool](t, f.must("POST", "/provisions/can_user_access_all", key, map[string]any{"user_id": id, "tags": []string{model}})) {
		t.Error("an inactive user has access")
	}
	if body := string(f.must("GET", "/llm_integration/list/?user_id="+id, key, nil).Body); strings.Contains(body, model) {
		t.Errorf("an inactive user's model list shows the model: %s", body)
	}
	if u := decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users[0]; len(u.ResourceList) != 1 {
		t.Errorf("an inactive user's grants are gone: %+v", u.ResourceList)
	}
	// A PUT that leaves active out does not bring the user back.
	r := f.scimDo("PUT", "/scim/v2/Users/"+id, token, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"ada@example.com"}`)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"active":false`) || f.check(key, id, model) {
		t.Errorf("PUT without active = %d %s", r.Status, r.Body)
	}
	// Deleting removes the user from /users/list, and its grants with it.
	if r := f.scimDo("DELETE", "/scim/v2/Users/"+id, token, ""); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	if n := len(decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users); n != 0 {
		t.Errorf("after DELETE /users/list has %d users", n)
	}
	if r := f.do("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": id, "svc_id": model}); r.Status != http.StatusNotFound {
		t.Errorf("revoking from the deleted user = %d, want 404", r.Status)
	}
}

func TestSCIMErrors(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	id := f.scimUser(token, "ada@example.com")
	version := f.scimDo("GET", "/scim/v2/Users/"+id, token, "").Header.Get("ETag")
	tests := []struct {
		name         string
		method, path string
		body         string
		header       []string
		status       int
		scimType     string
	}{
		{"unknown path", "GET", "/scim/v2/Nope", "", nil, 404, ""},
		{"unknown user", "GET", "/scim/v2/Users/nope", "", nil, 404, ""},
		{"method not allowed", "DELETE", "/scim/v2/Users", "", nil, 405, ""},
		{"body not JSON", "POST", "/scim/v2/Users", `{"userName":`, nil, 400, "invalidSyntax"},
		{"body not an object", "POST", "/scim/v2/Users", `["userName"]`, nil, 400, "invalidSyntax"},
		{"no body", "POST", "/scim/v2/Groups", ``, nil, 400, "invalidSyntax"},
		{"no userName", "POST", "/scim/v2/Users", `{"name":{"givenName":"X"}}`, nil, 400, "invalidValue"},
		{"no userName, but emails", "POST", "/scim/v2/Users", `{"emails":[{"value":"x@example.com","type":"work","primary":true}]}`, nil, 400, "invalidValue"},
		{"an empty userName", "POST", "/scim/v2/Users", `{"userName":"","emails":[{"value":"x@example.com"}]}`, nil, 400, "invalidValue"},
		{"PUT without userName", "PUT", "/scim/v2/Users/" + id, `{"emails":[{"value":"ada@example.com","primary":true}],"active":true}`, nil, 400, "invalidValue"},
		{"userName not a string", "POST", "/scim/v2/Users", `{"userName":42}`, nil, 400, "invalidValue"},
		{"userName too long", "POST", "/scim/v2/Users", `{"userName":"` + strings.Repeat("a", 257) + `"}`, nil, 400, "invalidValue"},
		{"no displayName", "POST", "/scim/v2/Groups", `{"members":[]}`, nil, 400, "invalidValue"},
		{"member without value", "POST", "/scim/v2/Groups", `{"displayName":"g2","members":[{"type":"User"}]}`, nil, 400, "invalidValue"},
		{"bad filter", "GET", "/scim/v2/Users?filter=userName%20eq", "", nil, 400, "invalidFilter"},
		{"bad startIndex", "GET", "/scim/v2/Users?startIndex=first", "", nil, 400, "invalidValue"},
		{"PATCH without Operations", "PATCH", "/scim/v2/Users/" + id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]}`, nil, 400, "invalidSyntax"},
		{"PATCH remove without path", "PATCH", "/scim/v2/Users/" + id, `{"Operations":[{"op":"remove"}]}`, nil, 400, "noTarget"},
		{"PATCH bad path", "PATCH", "/scim/v2/Users/" + id, `{"Operations":[{"op":"replace","path":"emails[type","value":"x"}]}`, nil, 400, "invalidPath"},
		{"PATCH an unknown user", "PATCH", "/scim/v2/Users/nope", patchInactive, nil, 404, ""},
		{"PATCH removing userName", "PATCH", "/scim/v2/Users/" + id, `{"Operations":[{"op":"remove","path":"userName"}]}`, nil, 400, "invalidValue"},
		{"If-Match of another version", "PATCH", "/scim/v2/Users/" + id, patchInactive, []string{"If-Match", `W/"1"`}, 412, ""},
		{"If-Match of another version on DELETE", "DELETE", "/scim/v2/Users/" + id, "", []string{"If-Match", `W/"1"`}, 412, ""},
		{"body over 1 MiB", "POST", "/scim/v2/Users", `{"userName":"` + strings.Repeat("a", 1<<20) + `"}`, nil, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.scimDo(tt.method, tt.path, token, tt.body, tt.header...)
			if r.Status != tt.status {
				t.Fatalf("status = %d %s, want %d", r.Status, r.Body, tt.status)
			}
			e := decode[map[string]any](t, r)
			if s, _ := e["schemas"].([]any); len(s) != 1 || s[0] != "urn:ietf:params:scim:api:messages:2.0:Error" {
				t.Errorf("schemas = %v", e["schemas"])
			}
			if got, _ := e["scimType"].(string); got != tt.scimType || e["status"] != strconv.Itoa(tt.status) || e["detail"] == nil || e["detail"] == "" {
				t.Errorf("error = %s, want status %d and scimType %q", r.Body, tt.status, tt.scimType)
			}
		})
	}
	// None of the refused requests changed the user.
	if r := f.scimDo("GET", "/scim/v2/Users/"+id, token, ""); r.Header.Get("ETag") != version || !strings.Contains(string(r.Body), `"active":true`) {
		t.Errorf("after refused requests the user is %s (ETag %s, was %s)", r.Body, r.Header.Get("ETag"), version)
	}
	if r := f.scimDo("PATCH", "/scim/v2/Users/"+id, token, patchInactive, "If-Match", version); r.Status != http.StatusOK || r.Header.Get("ETag") == version {
		t.Errorf("PATCH with the current If-Match = %d, ETag %s (was %s)", r.Status, r.Header.Get("ETag"), version)
	}
}

func TestSCIMPaging(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	var ids []string
	for _, u := range []string{"a@x.example", "b@x.example", "c@x.example"} {
		ids = append(ids, f.scimUser(token, u))
	}
	tests := []struct {
		query                              string
		total, startIndex, itemsPerPage, n int
	}{
		{"", 3, 1, 3, 3},
		{"?startIndex=2&count=1", 3, 2, 1, 1},
		{"?startIndex=3&count=10", 3, 3, 1, 1},
		{"?startIndex=4", 3, 4, 0, 0},
		{"?count=0", 3, 1, 0, 0},
		{"?startIndex=0&count=-5", 3, 1, 0, 0},
		{"?STARTINDEX=2&Count=5", 3, 2, 2, 2},
		{"?filter=userName%20sw%20%22b%22%20or%20userName%20sw%20%22c%22&count=1&startIndex=2", 2, 2, 1, 1},
		{"?filter=active%20eq%20true&attributes=userName", 3, 1, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := decode[struct {
				TotalResults, StartIndex, ItemsPerPage int
				Resources                              []map[string]any
			}](t, f.scimDo("GET", "/scim/v2/Users"+tt.query, token, ""))
			if r.TotalResults != tt.total || r.StartIndex != tt.startIndex || r.ItemsPerPage != tt.itemsPerPage || len(r.Resources) != tt.n {
				t.Errorf("got total %d, startIndex %d, itemsPerPage %d, %d resources; want %d, %d, %d, %d",
					r.TotalResults, r.StartIndex, r.ItemsPerPage, len(r.Resources), tt.total, tt.startIndex, tt.itemsPerPage, tt.n)
			}
			if strings.Contains(tt.query, "attributes=userName") {
				for _, res := range r.Resources {
					if res["name"] != nil || res["userName"] == nil || res["id"] == nil {
						t.Errorf("attributes=userName gave %v", res)
					}
				}
			}
		})
	}
}

func TestSCIMDiscovery(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	for _, tc := range []struct{ path, golden string }{
		{"/scim/v2/ServiceProviderConfig", "scim_service_provider_config"},
		{"/scim/v2/ResourceTypes", "scim_resource_types"},
	} {
		r := f.scimDo("GET", tc.path, token, "")
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", tc.path, r.Status, r.Body)
		}
		golden(t, tc.golden, r.Body)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/scim/v2/ResourceTypes/Group", 200, `"endpoint":"/Groups"`},
		{"/scim/v2/ResourceTypes/Device", 404, `"status":"404"`},
		{"/scim/v2/Schemas", 200, `"totalResults":3`},
		{"/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", 200, `"name":"userName"`},
		{"/scim/v2/Schemas/urn:ietf:params:scim:schemas:extension:enterprise:2.0:User", 200, `"name":"manager"`},
		{"/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:Device", 404, `"status":"404"`},
	} {
		r := f.scimDo("GET", tc.path, token, "")
		if r.Status != tc.status || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("GET %s = %d %.300s, want %d with %s", tc.path, r.Status, r.Body, tc.status, tc.want)
		}
	}
}

// TestSCIMLocation: meta.location and Location are absolute URLs of the resource, as the
// request reached Grantry.
func TestSCIMLocation(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	r := f.scimDo("POST", "/scim/v2/Users", token, `{"userName":"a@x.example"}`, "X-Forwarded-Proto", "https")
	id := decode[struct{ ID string }](t, r).ID
	if want := "https://example.com/scim/v2/Users/" + id; r.Header.Get("Location") != want {
		t.Errorf("Location = %q, want %q", r.Header.Get("Location"), want)
	}
	g := f.scimDo("POST", "/scim/v2/Groups", token, `{"displayName":"g","members":[{"value":"`+id+`"}]}`)
	jsonEqual(t, []byte(extract(t, g.Body, "members")), `[{"value":"`+id+`","$ref":"http://example.com/scim/v2/Users/`+id+`","type":"User"}]`)
}

// extract returns the JSON text of one member of a JSON object.
func extract(tb testing.TB, body []byte, member string) string {
	tb.Helper()
	m := decode[map[string]any](tb, response{Body: body})
	return show(m[member])
}

// TestSCIMSearch: POST /.search takes the query in its body (RFC 7644 §3.4.3).
func TestSCIMSearch(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	a := f.scimUser(token, "a@x.example")
	b := f.scimUser(token, "b@x.example")
	// A second group without members: the search by member must find only the first.
	eng := decode[struct{ ID string }](t, f.scimDo("POST", "/scim/v2/Groups", token, `{"displayName":"eng","members":[{"value":"`+a+`"}]}`)).ID
	f.scimDo("POST", "/scim/v2/Groups", token, `{"displayName":"ops"}`)
	// Users are listed by id, so the second page of one holds the user with the greater id.
	second, secondName := b, "b@x.example"
	if a > b {
		second, secondName = a, "a@x.example"
	}
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"users by filter, projected", "/scim/v2/Users/.search",
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],"filter":"userName eq \"B@X.example\"","attributes":["userName"]}`, 200,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:ListResponse"],"totalResults":1,"startIndex":1,"itemsPerPage":1,
			  "Resources":[{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"` + b + `","userName":"b@x.example"}]}`},
		{"users paged", "/scim/v2/Users/.search", `{"startIndex":2,"count":1,"excludedAttributes":["meta","name","active"]}`, 200,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:ListResponse"],"totalResults":2,"startIndex":2,"itemsPerPage":1,
			  "Resources":[{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"` + second + `","userName":"` + secondName + `"}]}`},
		{"groups by member", "/scim/v2/Groups/.search", `{"filter":"members[value eq \"` + a + `\"]","attributes":["displayName"]}`, 200,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:ListResponse"],"totalResults":1,"startIndex":1,"itemsPerPage":1,
			  "Resources":[{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"id":"` + eng + `","displayName":"eng"}]}`},
		{"bad filter", "/scim/v2/Users/.search", `{"filter":"userName xx \"a\""}`, 400,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidFilter","detail":"\"xx\" at offset 9 of the filter is not an operator"}`},
		{"count not a number", "/scim/v2/Users/.search", `{"count":"ten"}`, 400, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.scimDo("POST", tt.path, token, tt.body)
			if r.Status != tt.status {
				t.Fatalf("status = %d %s, want %d", r.Status, r.Body, tt.status)
			}
			if tt.want == "" {
				return
			}
			jsonEqual(t, r.Body, tt.want)
		})
	}
}

// TestSCIMGroupPatchAnswer: a group PATCH answers 204 with the new ETag and no body, as Entra
// ID expects, unless the request asks for attributes: then 200 with the group, projected.
func TestSCIMGroupPatchAnswer(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	ada := f.scimUser(token, "ada@example.com")
	r := f.scimDo("POST", "/scim/v2/Groups", token, `{"displayName":"eng"}`)
	g := decode[struct{ ID string }](t, r).ID
	created := r.Header.Get("ETag")
	add := `{"Operations":[{"op":"add","path":"members","value":[{"value":"` + ada + `","display":"Ada L."}]}]}`

	r = f.scimDo("PATCH", "/scim/v2/Groups/"+g, token, add)
	if r.Status != http.StatusNoContent || len(r.Body) != 0 || r.Header.Get("ETag") == "" || r.Header.Get("ETag") == created {
		t.Fatalf("PATCH = %d %q, ETag %q (was %q); want 204, no body, a new ETag", r.Status, r.Body, r.Header.Get("ETag"), created)
	}
	if got := f.scimDo("GET", "/scim/v2/Groups/"+g, token, ""); got.Header.Get("ETag") != r.Header.Get("ETag") {
		t.Errorf("GET ETag = %q, the PATCH's %q", got.Header.Get("ETag"), r.Header.Get("ETag"))
	}
	for _, q := range []string{"?attributes=members", "?excludedAttributes=displayName"} {
		r = f.scimDo("PATCH", "/scim/v2/Groups/"+g+q, token, `{"Operations":[{"op":"replace","path":"externalId","value":"e`+q+`"}]}`)
		if r.Status != http.StatusOK {
			t.Fatalf("PATCH%s = %d %s, want 200", q, r.Status, r.Body)
		}
		body := decode[map[string]any](t, r)
		if q == "?attributes=members" && (body["displayName"] != nil || body["externalId"] != nil) {
			t.Errorf("PATCH%s = %s, want only id, schemas and members", q, r.Body)
		}
		if q == "?excludedAttributes=displayName" && (body["displayName"] != nil || body["externalId"] != "e"+q) {
			t.Errorf("PATCH%s = %s, want the group without displayName", q, r.Body)
		}
		jsonEqual(t, []byte(extract(t, r.Body, "members")), `[{"value":"`+ada+`","display":"Ada L.","$ref":"http://example.com/scim/v2/Users/`+ada+`","type":"User"}]`)
	}
	// A user's PATCH still answers with the user.
	if r := f.scimDo("PATCH", "/scim/v2/Users/"+ada, token, patchInactive); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"active":false`) {
		t.Errorf("user PATCH = %d %s, want 200 with the user", r.Status, r.Body)
	}
}

// TestSCIMFilterBounds: a filter too long or of too many terms is refused as invalidFilter
// before anything is evaluated, wherever it comes from, and one within the bounds is answered.
func TestSCIMFilterBounds(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	ada := f.scimUser(token, "ada@example.com")
	f.scimUser(token, "bob@example.com")
	terms := func(n int) string {
		return strings.TrimSuffix(strings.Repeat(`userName eq "nobody@example.com" or `, n-1)+`userName eq "ada@example.com"`, " or ")
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		scimType                 string
	}{
		{"a megabyte of terms in a search", "POST", "/scim/v2/Users/.search", `{"filter":"` + strings.ReplaceAll(terms(25_000), `"`, `\"`) + `"}`, 400, "invalidFilter"},
		{"too many terms in the query", "GET", "/scim/v2/Users?filter=" + url.QueryEscape(terms(101)), "", 400, "invalidFilter"},
		{"too many terms over groups", "GET", "/scim/v2/Groups?filter=" + url.QueryEscape(strings.ReplaceAll(terms(101), "userName", "displayName")), "", 400, "invalidFilter"},
		{"as many terms as allowed", "GET", "/scim/v2/Users?filter=" + url.QueryEscape(terms(100)), "", 200, ""},
		{"too many PATCH operations", "PATCH", "/scim/v2/Users/" + ada, `{"Operations":[` + strings.Repeat(`{"op":"replace","path":"title","value":"x"},`, 1000) + `{"op":"remove","path":"title"}]}`, 400, "invalidValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneOrRefused(t, f.scimDo(tt.method, tt.path, token, tt.body), tt.status, tt.scimType)
		})
	}
}

// wantOneOrRefused checks a SCIM answer: status, and then one result (200) or the SCIM error
// scimType.
func wantOneOrRefused(t *testing.T, r response, status int, scimType string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d %.300s, want %d", r.Status, r.Body, status)
	}
	if status == 200 {
		if got := decode[struct{ TotalResults int }](t, r).TotalResults; got != 1 {
			t.Errorf("totalResults = %d, want 1", got)
		}
		return
	}
	if e := decode[map[string]any](t, r); e["scimType"] != scimType {
		t.Errorf("error = %s, want scimType %s", r.Body, scimType)
	}
}

// TestSCIMFilterWorkBound: a filter no index answers is refused with tooMany when its terms
// times the integration's users exceed the bound, and answered when they do not, through the
// real router.
func TestSCIMFilterWorkBound(t *testing.T) {
	f := newFixture(t)
	org, key := f.org("acme")
	integ, token := f.scimIntegration(key, "okta")
	const users = 10_001 // 100 terms × 10,001 users: just over the bound of a million
	imports := make([]storage.UserImport, users)
	for i := range imports {
		imports[i] = storage.UserImport{Email: fmt.Sprintf("u%05d@example.com", i), First: "U", Last: fmt.Sprint(i)}
	}
	if _, err := f.store.ImportUsers(t.Context(), org, integ, imports, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	terms := func(n int) string {
		return url.QueryEscape(strings.TrimSuffix(strings.Repeat(`name.familyName eq "none" or `, n-1)+`name.familyName eq "7"`, " or "))
	}
	tests := []struct {
		name     string
		terms    int
		status   int
		scimType string
	}{
		{"terms times users over the bound", 100, 400, "tooMany"},
		{"within the bound", 99, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneOrRefused(t, f.scimDo("GET", "/scim/v2/Users?filter="+terms(tt.terms), token, ""), tt.status, tt.scimType)
		})
	}
}
