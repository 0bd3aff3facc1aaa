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

	"github.com/grantry/grantry/api"
)

// TestNetHTTPErrorsAreJSON: what net/http refuses before Grantry's router sees it — headers or
// a URL over the server's limit, a malformed request — is answered with a JSON body, SCIM's
// under /scim/v2, and ordinary answers pass through the same connections untouched.
func TestNetHTTPErrorsAreJSON(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	ts := httptest.NewUnstartedServer(f.srv)
	ts.Config.MaxHeaderBytes = 4 << 10
	ts.Listener = api.JSONErrors(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	addr := strings.TrimPrefix(ts.URL, "http://")
	big := strings.Repeat("x", 16<<10)

	tests := []struct {
		name, request         string
		status                int
		contentType, wantBody string
	}{
		{"a header over the limit", "GET /users/list HTTP/1.1\r\nHost: g\r\nX-Big: " + big + "\r\n\r\n", 431, "application/json; charset=utf-8",
			`{"detail":"The request line and headers are larger than Grantry accepts."}`},
		{"a URL over the limit", "GET /users/list?user_id=" + big + " HTTP/1.1\r\nHost: g\r\n\r\n", 431, "application/json; charset=utf-8",
			`{"detail":"The request line and headers are larger than Grantry accepts."}`},
		{"a SCIM filter over the limit", "GET /scim/v2/Users?filter=" + big + " HTTP/1.1\r\nHost: g\r\n\r\n", 431, "application/scim+json",
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"431","detail":"The request line and headers are larger than Grantry accepts."}`},
		{"a request without Host", "GET /users/list HTTP/1.1\r\n\r\n", 400, "application/json; charset=utf-8",
			`{"detail":"Bad Request: missing required Host header"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			go fmt.Fprint(conn, tc.request) // the server may answer before it has read it all
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.contentType || resp.Header.Get("X-Request-Id") == "" {
				t.Errorf("answer = %d %v, want %d %s with an X-Request-Id", resp.StatusCode, resp.Header, tc.status, tc.contentType)
			}
			jsonEqual(t, body, tc.wantBody)
		})
	}

	t.Run("ordinary answers on a kept-alive connection", func(t *testing.T) {
		for range 3 {
			req, _ := http.NewRequest("GET", ts.URL+"/users/list", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != `{"users":[]}` {
				t.Errorf("GET /users/list = %d %s", resp.StatusCode, body)
			}
		}
	})
}
