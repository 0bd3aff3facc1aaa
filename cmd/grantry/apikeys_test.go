package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantRest  []string
		wantScope string
	}{
		{"flag first", []string{"--scope", "check", "org-1"}, []string{"org-1"}, "check"},
		{"flag last", []string{"org-1", "--scope", "check"}, []string{"org-1"}, "check"},
		{"flag between", []string{"a", "-scope=manage", "b"}, []string{"a", "b"}, "manage"},
		{"no flag", []string{"org-1"}, []string{"org-1"}, ""},
		{"after --, flags are arguments", []string{"org-1", "--", "--scope", "check"}, []string{"org-1", "--scope", "check"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			scope := fs.String("scope", "", "")
			rest, err := parseInterspersed(fs, tc.args)
			if err != nil || !slices.Equal(rest, tc.wantRest) || *scope != tc.wantScope {
				t.Errorf("parseInterspersed(%q) = %q, %v with scope %q; want %q and scope %q", tc.args, rest, err, *scope, tc.wantRest, tc.wantScope)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"org-1", "--nope"}); err == nil {
		t.Error("an unknown flag after the argument parsed")
	}
}

// TestAPIKeyScopeCommand: `grantry apikey create ORG_ID --scope check` makes a key that may
// check but not grant.
func TestAPIKeyScopeCommand(t *testing.T) {
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_ADMIN_TOKEN": "admin-secret"}
	url, _, _ := startServer(t, env)
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		cenv := map[string]string{"GRANTRY_URL": url, "GRANTRY_ADMIN_TOKEN": "admin-secret"}
		err := run(context.Background(), args, func(k string) string { return cenv[k] }, &out, &bytes.Buffer{})
		return out.String(), err
	}
	out, err := cli("org", "create", "acme")
	if err != nil {
		t.Fatal(err)
	}
	var org struct{ ID string }
	if err := json.Unmarshal([]byte(out), &org); err != nil {
		t.Fatal(err)
	}
	out, err = cli("apikey", "create", org.ID, "--scope", "check")
	var key struct {
		APIKey string `json:"api_key"`
		Scope  string
	}
	if json.Unmarshal([]byte(out), &key); err != nil || key.Scope != "check" || !keyRE.MatchString(out) {
		t.Fatalf("apikey create --scope check = %s, %v", out, err)
	}
	call := func(method, path, body string) int {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := call("POST", "/provisions/can_user_access", `{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`); got != http.StatusOK {
		t.Errorf("check with the check key = %d, want 200", got)
	}
	if got := call("POST", "/provisions/add_to_user", `{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`); got != http.StatusForbidden {
		t.Errorf("grant with the check key = %d, want 403", got)
	}
	out, err = cli("apikey", "create", org.ID)
	if json.Unmarshal([]byte(out), &key); err != nil || key.Scope != "admin" {
		t.Errorf("apikey create without --scope = %s, %v; want scope admin", out, err)
	}
	if _, err := cli("apikey", "create", org.ID, "--scope", "root"); err == nil || !strings.Contains(err.Error(), "422") {
		t.Errorf("apikey create --scope root = %v, want the 422 of an unknown scope", err)
	}
}
