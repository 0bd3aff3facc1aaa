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
