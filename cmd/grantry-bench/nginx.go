package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/grantry/grantry/internal/gatewaydoc"
)

// The nginx row runs a real nginx with two server blocks in front of one fake LLM provider: the
// configuration docs/gateways.md gives, which asks Grantry first, and the same server block
// with its /v1/ location proxying straight to the provider. The difference of their latencies
// is what Grantry's authorization step adds to a request.
const (
	systemNginx = "nginx"
	// targetNginx sends chat completions through the server block without the authorization
	// step: every one must reach the provider.
	targetNginx = "nginx"
	// targetNginxGrantry sends the same through the docs' configuration: a granted one must
	// reach the provider, a not-granted one get Grantry's 403.
	targetNginxGrantry = "nginx-grantry"
)

// gatewaysDoc is the page the nginx row takes its configuration from, read at run time
// relative to the working folder (make bench runs at the repository root).
const gatewaysDoc = "docs/gateways.md"

// nginxDocBlock is the name of the page's block the row measures: the one that sends Grantry
// the whole request, and the model in the body.
const nginxDocBlock = "nginx"

// The parts of the docs' block the straight server block is made of.
var (
	docServerRE      = regexp.MustCompile(`(?ms)^server \{$.*?^\}$`)
	docV1LocationRE  = regexp.MustCompile(`(?s)(\n[ \t]*location /v1/ \{\n).*?(\n[ \t]*\}\n)`)
	docLLMLocationRE = regexp.MustCompile(`(?s)\n[ \t]*location @llm \{\n(.*?)\n[ \t]*\}\n`)
)

// nginxChatPath is where the load sends its chat completions, as OpenAI's clients do.
const nginxChatPath = "/v1/chat/completions"

// benchProviderKey is the provider key nginx's configuration sends the upstream, in place of
// the page's sk-YOUR_PROVIDER_KEY.
const benchProviderKey = "sk-bench-provider"

// upstreamAnswer is the fake provider's answer to every chat completion.
var upstreamAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}`)

// nginxPlaceholders are the page's placeholders its nginx block must have.
var nginxPlaceholders = []string{gatewaydoc.Grantry, gatewaydoc.Upstream, gatewaydoc.NginxListen, gatewaydoc.GatewayKey, gatewaydoc.ProviderKey}

// nginxDoc is the page's nginx configuration and the straight server block made from it.
type nginxDoc struct {
	block  string // as the page gives it: the upstreams and the server that asks Grantry
	direct string // that server again, its /v1/ location proxying as its @llm location does
}

// parseNginxDoc takes the nginx block out of the page's text and makes the straight server
// block from it. It fails if the block, one of its placeholders or one of the locations it
// needs is missing, so that the row measures what the page says or nothing.
func parseNginxDoc(page []byte) (nginxDoc, error) {
	d := nginxDoc{block: gatewaydoc.Blocks(page)[nginxDocBlock]}
	if d.block == "" {
		return nginxDoc{}, fmt.Errorf("%s has no block marked <!-- gateways-test: %s -->", gatewaysDoc, nginxDocBlock)
	}
	for _, p := range nginxPlaceholders {
		if !strings.Contains(d.block, p) {
			return nginxDoc{}, fmt.Errorf("%s: the %s block has no placeholder %q to replace", gatewaysDoc, nginxDocBlock, p)
		}
	}
	srv := docServerRE.FindString(d.block)
	llm := docLLMLocationRE.FindStringSubmatch(srv)
	if srv == "" || llm == nil || !docV1LocationRE.MatchString(srv) {
		return nginxDoc{}, fmt.Errorf("%s: the %s block lacks a server with the locations /v1/ and @llm", gatewaysDoc, nginxDocBlock)
	}
	// The replacement is a function so that nothing in @llm's directives is read as $1.
	d.direct = docV1LocationRE.ReplaceAllStringFunc(srv, func(loc string) string {
		m := docV1LocationRE.FindStringSubmatch(loc)
		return m[1] + llm[1] + m[2]
	})
	return d, nil
}

// nginxSetup is what the page's placeholders are replaced with.
type nginxSetup struct {
	grantry, upstream string // host:port of Grantry and of the fake provider
	auth, direct      string // where the docs' server block and the straight one listen
	key               string // the gateway's Grantry API key
}

// config is the two server blocks, for nginx's http context.
func (d nginxDoc) config(s nginxSetup) string {
	replace := func(block, listen string) string {
		return s.placeholders(listen).Replace(block)
	}
	return replace(d.block, s.auth) + "\n# The same server without the authorization step.\n" + replace(d.direct, s.direct) + "\n"
}

// placeholders are what the page's placeholders are replaced with in a block listening there.
func (s nginxSetup) placeholders(listen string) gatewaydoc.Setup {
	return gatewaydoc.Setup{Grantry: s.grantry, Upstream: s.upstream, Listen: listen, GatewayKey: s.key, ProviderKey: benchProviderKey}
}

// nginxRow is what the nginx row runs: the binary, and the page's configuration.
type nginxRow struct {
	bin string
	doc nginxDoc
}

// prepareNginx finds nginx and reads the configuration from page when sel holds the nginx row.
// Without nginx it takes the row out of sel and returns the line saying so, which it also
// writes to stderr, so that a machine without nginx runs every other row; a page it cannot read
// the configuration from is an error.
func prepareNginx(sel selection, lookPath func(string) (string, error), page string, stderr io.Writer) (nginxRow, []string, error) {
	if !sel[rowNginx] {
		return nginxRow{}, nil, nil
	}
	bin, err := findNginx(lookPath)
	if err != nil {
		line := fmt.Sprintf("the nginx row: %v; skipped", err)
		fmt.Fprintf(stderr, "grantry-bench: %s\n", line)
		delete(sel, rowNginx)
		return nginxRow{}, []string{line}, nil
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		return nginxRow{}, nil, fmt.Errorf("the nginx row measures the configuration of %s (run grantry-bench at the repository root, as make bench does): %w", gatewaysDoc, err)
	}
	doc, err := parseNginxDoc(raw)
	if err != nil {
		return nginxRow{}, nil, err
	}
	return nginxRow{bin: bin, doc: doc}, nil, nil
}

// findNginx returns the nginx binary: nginx on PATH, else /usr/sbin/nginx, which is not on
// every user's PATH.
func findNginx(lookPath func(string) (string, error)) (string, error) {
	for _, name := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := lookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("nginx not found on PATH or at /usr/sbin/nginx")
}

// upstreamHandler is the fake LLM provider: it reads the request and answers upstreamAnswer at
// once, or 401 when the request lacks the provider key nginx's configuration sets, so that a
// request that passed by the documented location counts as an error.
func upstreamHandler() http.Handler {
	auth := "Bearer " + benchProviderKey
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") != auth {
			http.Error(w, "no provider key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(upstreamAnswer)))
		w.Write(upstreamAnswer)
	})
}

// upstream is the fake provider served from this process.
type upstream struct {
	addr string
	srv  *http.Server
}

func startUpstream() (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake provider: %w", err)
	}
	u := &upstream{addr: ln.Addr().String(), srv: &http.Server{Handler: upstreamHandler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}}
	go u.srv.Serve(ln)
	return u, nil
}

func (u *upstream) close() { u.srv.Close() }

// nginxProc is a running nginx: its master, and the workers that answer.
type nginxProc struct {
	*server // the master; addr is the straight server block's
	pids    []int
}

// startNginx writes nginx's configuration into dir, with conf as its server blocks and
// workers worker processes, starts it, its output in dir/nginx.log, and waits until the
// straight server block (at direct) passes a request to the provider and every worker is up.
func startNginx(ctx context.Context, bin, dir, conf, direct string, workers int, env []string) (*nginxProc, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	for name, text := range map[string]string{"nginx.conf": gatewaydoc.NginxMain(dir, workers), "grantry.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return nil, fmt.Errorf("nginx: %w", err)
		}
	}
	argv := []string{bin, "-e", "stderr", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;"}
	s, err := spawn(ctx, systemNginx, argv, env, dir, "nginx", direct, "", nginxChatPath)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "nginx.log"))
		return nil, fmt.Errorf("%w: %.2000s", err, log)
	}
	ng := &nginxProc{server: s}
	deadline := time.Now().Add(10 * time.Second)
	for {
		children, err := childrenOf(s.pid())
		if err != nil {
			s.stop()
			return nil, err
		}
		if len(children) >= workers {
			ng.pids = append([]int{s.pid()}, children...)
			return ng, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("nginx started %d of its %d workers in 10 s", len(children), workers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memory is the master's and the workers' memory together.
func (ng *nginxProc) memory() (memory, error) {
	var m memory
	for _, pid := range ng.pids {
		one, err := memoryOf(pid)
		if err != nil {
			return memory{}, err
		}
		m = m.plus(one)
	}
	return m, nil
}

// nginxConns bounds the load generator's connections for the nginx row.
const nginxConns = 8

// measureNginx measures the nginx row: it starts a Grantry on the store seeded in dir, the
// fake provider in this process and nginx with the page's two server blocks, and loads the
// straight block and the docs' block in turn, run by run, with the same chat completions.
// The server CPU of each series is that of every process that serves its requests: nginx's,
// this one's (the provider) and, through the docs' block, Grantry's; its memory is nginx's,
// with Grantry's through the docs' block.
func (h *harness) measureNginx(ctx context.Context, row nginxRow, dir string, p params, pl placement) ([]series, error) {
	fmt.Fprintf(h.progress, "%s, %s:\n", systemNginx, pl.name)
	g, err := h.start(ctx, systemGrantry, pl, dir, "grantry-nginx")
	if err != nil {
		return nil, err
	}
	defer g.stop()
	up, err := startUpstream()
	if err != nil {
		return nil, err
	}
	defer up.close()
	key, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	setup := nginxSetup{grantry: g.addr, upstream: up.addr, key: strings.TrimSpace(string(key))}
	if setup.auth, err = freeAddr(); err != nil {
		return nil, err
	}
	if setup.direct, err = freeAddr(); err != nil {
		return nil, err
	}
	ng, err := startNginx(ctx, row.bin, filepath.Join(dir, "nginx"), row.doc.config(setup), setup.direct, runtime.NumCPU(), h.env)
	if err != nil {
		return nil, err
	}
	defer ng.stop()

	direct := append(ng.pids[:len(ng.pids):len(ng.pids)], os.Getpid())
	ways := []struct {
		target, addr string
		pids         []int
	}{
		{targetNginx, setup.direct, direct},
		{targetNginxGrantry, setup.auth, append(direct[:len(direct):len(direct)], g.pid())},
	}
	out := make([]series, len(ways))
	for i, w := range ways {
		out[i] = series{system: systemNginx, target: w.target, placement: pl.name, users: p.Users}
	}
	// Both blocks at make bench's load keep both CPUs busy, and their p99 would be mostly the
	// wait for a CPU: the row measures what the step adds to a request under a moderate load.
	loadOf := *h
	loadOf.conns = min(h.conns, nginxConns)
	for run := range h.runs {
		for i, w := range ways {
			h.quiet(ctx)
			res, err := loadOf.loadAt(ctx, w.target, []string{w.addr}, w.pids, pl, dir, p, run)
			if err != nil {
				return nil, err
			}
			h.logRun(pl, systemNginx, w.target, run, res, "")
			out[i].runs = append(out[i].runs, res)
		}
	}
	if out[0].mem, err = ng.memory(); err != nil {
		return nil, err
	}
	gm, err := memoryOf(g.pid())
	if err != nil {
		return nil, err
	}
	out[1].mem = out[0].mem.plus(gm)
	return out, nil
}
