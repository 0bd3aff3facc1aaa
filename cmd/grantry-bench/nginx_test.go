package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testGatewaysDoc is docs/gateways.md seen from this package's folder, where go test runs.
const testGatewaysDoc = "../../docs/gateways.md"

func readGatewaysDoc(tb testing.TB) string {
	tb.Helper()
	page, err := os.ReadFile(testGatewaysDoc)
	if err != nil {
		tb.Fatal(err)
	}
	return string(page)
}

// TestParseNginxDoc: the row's configuration is the page's nginx block with its placeholders
// replaced, and the same server block again with its /v1/ location proxying straight to the
// provider; a page without the block, or without what the row needs of it, is an error.
func TestParseNginxDoc(t *testing.T) {
	page := readGatewaysDoc(t)
	setup := nginxSetup{grantry: "127.0.0.1:2001", upstream: "127.0.0.1:2002", auth: "127.0.0.1:1001", direct: "127.0.0.1:1002", key: "gry_bench"}
	tests := []struct {
		name    string
		edit    func(page string) string
		wantErr string
	}{
		{name: "the page as it is", edit: func(p string) string { return p }},
		{name: "no block marked nginx", edit: func(p string) string {
			return strings.Replace(p, "<!-- gateways-test: nginx -->", "<!-- gateways-test: nginx-old -->", 1)
		}, wantErr: "docs/gateways.md has no block marked <!-- gateways-test: nginx -->"},
		{name: "a placeholder missing", edit: func(p string) string {
			return strings.ReplaceAll(p, "gry_YOUR_GATEWAY_KEY", "$GATEWAY_KEY")
		}, wantErr: `no placeholder "gry_YOUR_GATEWAY_KEY"`},
		{name: "no @llm location", edit: func(p string) string {
			return strings.ReplaceAll(p, "location @llm {", "location @provider {")
		}, wantErr: "lacks a server with the locations /v1/ and @llm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parseNginxDoc([]byte(tc.edit(page)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseNginxDoc = %v; want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			conf := doc.config(setup)
			for _, p := range nginxPlaceholders {
				if strings.Contains(conf, p) {
					t.Errorf("the configuration still holds the placeholder %q:\n%s", p, conf)
				}
			}
			for _, want := range []string{
				"server 127.0.0.1:2001;", "server 127.0.0.1:2002;", "listen 127.0.0.1:1001;", "listen 127.0.0.1:1002;",
				"proxy_set_header X-Grantry-Key gry_bench;", `proxy_set_header Authorization "Bearer sk-bench-provider";`,
			} {
				if !strings.Contains(conf, want) {
					t.Errorf("the configuration lacks %q:\n%s", want, conf)
				}
			}
			// The docs' block is there as the page gives it, placeholders aside.
			if !strings.HasPrefix(conf, setup.placeholders(setup.auth).Replace(doc.block)) {
				t.Errorf("the configuration does not start with the page's block:\n%s", conf)
			}
			v1 := regexp.MustCompile(`(?s)location /v1/ \{\n(.*?)\n\s*\}`).FindAllStringSubmatch(conf, -1)
			if len(v1) != 2 {
				t.Fatalf("%d locations /v1/, want the docs' and the straight one:\n%s", len(v1), conf)
			}
			if !strings.Contains(v1[0][1], "proxy_pass http://grantry/gateway/auth$request_uri;") {
				t.Errorf("the docs' /v1/ location does not ask Grantry:\n%s", v1[0][1])
			}
			llm := setup.placeholders(setup.auth).Replace(docLLMLocationRE.FindStringSubmatch(doc.block)[1])
			if v1[1][1] != llm || strings.Contains(v1[1][1], "grantry") {
				t.Errorf("the straight /v1/ location is\n%s\nwant @llm's directives\n%s", v1[1][1], llm)
			}
		})
	}
}

// TestPrepareNginx: without nginx the row is taken out of the selection and one line says so,
// on stderr and in the report; with it, a page without the configuration stops the run.
func TestPrepareNginx(t *testing.T) {
	found := func(string) (string, error) { return "/usr/sbin/nginx", nil }
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	tests := []struct {
		name        string
		rows        string
		lookPath    func(string) (string, error)
		page        string
		wantBin     string
		wantSkipped []string
		wantErr     string
	}{
		{name: "not selected", rows: "grantry", lookPath: missing, page: testGatewaysDoc},
		{name: "found", rows: "nginx,grantry", lookPath: found, page: testGatewaysDoc, wantBin: "/usr/sbin/nginx"},
		{name: "nginx missing", rows: "nginx,grantry", lookPath: missing, page: "no/such/page.md",
			wantSkipped: []string{"the nginx row: nginx not found on PATH or at /usr/sbin/nginx; skipped"}},
		{name: "the page missing", rows: "nginx", lookPath: found, page: "no/such/page.md", wantErr: "run grantry-bench at the repository root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := parseSystems(tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			selected := sel[rowNginx]
			var stderr bytes.Buffer
			row, skipped, err := prepareNginx(sel, tc.lookPath, tc.page, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("prepareNginx = %v; want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			wantStderr := ""
			for _, line := range tc.wantSkipped {
				wantStderr += "grantry-bench: " + line + "\n"
			}
			if stderr.String() != wantStderr {
				t.Errorf("stderr %q, want %q", stderr.String(), wantStderr)
			}
			if row.bin != tc.wantBin || (row.doc.block != "") != (tc.wantBin != "") {
				t.Errorf("row = %q with a block %v; want %q", row.bin, row.doc.block != "", tc.wantBin)
			}
			if sel[rowNginx] != (selected && tc.wantSkipped == nil) || !sel[rowGrantry] {
				t.Errorf("selection after = %v; want the nginx row only if it runs, the others kept", sel)
			}
		})
	}
}

func TestFindNginx(t *testing.T) {
	tests := []struct {
		name    string
		present map[string]string // name looked up → path found
		want    string
	}{
		{"on PATH", map[string]string{"nginx": "/opt/nginx/sbin/nginx", "/usr/sbin/nginx": "/usr/sbin/nginx"}, "/opt/nginx/sbin/nginx"},
		{"in /usr/sbin only", map[string]string{"/usr/sbin/nginx": "/usr/sbin/nginx"}, "/usr/sbin/nginx"},
		{"nowhere", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findNginx(func(name string) (string, error) {
				if path, ok := tc.present[name]; ok {
					return path, nil
				}
				return "", exec.ErrNotFound
			})
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("findNginx = %q, %v; want %q", got, err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "nginx not found") {
				t.Errorf("error %q does not say nginx is missing", err)
			}
		})
	}
}

func TestUpstreamHandler(t *testing.T) {
	tests := []struct {
		name       string
		auth       string
		wantStatus int
		wantBody   string
	}{
		{"nginx's provider key", "Bearer " + benchProviderKey, 200, string(upstreamAnswer)},
		{"no key", "", 401, "no provider key\n"},
		{"the client's key", "Bearer gry_bench", 401, "no provider key\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", nginxChatPath, strings.NewReader(`{"model":"model-00000"}`))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			upstreamHandler().ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("answer %d %q, want %d %q", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

// TestNginxReport: the nginx row's two series are rows of the table and of the results file,
// and the difference of their latencies the lines under the table; a row skipped says so.
func TestNginxReport(t *testing.T) {
	three := func(r loadResult) []loadResult { return []loadResult{r, r, r} }
	direct := series{system: systemNginx, target: targetNginx, placement: "unpinned", runs: three(result(20_000, 60*time.Microsecond, 3*time.Millisecond))}
	auth := series{system: systemNginx, target: targetNginxGrantry, placement: "unpinned", runs: three(result(9_000, 150*time.Microsecond, 7*time.Millisecond))}
	tests := []struct {
		name       string
		series     []series
		skipped    []string
		wantLines  []string
		wantLabels []string
		wantAdds   map[string]map[string]any // ratio → values
	}{
		{
			name:   "both measured",
			series: []series{direct, auth},
			wantLines: []string{
				`unpinned\s+nginx → upstream\s+20,000\s+1\.50ms\s+3\.00ms\s+60\.0`,
				`unpinned\s+nginx\+Grantry → upstream\s+9,000\s+3\.50ms\s+7\.00ms\s+150\.0`,
				`nginx: authorization adds p50\s+-\s+2\.00ms\s+\(reported\)`,
				`nginx: authorization adds p99\s+-\s+4\.00ms\s+\(reported\)`,
			},
			wantLabels: []string{"nginx → upstream", "nginx+Grantry → upstream"},
			wantAdds: map[string]map[string]any{
				"nginx: authorization adds p50": {"unpinned": 2.0},
				"nginx: authorization adds p99": {"unpinned": 4.0},
			},
		},
		{
			name:       "only the straight proxy",
			series:     []series{direct},
			wantLines:  []string{`nginx: authorization adds p99\s+-\s+-\s+\(reported\)`},
			wantLabels: []string{"nginx → upstream"},
			wantAdds:   map[string]map[string]any{"nginx: authorization adds p99": {}},
		},
		{
			name:      "nginx missing",
			skipped:   []string{"the nginx row: nginx not found on PATH or at /usr/sbin/nginx; skipped"},
			wantLines: []string{`(?m)^skipped: the nginx row: nginx not found on PATH or at /usr/sbin/nginx; skipped$`},
			wantAdds:  map[string]map[string]any{"nginx: authorization adds p50": {}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := report{
				workload: defaultParams(),
				h:        &harness{conns: 32, runs: 3, duration: time.Second, taskset: "/usr/bin/taskset"},
				series:   tc.series,
				skipped:  tc.skipped,
			}
			var out bytes.Buffer
			rep.write(&out)
			for _, want := range tc.wantLines {
				if !regexp.MustCompile(want).MatchString(out.String()) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
			res := rep.results()
			var labels []string
			for _, row := range res.Rows {
				if row.System != systemNginx || row.Wrong == nil {
					t.Errorf("row %+v: want system nginx, its answers checked", row)
				}
				labels = append(labels, row.Label)
			}
			if diff := cmp.Diff(tc.wantLabels, labels); diff != "" {
				t.Errorf("rows' labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, res.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			for _, r := range res.Ratios {
				want, ok := tc.wantAdds[r.Name]
				if !ok {
					continue
				}
				got := map[string]any{}
				for k, v := range r.Values {
					got[k] = v
				}
				if diff := cmp.Diff(want, got); diff != "" || r.Unit != "ms" || r.Target != "(reported)" {
					t.Errorf("ratio %s: unit %q, target %q, values (-want +got):\n%s", r.Name, r.Unit, r.Target, diff)
				}
				delete(tc.wantAdds, r.Name)
			}
			if len(tc.wantAdds) > 0 {
				t.Errorf("ratios missing: %v", tc.wantAdds)
			}
		})
	}
}

// TestNginxRow runs what the nginx row runs, against Grantry's router in process: a real
// nginx with the page's configuration and the straight server block in front of the fake
// provider. Through the docs' block a granted chat completion reaches the provider and one
// not granted gets Grantry's 403; through the straight block everything reaches it; and the
// load generator's answers through both are all right, and all wrong for a flipped workload.
func TestNginxRow(t *testing.T) {
	bin, err := findNginx(exec.LookPath)
	if err != nil {
		t.Skipf("nginx not installed; skipping")
	}
	doc, err := parseNginxDoc([]byte(readGatewaysDoc(t)))
	if err != nil {
		t.Fatal(err)
	}
	s := seedSmall(t)
	grantry := s.grantryServer(t)
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		upstreamHandler().ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	setup := nginxSetup{grantry: grantry.Listener.Addr().String(), upstream: up.Listener.Addr().String(), key: s.key}
	for _, addr := range []*string{&setup.auth, &setup.direct} {
		if *addr, err = freeAddr(); err != nil {
			t.Fatal(err)
		}
	}
	ng, err := startNginx(t.Context(), bin, t.TempDir(), doc.config(setup), setup.direct, 1, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ng.stop)
	if len(ng.pids) != 2 {
		t.Errorf("nginx's processes %v, want its master and one worker", ng.pids)
	}

	var granted, denied *pair
	for _, p := range modelPairs(s.w.Checks) {
		switch {
		case p.Granted && granted == nil:
			granted = &p
		case !p.Granted && denied == nil:
			denied = &p
		}
	}
	if granted == nil || denied == nil {
		t.Fatal("the workload has no granted or no denied model pair")
	}
	steps := []struct {
		name, target, addr string
		p                  pair
		status             int
		reached            int64 // requests that reach the provider
	}{
		{"a granted chat through Grantry reaches the provider", targetNginxGrantry, setup.auth, *granted, 200, 1},
		{"a chat not granted gets Grantry's 403", targetNginxGrantry, setup.auth, *denied, 403, 0},
		{"the straight proxy passes the same chat on", targetNginx, setup.direct, *denied, 200, 1},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			tg, err := newTarget(st.target, s.w)
			if err != nil {
				t.Fatal(err)
			}
			x := tg.ask(st.p, nil)[0]
			if max(x.status, 200) != st.status {
				t.Errorf("the load generator expects %d, want %d", max(x.status, 200), st.status)
			}
			c := newClient(st.addr, "", false)
			defer c.close()
			before := calls.Load()
			status, body, err := c.do(x)
			if err != nil {
				t.Fatal(err)
			}
			if status != st.status || calls.Load()-before != st.reached {
				t.Fatalf("answer %d %s, %d requests reached the provider; want %d, %d", status, body, calls.Load()-before, st.status, st.reached)
			}
			if st.status == 200 && !bytes.Equal(body, upstreamAnswer) || st.status == 403 && !bytes.Contains(body, []byte(`"reason":"not_permitted"`)) {
				t.Errorf("body %s, want the provider's or Grantry's refusal", body)
			}
		})
	}

	flipped := *s.w
	flipped.Checks = make([]pair, len(s.w.Checks))
	for i, c := range s.w.Checks {
		c.Granted = !c.Granted
		flipped.Checks[i] = c
	}
	loads := []struct {
		name, target, addr string
		w                  *workload
		wantWrong          bool
	}{
		{"the load through the straight block", targetNginx, setup.direct, s.w, false},
		{"the load through the docs' block", targetNginxGrantry, setup.auth, s.w, false},
		{"every answer flipped, through the docs' block", targetNginxGrantry, setup.auth, &flipped, true},
	}
	for _, l := range loads {
		t.Run(l.name, func(t *testing.T) {
			tg, err := newTarget(l.target, l.w)
			if err != nil {
				t.Fatal(err)
			}
			res := measureSome(t, &generator{target: tg, addrs: []string{l.addr}, key: s.key, conns: 2}, 200*time.Millisecond)
			if res.Requests == 0 || res.Errors != 0 || (res.Mismatches == res.Requests) != l.wantWrong || !l.wantWrong && res.Mismatches != 0 {
				t.Errorf("%d requests, %d wrong, %d errors (first: %s); want some, all wrong: %v", res.Requests, res.Mismatches, res.Errors, res.FirstError, l.wantWrong)
			}
		})
	}
}

// TestNginxBadConfiguration: an nginx that cannot start says why, in its own words.
func TestNginxBadConfiguration(t *testing.T) {
	bin, err := findNginx(exec.LookPath)
	if err != nil {
		t.Skipf("nginx not installed; skipping")
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, err = startNginx(t.Context(), bin, t.TempDir(), "server { listen "+addr+"; nonsense; }\n", addr, 1, os.Environ())
	if err == nil || !strings.Contains(err.Error(), `unknown directive "nonsense"`) {
		t.Errorf("startNginx = %v; want nginx's complaint", err)
	}
}
