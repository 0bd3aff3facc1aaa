package gatewaydoc

import (
	"os"
	"strings"
	"testing"
)

// TestBlocksOfThePage: the page has every block the gateway tests and make bench run.
func TestBlocksOfThePage(t *testing.T) {
	page, err := os.ReadFile("../../docs/gateways.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := Blocks(page)
	for _, name := range []string{"grantry-env", "nginx", "nginx-auth-request", "caddy"} {
		if strings.TrimSpace(blocks[name]) == "" {
			t.Errorf("docs/gateways.md has no block marked <!-- gateways-test: %s -->", name)
		}
	}
}

func TestReplace(t *testing.T) {
	s := Setup{Grantry: "10.0.0.1:1", Upstream: "10.0.0.2:2", Listen: "127.0.0.1:3", GatewayKey: "gry_k", ProviderKey: "sk-p"}
	tests := []struct{ block, want string }{
		{"proxy_pass http://127.0.0.1:8080/gateway/auth;", "proxy_pass http://10.0.0.1:1/gateway/auth;"},
		{"server 127.0.0.1:4000;", "server 10.0.0.2:2;"},
		{"    listen 8000;\n", "    listen 127.0.0.1:3;\n"},
		{":8000 {\n", "http://127.0.0.1:3 {\n"},
		{`X-Grantry-Key "gry_YOUR_GATEWAY_KEY";`, `X-Grantry-Key "gry_k";`},
		{"Bearer sk-YOUR_PROVIDER_KEY", "Bearer sk-p"},
		{"listen 80; # no placeholder", "listen 80; # no placeholder"},
	}
	for _, tc := range tests {
		if got := s.Replace(tc.block); got != tc.want {
			t.Errorf("Replace(%q) = %q, want %q", tc.block, got, tc.want)
		}
	}
}

func TestNginxMain(t *testing.T) {
	conf := NginxMain("/tmp/x", 3)
	for _, want := range []string{"worker_processes 3;", "pid /tmp/x/nginx.pid;", "include /tmp/x/grantry.conf;", "access_log off;"} {
		if !strings.Contains(conf, want) {
			t.Errorf("NginxMain lacks %q:\n%s", want, conf)
		}
	}
	if root := os.Geteuid() == 0; strings.HasPrefix(conf, "user root;\n") != root {
		t.Errorf("user root line: %v, running as root: %v", !root, root)
	}
}
