// Package gatewaydoc reads the gateway configurations of docs/gateways.md as the gateway tests
// and make bench's nginx row run them: the page's fenced blocks marked
// <!-- gateways-test: NAME -->, with only the placeholders the page names replaced, so that
// what is tested and measured is what the page tells a user to write.
package gatewaydoc

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The page's placeholders.
const (
	Grantry     = "127.0.0.1:8080"       // Grantry's address
	Upstream    = "127.0.0.1:4000"       // the LLM provider's address
	NginxListen = "listen 8000;"         // where nginx's server listens
	CaddyListen = ":8000 {"              // where Caddy's site listens
	GatewayKey  = "gry_YOUR_GATEWAY_KEY" // the gateway's Grantry API key
	ProviderKey = "sk-YOUR_PROVIDER_KEY" // the provider key the gateway sends upstream
)

var blockRE = regexp.MustCompile("(?s)<!-- gateways-test: ([a-z-]+) -->\n```[a-z]*\n(.*?)```")

// Blocks returns the page's marked blocks by name.
func Blocks(page []byte) map[string]string {
	out := map[string]string{}
	for _, m := range blockRE.FindAllSubmatch(page, -1) {
		out[string(m[1])] = string(m[2])
	}
	return out
}

// Setup is what the placeholders are replaced with: host:port addresses, and the keys.
type Setup struct {
	Grantry, Upstream, Listen string
	GatewayKey, ProviderKey   string
}

// Replace returns block with every placeholder replaced by s.
func (s Setup) Replace(block string) string {
	return strings.NewReplacer(
		Grantry, s.Grantry,
		Upstream, s.Upstream,
		NginxListen, "listen "+s.Listen+";",
		CaddyListen, "http://"+s.Listen+" {",
		GatewayKey, s.GatewayKey,
		ProviderKey, s.ProviderKey,
	).Replace(block)
}

// NginxMain is an nginx main configuration that includes the server blocks of dir/grantry.conf:
// workers worker processes, no access log, and every file nginx writes in dir.
func NginxMain(dir string, workers int) string {
	user := ""
	if os.Geteuid() == 0 {
		// Otherwise the workers run as nobody, who may not enter dir.
		user = "user root;\n"
	}
	return fmt.Sprintf(`%[1]sworker_processes %[2]d;
pid %[3]s/nginx.pid;
events {}
http {
    access_log off;
    client_body_temp_path %[3]s/body;
    proxy_temp_path %[3]s/proxy;
    include %[3]s/grantry.conf;
}
`, user, workers, dir)
}
