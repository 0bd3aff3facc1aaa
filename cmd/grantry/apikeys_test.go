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

// TestSCIMTokenCommands: `grantry scim-token rotate ORG_ID INTEGRATION_ID` prints a new token
// and the old one is refused; `grantry scim-token revoke` leaves the integration without one.
func TestSCIMTokenCommands(t *testing.T) {
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_ADMIN_TOKEN": "admin-secret"}
	url, _, _ := startServer(t, env)
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		cenv := map[string]string{"GRANTRY_URL": url, "GRANTRY_ADMIN_TOKEN": "admin-secret"}
		err := run(context.Background(), args, func(k string) string { return cenv[k] }, &out, &bytes.Buffer{})
		return out.String(), err
	}
	out, err := cli("org", "create", "acme")
	var org struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	if err != nil || json.Unmarshal([]byte(out), &org) != nil {
		t.Fatalf("org create = %s, %v", out, err)
	}
	var created struct {
		AuthIntegration struct{ ID string }    `json:"auth_integration"`
		SCIM            struct{ Token string } `json:"scim"`
	}
	if err := json.Unmarshal(mustSend(t, "POST", url+"/auth_integration/create", org.APIKey, map[string]string{"name": "okta", "type": "scim"}), &created); err != nil {
		t.Fatal(err)
	}
	scimStatus := func(token string) int {
		status, _ := send(t, "GET", url+"/scim/v2/Users", token, nil)
		return status
	}
	if scimStatus(created.SCIM.Token) != http.StatusOK {
		t.Fatal("the new integration's token does not work")
	}

	out, err = cli("scim-token", "rotate", org.ID, created.AuthIntegration.ID)
	var rotated struct {
		SCIM struct{ Token string } `json:"scim"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rotated) != nil || !strings.HasPrefix(rotated.SCIM.Token, "gscim_") {
		t.Fatalf("scim-token rotate = %s, %v", out, err)
	}
	if old, now := scimStatus(created.SCIM.Token), scimStatus(rotated.SCIM.Token); old != http.StatusUnauthorized || now != http.StatusOK {
		t.Errorf("after the rotation the old token = %d, the new one %d; want 401 and 200", old, now)
	}
	if out, err := cli("scim-token", "revoke", org.ID, created.AuthIntegration.ID); err != nil || !strings.Contains(out, "SCIM token revoked") {
		t.Errorf("scim-token revoke = %s, %v", out, err)
	}
	if got := scimStatus(rotated.SCIM.Token); got != http.StatusUnauthorized {
		t.Errorf("the revoked token = %d, want 401", got)
	}
	if _, err := cli("scim-token", "rotate", org.ID, "nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("rotating an unknown integration's token = %v, want a 404 error", err)
	}
	if _, err := cli("scim-token", "rotate", org.ID); err == nil {
		t.Error("scim-token rotate without the integration succeeded")
	}
}
