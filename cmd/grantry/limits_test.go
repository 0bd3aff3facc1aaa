package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowClientsAreDropped: a client that trickles its headers, or sends more header than any
// request of Grantry needs, does not hold a connection.
func TestSlowClientsAreDropped(t *testing.T) {
	t.Parallel()
	hs := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), time.Second, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	t.Run("headers never finished", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: grantry\r\n")
		start := time.Now()
		conn.SetReadDeadline(time.Now().Add(readHeaderTimeout + 30*time.Second))
		if _, err := io.ReadAll(conn); err != nil {
			t.Fatalf("the connection was still open %s later: %v", time.Since(start), err)
		}
		if took := time.Since(start); took < readHeaderTimeout-time.Second {
			t.Errorf("dropped after %s, before the %s header timeout", took, readHeaderTimeout)
		}
	})
	t.Run("headers too large", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: grantry\r\nX-Big: %s\r\n\r\n", strings.Repeat("x", 2*maxHeaderBytes))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("status = %d, want 431", resp.StatusCode)
		}
	})
}

// TestStalledBodyGetsAnAnswer: with the server's own limits, a client that sends its headers
// and then stalls its body gets a 408 with a JSON body at the request deadline, not a 500 once
// the server's read timeout has passed.
func TestStalledBodyGetsAnAnswer(t *testing.T) {
	url, _, _ := startServer(t, map[string]string{
		"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "stall-key", "GRANTRY_REQUEST_TIMEOUT": "300ms",
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /provisions/can_user_access HTTP/1.1\r\nHost: grantry\r\nAuthorization: Bearer stall-key\r\n"+
		"Content-Type: application/json\r\nContent-Length: 64\r\n\r\n{\"user_id\":")
	conn.SetReadDeadline(time.Now().Add(readTimeout + 5*time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer %s after the headers: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
		!strings.Contains(string(body), `"detail":"The request body did not arrive within the request deadline."`) {
		t.Errorf("answer = %d %s %s, want 408 with a JSON detail", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if took := time.Since(start); took >= readTimeout {
		t.Errorf("answered after %s, at the server's read timeout rather than the request deadline", took)
	}
}

// TestOversizedRequestsGetJSON: as served by grantry serve, a URL or headers over the limit are
// answered 431 with a JSON body, SCIM's under /scim/v2, not net/http's plain text.
func TestOversizedRequestsGetJSON(t *testing.T) {
	url, _, _ := startServer(t, map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "big-key"})
	for _, tc := range []struct{ name, request, contentType string }{
		{"headers", "GET /users/list HTTP/1.1\r\nHost: grantry\r\nX-Big: " + strings.Repeat("x", 2*maxHeaderBytes) + "\r\n\r\n", "application/json; charset=utf-8"},
		{"URL", "GET /users/list?user_id=" + strings.Repeat("x", 2*maxHeaderBytes) + " HTTP/1.1\r\nHost: grantry\r\n\r\n", "application/json; charset=utf-8"},
		{"SCIM URL", "GET /scim/v2/Users?filter=" + strings.Repeat("x", 2*maxHeaderBytes) + " HTTP/1.1\r\nHost: grantry\r\n\r\n", "application/scim+json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			go fmt.Fprint(conn, tc.request)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != tc.contentType ||
				!strings.Contains(string(body), `"detail":"The request line and headers are larger than Grantry accepts."`) {
				t.Errorf("answer = %d %s %s, want 431 with a JSON detail", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}
