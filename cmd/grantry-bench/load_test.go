package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name          string
		raw           string
		wantStatus    int
		wantBody      string
		wantKeepAlive bool
		wantErr       bool
	}{
		{name: "content length", raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\ntrue",
			wantStatus: 200, wantBody: "true", wantKeepAlive: true},
		{name: "header names in any case", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfalse",
			wantStatus: 200, wantBody: "false", wantKeepAlive: true},
		{name: "chunked with an extension and a trailer", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"r\r\n5\r\nesult\r\n0\r\nX-Trailer: 1\r\n\r\n",
			wantStatus: 200, wantBody: `{"result`, wantKeepAlive: true},
		{name: "connection close", raw: "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
			wantStatus: 503, wantBody: "{}"},
		{name: "HTTP/1.0 does not keep alive", raw: "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\ntrue",
			wantStatus: 200, wantBody: "true"},
		{name: "empty body", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", wantStatus: 204, wantKeepAlive: true},
		{name: "no length", raw: "HTTP/1.1 200 OK\r\n\r\ntrue", wantErr: true},
		{name: "bad status line", raw: "HTTP/2 200\r\n\r\n", wantErr: true},
		{name: "bad content length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: true},
		{name: "body cut short", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\ntrue", wantErr: true},
		{name: "bad chunk size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, keepAlive, err := readResponse(bufio.NewReader(strings.NewReader(tc.raw)), nil)
			if tc.wantErr {
				if err == nil {
					t.Errorf("readResponse = %d %q, want an error", status, body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.wantStatus || string(body) != tc.wantBody || keepAlive != tc.wantKeepAlive {
				t.Errorf("readResponse = %d %q keep-alive %v; want %d %q keep-alive %v",
					status, body, keepAlive, tc.wantStatus, tc.wantBody, tc.wantKeepAlive)
			}
		})
	}
}

// TestClientKeepsConnectionAlive sends requests through one client to a net/http server and
// checks what arrived and that one connection carried them all; then that a server closing the
// connection is survived.
func TestClientKeepsConnectionAlive(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, r.ContentLength)
		r.Body.Read(body)
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "headers", http.StatusBadRequest)
			return
		}
		if string(body) == `"close"` {
			w.Header().Set("Connection", "close")
		}
		w.Write(append([]byte(r.URL.Path+" "), body...))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := newClient(srv.Listener.Addr().String(), "k", false)
	defer c.close()
	for i, body := range []string{`1`, `"two"`, `"close"`, `4`} {
		status, got, err := c.post("/p", nil, []byte(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if status != 200 || string(got) != "/p "+body {
			t.Errorf("request %d = %d %q, want 200 %q", i, status, got, "/p "+body)
		}
	}
	srv.Close() // waits for the handlers, so conns is settled
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: one until the server closed it, then another", n)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p99 of ten is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%d) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

// TestCeilingHandler checks that the ceiling does what it stands for: decode the body, answer true.
func TestCeilingHandler(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string
	}{
		{"a check", "POST", "/provisions/can_user_access", `{"user_id":"u","svc_id":"s"}`, 200, "true"},
		{"not JSON", "POST", "/provisions/can_user_access", `{`, 422, "body is not a JSON object\n"},
		{"health", "GET", "/healthz", "", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			ceilingHandler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
