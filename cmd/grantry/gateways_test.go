package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/grantry/grantry/internal/gatewaydoc"
)

// The gateway tests run nginx and Caddy configured exactly as docs/gateways.md says: they take
// Grantry's settings and each gateway's configuration from the page's fenced blocks marked
// <!-- gateways-test: NAME -->, and replace only the placeholders the page names.
const gatewaysDoc = "../../docs/gateways.md"

// docBlocks returns the marked blocks of docs/gateways.md by name.
func docBlocks(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(gatewaysDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := gatewaydoc.Blocks(raw)
	for _, name := range []string{"grantry-env", "nginx", "nginx-auth-request", "caddy"} {
		if out[name] == "" {
			t.Fatalf("%s has no block marked %q", gatewaysDoc, name)
		}
	}
	return out
}

// upstream is a fake OpenAI-compatible provider that records what reaches it.
type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD path body"
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.RequestURI()+" "+string(body)+" auth="+r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) calls() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// issuer signs users' JWTs and serves its key set.
type issuer struct {
	key    *rsa.PrivateKey
	jwks   *httptest.Server
	iss    string
	aud    string
	forger *rsa.PrivateKey // a key the key set does not hold
}

func newIssuer(t *testing.T, iss, aud string) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}}
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(raw)
	}))
	t.Cleanup(srv.Close)
	return &issuer{key: key, jwks: srv, iss: iss, aud: aud, forger: forger}
}

// token signs a token for user that expires after ttl (negative: already expired), with key.
func (is *issuer) token(t *testing.T, user string, ttl time.Duration, key *rsa.PrivateKey) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{
		Subject: user, Issuer: is.iss, Audience: jwt.Audience{is.aud},
		IssuedAt: jwt.NewNumericDate(now.Add(-2 * time.Hour)), Expiry: jwt.NewNumericDate(now.Add(ttl)),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// docEnv parses the page's settings block (NAME=value lines).
func docEnv(t *testing.T, block string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("settings line %q is not NAME=value", line)
		}
		env[k] = v
	}
	return env
}

// gatewayWorld is Grantry started with the page's settings, an organization with the models
// gpt-4o-mini (granted to ada) and gpt-4o, the users ada and bob, and the fake provider.
type gatewayWorld struct {
	grantry  string // host:port
	key      string
	mini     string // gpt-4o-mini's id
	issuer   *issuer
	upstream *upstream
	revoke   func() // takes gpt-4o-mini from ada
}

func newGatewayWorld(t *testing.T, blocks map[string]string) *gatewayWorld {
	t.Helper()
	env := docEnv(t, blocks["grantry-env"])
	is := newIssuer(t, env["GRANTRY_GATEWAY_JWT_ISSUER"], env["GRANTRY_GATEWAY_JWT_AUDIENCE"])
	env["GRANTRY_GATEWAY_JWKS_URL"] = is.jwks.URL // the placeholder: the identity provider's key set
	env["GRANTRY_DATA_DIR"] = t.TempDir()
	env["GRANTRY_ADMIN_TOKEN"] = "admin-token"
	base, _, _ := startServer(t, env)
	w := &gatewayWorld{grantry: strings.TrimPrefix(base, "http://"), issuer: is, upstream: newUpstream(t)}
	org := mustSend(t, "POST", base+"/admin/orgs", "admin-token", map[string]string{"name": "acme"})
	admin := jsonField(t, org, "api_key")
	created := mustSend(t, "POST", base+"/api_keys", admin, map[string]string{"scope": "check"})
	w.key = jsonField(t, created, "api_key")
	var m struct{ Model struct{ ID string } }
	json.Unmarshal(mustSend(t, "POST", base+"/llm_integration/custom_model", admin, map[string]string{"model_name": "gpt-4o-mini"}), &m)
	w.mini = m.Model.ID
	mustSend(t, "POST", base+"/llm_integration/custom_model", admin, map[string]string{"model_name": "gpt-4o"})
	integ := mustSend(t, "POST", base+"/auth_integration/create", admin, map[string]string{"name": "idp"})
	var ai struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}
	json.Unmarshal(integ, &ai)
	mustSend(t, "POST", base+"/users/import", admin, map[string]any{"auth_integration_id": ai.AuthIntegration.ID, "users": []map[string]string{
		{"id": "ada", "email": "ada@example.com", "first": "Ada", "last": "L"},
		{"id": "bob", "email": "bob@example.com", "first": "Bob", "last": "B"},
	}})
	mustSend(t, "POST", base+"/provisions/add_to_user", admin, map[string]string{"user_id": "ada", "svc_id": w.mini})
	w.revoke = func() {
		mustSend(t, "POST", base+"/provisions/remove_from_user", admin, map[string]string{"user_id": "ada", "svc_id": w.mini})
	}
	return w
}

func jsonField(t *testing.T, raw []byte, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[field].(string)
	return s
}

// configure replaces the page's placeholders in a gateway's configuration.
func (w *gatewayWorld) configure(block, listen string) string {
	return gatewaydoc.Setup{Grantry: w.grantry, Upstream: strings.TrimPrefix(w.upstream.srv.URL, "http://"), Listen: listen,
		GatewayKey: w.key, ProviderKey: "sk-provider"}.Replace(block)
}

// lookGateway finds a gateway's binary, or skips the test with one line saying it is missing.
func lookGateway(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skipf("%s not installed; skipping gateway test", name)
	return ""
}

// startProcess runs a gateway until the test ends and waits until it accepts connections on addr.
func startProcess(t *testing.T, addr string, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "gateway.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	output := func() string { raw, _ := os.ReadFile(logPath); return string(raw) }
	t.Cleanup(func() {
		// SIGTERM, so that nginx's master stops its workers too.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("%s exited: %s", name, output())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %s: %s", name, addr, output())
}

func startNginx(t *testing.T, bin string, conf func(addr string) string) string {
	t.Helper()
	dir := t.TempDir()
	addr := unusedAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(gatewaydoc.NginxMain(dir, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "grantry.conf"), []byte(conf(addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, addr, bin, "-e", "stderr", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	return "http://" + addr
}

type gwCall struct {
	status int
	body   string
	header http.Header
}

func gwSend(t *testing.T, method, url, token, body string) gwCall {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return gwCall{resp.StatusCode, string(raw), resp.Header}
}

func chatBody(model string) string {
	return `{"messages":[{"role":"user","content":"Hi"}],"model":"` + model + `"}`
}

// driveGateway runs the scenarios every gateway must pass; chat is the path of a chat
// completion for a model.
func driveGateway(t *testing.T, w *gatewayWorld, base string, chat func(model string) string) {
	t.Helper()
	ada := w.issuer.token(t, "ada", time.Hour, w.issuer.key)
	bob := w.issuer.token(t, "bob", time.Hour, w.issuer.key)
	steps := []struct {
		name   string
		token  string
		model  string
		status int
		reason string
	}{
		{"an allowed user's chat passes", ada, "gpt-4o-mini", 200, ""},
		{"an alias of the model passes", ada, "fast", 200, ""},
		{"a model the user may not use", ada, "gpt-4o", 403, "not_permitted"},
		{"an unknown model", ada, "gpt-9", 403, "not_permitted"},
		{"a denied user", bob, "gpt-4o-mini", 403, "not_permitted"},
		{"a forged token", w.issuer.token(t, "ada", time.Hour, w.issuer.forger), "gpt-4o-mini", 401, "invalid_token"},
		{"an expired token", w.issuer.token(t, "ada", -time.Minute, w.issuer.key), "gpt-4o-mini", 401, "invalid_token"},
		{"no token", "", "gpt-4o-mini", 401, "no_user"},
	}
	for _, st := range steps {
		before := len(w.upstream.calls())
		c := gwSend(t, "POST", base+chat(st.model), st.token, chatBody(st.model))
		after := w.upstream.calls()
		if c.status != st.status {
			t.Fatalf("%s: status %d %s, want %d", st.name, c.status, c.body, st.status)
		}
		if st.status == 200 {
			if len(after) != before+1 || !strings.Contains(after[len(after)-1], `"model":"`+st.model+`"`) ||
				!strings.HasPrefix(after[len(after)-1], "POST "+chat(st.model)) || !strings.HasSuffix(after[len(after)-1], "auth=Bearer sk-provider") {
				t.Fatalf("%s: the provider saw %q", st.name, after[before:])
			}
			if !strings.Contains(c.body, "chat.completion") {
				t.Errorf("%s: body %s, want the provider's", st.name, c.body)
			}
			continue
		}
		if len(after) != before {
			t.Fatalf("%s: the provider saw %q", st.name, after[before:])
		}
		if !strings.Contains(c.body, `"reason":"`+st.reason+`"`) || !strings.HasPrefix(c.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %s %q, want a JSON body with reason %s", st.name, c.header.Get("Content-Type"), c.body, st.reason)
		}
	}

	c := gwSend(t, "GET", base+"/v1/models", ada, "")
	var list struct {
		Object string
		Data   []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(c.body), &list); err != nil || c.status != 200 || list.Object != "list" {
		t.Fatalf("/v1/models: %d %s", c.status, c.body)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"gpt-4o-mini", "fast"}) {
		t.Errorf("/v1/models lists %v, want ada's gpt-4o-mini and its alias", ids)
	}

	w.revoke()
	before := len(w.upstream.calls())
	if c := gwSend(t, "POST", base+chat("gpt-4o-mini"), ada, chatBody("gpt-4o-mini")); c.status != 403 || len(w.upstream.calls()) != before {
		t.Errorf("the request after the revoke: %d %s, the provider saw %d more", c.status, c.body, len(w.upstream.calls())-before)
	}
}

func chatPath(string) string { return "/v1/chat/completions" }

func deploymentPath(model string) string { return "/openai/deployments/" + model + "/chat/completions" }

func TestNginxAsTheDocsSay(t *testing.T) {
	bin := lookGateway(t, "nginx")
	blocks := docBlocks(t)
	w := newGatewayWorld(t, blocks)
	base := startNginx(t, bin, func(addr string) string { return w.configure(blocks["nginx"], addr) })
	driveGateway(t, w, base, chatPath)
}

func TestNginxAuthRequestAsTheDocsSay(t *testing.T) {
	bin := lookGateway(t, "nginx")
	blocks := docBlocks(t)
	w := newGatewayWorld(t, blocks)
	base := startNginx(t, bin, func(addr string) string { return w.configure(blocks["nginx-auth-request"], addr) })
	driveGateway(t, w, base, deploymentPath)
}

func TestCaddyAsTheDocsSay(t *testing.T) {
	bin := lookGateway(t, "caddy")
	blocks := docBlocks(t)
	w := newGatewayWorld(t, blocks)
	addr := unusedAddr(t)
	dir := t.TempDir()
	// The server's own options, not the site's: no admin endpoint (several tests may run at
	// once) and no automatic HTTPS on a loopback port.
	conf := "{\n\tadmin off\n\tauto_https off\n}\n\n" + w.configure(blocks["caddy"], addr)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir) // Caddy keeps its state under the home folder
	startProcess(t, addr, bin, "run", "--config", path, "--adapter", "caddyfile")
	driveGateway(t, w, "http://"+addr, deploymentPath)
}
