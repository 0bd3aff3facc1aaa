package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer healthy.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	closed := unusedAddr(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(healthy.URL, "http://"))

	tests := []struct {
		name, addr, wantErr string
	}{
		{"healthy", strings.TrimPrefix(healthy.URL, "http://"), ""},
		{"listening on every interface", "0.0.0.0:" + port, ""},
		{"listening on every interface, no host", ":" + port, ""},
		{"unhealthy", strings.TrimPrefix(failing.URL, "http://"), "503"},
		{"not running", closed, "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			env := map[string]string{"GRANTRY_ADDR": tc.addr}
			err := run(context.Background(), []string{"healthcheck"}, func(k string) string { return env[k] }, &out, &bytes.Buffer{})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("healthcheck = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLocalAddr(t *testing.T) {
	tests := map[string]string{
		"0.0.0.0:8080":   "127.0.0.1:8080",
		":8080":          "127.0.0.1:8080",
		"[::]:8080":      "[::1]:8080",
		"10.0.0.5:8080":  "10.0.0.5:8080",
		"grantry:8080":   "grantry:8080",
		"127.0.0.1:8080": "127.0.0.1:8080",
	}
	for in, want := range tests {
		if got := localAddr(in); got != want {
			t.Errorf("localAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
