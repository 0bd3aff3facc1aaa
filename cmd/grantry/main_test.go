package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is an io.Writer that the server and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// unusedAddr returns a loopback address that nothing listens on: a port the kernel handed out,
// closed again.
func unusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var listeningRE = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// startServer runs `grantry serve` on a free port and returns its base URL, its stderr, and a
// function that stops it and returns run's error.
func startServer(t *testing.T, env map[string]string) (string, *syncBuffer, func() error) {
	t.Helper()
	env["GRANTRY_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, stderr)
	}()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			t.Cleanup(func() { stop() })
			return "http://" + m[1], stderr, stop
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	t.Fatalf("serve did not start:\n%s", stderr)
	return "", nil, nil
}

// send sends method to url with apiKey and, unless body is nil, body as JSON, and returns the
// status and the body of the answer.
func send(t *testing.T, method, url, apiKey string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// mustSend is send that fails t unless the answer is a 200, and returns its body.
func mustSend(t *testing.T, method, url, apiKey string, body any) []byte {
	t.Helper()
	status, out := send(t, method, url, apiKey, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s = %d %s", method, url, status, out)
	}
	return out
}

var keyRE = regexp.MustCompile(`gry_[0-9A-Za-z]{43}`)

func TestFirstStartPrintsKeyOnce(t *testing.T) {
	dir := t.TempDir()
	url, stderr, stop := startServer(t, map[string]string{"GRANTRY_DATA_DIR": dir})
	keys := keyRE.FindAllString(stderr.String(), -1)
	if len(keys) != 1 {
		t.Fatalf("first start printed %d keys, want 1:\n%s", len(keys), stderr)
	}
	req, _ := http.NewRequest("GET", url+"/users/list", nil)
	req.Header.Set("Authorization", "Bearer "+keys[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the printed key gets %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if strings.Count(stderr.String(), `"msg":"request"`) != 1 {
		t.Errorf("want one access-log line per request:\n%s", stderr)
	}

	_, stderr2, stop2 := startServer(t, map[string]string{"GRANTRY_DATA_DIR": dir})
	if keyRE.MatchString(stderr2.String()) {
		t.Errorf("second start printed a key again:\n%s", stderr2)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "grantry.db")); err != nil {
		t.Errorf("embedded store file: %v", err)
	}
}

func TestBadSettingsStopStartUp(t *testing.T) {
	policyDir := t.TempDir()
	os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte("package grantry.authz\nallow := true\n"), 0o644)
	brokenDir := t.TempDir()
	os.WriteFile(filepath.Join(brokenDir, "authz.rego"), []byte("package grantry.authz\nallow if {\n"), 0o644)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"policy without allow_all", map[string]string{"GRANTRY_POLICY_DIR": policyDir}, "does not define data.grantry.authz.allow_all"},
		{"policy that does not parse", map[string]string{"GRANTRY_POLICY_DIR": brokenDir}, "parse policy"},
		{"missing policy folder", map[string]string{"GRANTRY_POLICY_DIR": filepath.Join(policyDir, "nope")}, "read policy folder"},
		{"bad secret key", map[string]string{"GRANTRY_SECRET_KEY": "short"}, "GRANTRY_SECRET_KEY"},
		{"bad address", map[string]string{"GRANTRY_ADDR": "nowhere"}, "GRANTRY_ADDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["GRANTRY_DATA_DIR"] = t.TempDir()
			err := run(context.Background(), []string{"serve"}, func(k string) string { return tc.env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAdminCommands(t *testing.T) {
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_ADMIN_TOKEN": "admin-secret", "GRANTRY_BOOTSTRAP_API_KEY": "boot-key"}
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
	var org struct{ ID, Name, APIKey string }
	json.Unmarshal([]byte(out), &org)
	if org.Name != "acme" || !keyRE.MatchString(out) {
		t.Fatalf("org create printed %s", out)
	}
	if out, err := cli("org", "list"); err != nil || !strings.Contains(out, `"acme"`) || !strings.Contains(out, `"default"`) {
		t.Errorf("org list = %s, %v", out, err)
	}
	out, err = cli("apikey", "create", org.ID)
	var key struct{ ID string }
	if json.Unmarshal([]byte(out), &key); err != nil || key.ID == "" || !keyRE.MatchString(out) {
		t.Fatalf("apikey create = %s, %v", out, err)
	}
	if out, err := cli("apikey", "revoke", key.ID); err != nil || !strings.Contains(out, "API key revoked") {
		t.Errorf("apikey revoke = %s, %v", out, err)
	}
	if _, err := cli("apikey", "revoke", key.ID); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("revoking twice = %v, want a 404 error", err)
	}
	if _, err := cli("org", "create", "acme"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate org = %v", err)
	}
	if _, err := cli("org", "frobnicate"); err == nil {
		t.Error("unknown subcommand succeeded")
	}
}

// TestRevokedBootstrapKeyStaysRevoked: a bootstrap key revoked through the admin API is not
// brought back by a restart with the same setting; the log says why, and the audit trail shows
// the key made once and revoked once.
func TestRevokedBootstrapKeyStaysRevoked(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GRANTRY_DATA_DIR": dir, "GRANTRY_BOOTSTRAP_API_KEY": "boot-key-1", "GRANTRY_ADMIN_TOKEN": "admin-secret"}
	url, _, stop := startServer(t, env)
	orgs := mustSend(t, "GET", url+"/admin/orgs", "admin-secret", nil)
	var list struct{ Orgs []struct{ ID string } }
	if err := json.Unmarshal(orgs, &list); err != nil || len(list.Orgs) != 1 {
		t.Fatalf("orgs = %s, %v", orgs, err)
	}
	var other struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(mustSend(t, "POST", url+"/admin/orgs/"+list.Orgs[0].ID+"/api_keys", "admin-secret", nil), &other); err != nil {
		t.Fatal(err)
	}
	mustSend(t, "DELETE", url+"/admin/api_keys/bootstrap", "admin-secret", nil)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	url, stderr, _ := startServer(t, env)
	if status, _ := send(t, "GET", url+"/users/list", "boot-key-1", nil); status != http.StatusUnauthorized {
		t.Errorf("the revoked bootstrap key after a restart = %d, want 401", status)
	}
	if !strings.Contains(stderr.String(), "GRANTRY_BOOTSTRAP_API_KEY was revoked and stays revoked") {
		t.Errorf("the restart did not say why the key is refused:\n%s", stderr)
	}
	var trail struct {
		Events []struct {
			Action string
			Target struct{ ID string }
			Actor  struct{ Kind string }
		}
	}
	if err := json.Unmarshal(mustSend(t, "GET", url+"/audit/events", other.APIKey, nil), &trail); err != nil {
		t.Fatal(err)
	}
	var boot []string
	for _, e := range trail.Events {
		if e.Target.ID == "bootstrap" {
			boot = append(boot, e.Action+" by "+e.Actor.Kind)
		}
	}
	if want := []string{"api_key.revoked by admin", "api_key.created by system"}; !slices.Equal(boot, want) {
		t.Errorf("the audit trail of the bootstrap key (newest first) = %q, want %q", boot, want)
	}
}
