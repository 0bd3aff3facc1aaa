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
