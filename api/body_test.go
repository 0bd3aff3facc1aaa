package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stalledBody sends a request to the server at addr whose body stops after a few bytes of the
// length it declares, and returns the answer. The connection's own deadline only keeps a broken
// server from hanging the test.
func stalledBody(tb testing.TB, addr, method, path, token string) (*http.Response, []byte) {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: grantry\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"user_id\":", method, path, token)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		tb.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, body
}

// TestStalledBodyAnswersAtTheDeadline: a client that sends its headers and then stalls its
// body gets a 408 with a JSON body (SCIM's under /scim/v2) at the request deadline, and the
// connection is closed.
func TestStalledBodyAnswersAtTheDeadline(t *testing.T) {
	f := newFixture(t, withRequestTimeout(200*time.Millisecond))
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	addr := strings.TrimPrefix(ts.URL, "http://")

	for _, tc := range []struct {
		name, method, path, token, want string
	}{
		{"a check", "POST", "/provisions/can_user_access", key, `{"detail":"The request body did not arrive within the request deadline."}`},
		{"an import", "POST", "/users/import", key, `{"detail":"The request body did not arrive within the request deadline."}`},
		{"a SCIM user", "POST", "/scim/v2/Users", token,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"408","detail":"The request body did not arrive within the request deadline."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := stalledBody(t, addr, tc.method, tc.path, tc.token)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
				t.Errorf("status = %d, closing %v; want 408 and the connection closed", resp.StatusCode, resp.Close)
			}
			jsonEqual(t, body, tc.want)
		})
	}
}

// TestInvalidUTF8IsRefused: text that is not UTF-8 (or a lone surrogate's escape) in a body is
// refused where it is — a 422 json_invalid at the byte, as FastAPI answers — never read as
// U+FFFD, which would make distinct ids one; under /scim/v2 it is a 400 invalidSyntax, and in
// a filter invalidFilter.
func TestInvalidUTF8IsRefused(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "m")
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", key, map[string]string{"name": "hr"})).AuthIntegration.ID
	importBody := func(id string) string {
		return `{"auth_integration_id":"` + integ + `","users":[{"id":"` + id + `","email":"` + id + `@example.com"}]}`
	}
	for _, tc := range []struct {
		name, method, path, body string
		at                       int
	}{
		{"an imported user's id", "POST", "/users/import", importBody("ada\xff"), len(`{"auth_integration_id":"` + integ + `","users":[{"id":"ada`)},
		{"a lone surrogate's escape", "POST", "/users/import", importBody(`ada\udfff`), len(`{"auth_integration_id":"` + integ + `","users":[{"id":"ada`)},
		{"an imported user's attribute key", "POST", "/users/import", `{"auth_integration_id":"` + integ + "\",\"users\":[{\"email\":\"a@x\",\"attributes\":{\"dept\xff\":\"x\"}}]}",
			len(`{"auth_integration_id":"` + integ + `","users":[{"email":"a@x","attributes":{"dept`)},
		{"an imported user's attribute value", "POST", "/users/import", `{"auth_integration_id":"` + integ + `","users":[{"email":"a@x","attributes":{"dept":"x\ud800"}}]}`,
			len(`{"auth_integration_id":"` + integ + `","users":[{"email":"a@x","attributes":{"dept":"x`)},
		{"a checked user's id", "POST", "/provisions/can_user_access", "{\"user_id\":\"ada\xc3\",\"svc_id\":\"" + model + `"}`, len(`{"user_id":"ada`)},
		{"a granted user's id", "POST", "/provisions/add_to_user", "{\"user_id\":\"\xed\xa0\x80\",\"svc_id\":\"" + model + `"}`, len(`{"user_id":"`)},
		{"a model's name", "POST", "/llm_integration/custom_model", "{\"model_name\":\"gpt\xfe\"}", len(`{"model_name":"gpt`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(tc.method, tc.path, key, tc.body)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, fmt.Sprintf(`{"detail":[{"loc":["body",%d],"msg":"JSON decode error","type":"json_invalid"}]}`, tc.at))
		})
	}
	// Nothing was made: two ids that differ only in their invalid bytes are not one user.
	f.must("POST", "/users/import", key, importBody("ada"))
	if users := decode[struct{ Users []struct{ ID string } }](t, f.must("GET", "/users/list", key, nil)).Users; len(users) != 1 || users[0].ID != "ada" {
		t.Errorf("users = %+v, want ada alone", users)
	}

	_, token := f.scimIntegration(key, "okta")
	for _, tc := range []struct{ name, method, path, body, scimType string }{
		{"a SCIM user's userName", "POST", "/scim/v2/Users", "{\"userName\":\"ada\xff@example.com\"}", "invalidSyntax"},
		{"a SCIM group's name", "POST", "/scim/v2/Groups", `{"displayName":"eng\udbff"}`, "invalidSyntax"},
		{"a SCIM search", "POST", "/scim/v2/Users/.search", "{\"filter\":\"userName eq \\\"\xff\\\"\"}", "invalidSyntax"},
		{"a SCIM filter", "GET", "/scim/v2/Users?filter=userName%20eq%20%22%FF%22", "", "invalidFilter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.scimDo(tc.method, tc.path, token, tc.body)
			if e := decode[map[string]any](t, r); r.Status != http.StatusBadRequest || e["scimType"] != tc.scimType {
				t.Errorf("answer = %d %s, want 400 %s", r.Status, r.Body, tc.scimType)
			}
		})
	}
}
