package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
)

// metricValue returns the value of the sample line of /metrics that starts with series, and
// whether there is one.
func metricValue(tb testing.TB, f *fixture, series string) (string, bool) {
	tb.Helper()
	r := f.do("GET", "/metrics", "", nil)
	if r.Status != http.StatusOK {
		tb.Fatalf("/metrics = %d %s", r.Status, r.Body)
	}
	sc := bufio.NewScanner(strings.NewReader(string(r.Body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return v, true
		}
	}
	return "", false
}

func TestMetrics(t *testing.T) {
	var store *faultyStore
	f := newFixture(t, withFaultyStore(&store))
	_, key := f.org("acme")
	model := f.model(key, "m")
	user := f.user(key, "ada@acme.test")
	f.check(key, user, model) // deny
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": model})
	f.check(key, user, model) // allow
	f.check(key, user, model) // allow
	f.do("GET", "/no/such/path/0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01", key, nil)
	f.do("DELETE", "/admin/api_keys/secret-looking-key-id", adminToken, nil)
	store.set(broken)
	f.do("POST", "/provisions/can_user_access", key, map[string]string{"user_id": user, "svc_id": model})

	r := f.do("GET", "/metrics", "", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics without a key = %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	body := string(r.Body)
	for _, leak := range []string{"0b6f1a52", "secret-looking-key-id", key, model} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics shows %q: labels must be route patterns, never raw paths or ids", leak)
		}
	}
	tests := []struct {
		series, want string
	}{
		{`grantry_decisions_total{result="allow"}`, "2"},
		{`grantry_decisions_total{result="deny"}`, "1"},
		{`grantry_decisions_total{result="error"}`, "0"},
		{`grantry_store_errors_total{reason="unavailable"}`, "1"},
		{`grantry_http_request_duration_seconds_count{method="POST",route="/provisions/can_user_access",status="200"}`, "3"},
		{`grantry_http_request_duration_seconds_count{method="POST",route="/provisions/can_user_access",status="503"}`, "1"},
		{`grantry_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}`, "1"},
		{`grantry_http_request_duration_seconds_count{method="DELETE",route="/admin/api_keys/:id",status="404"}`, "1"},
	}
	for _, tc := range tests {
		if got, ok := metricValue(t, f, tc.series); !ok || got != tc.want {
			t.Errorf("%s = %q (present: %v), want %s", tc.series, got, ok, tc.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("/metrics lacks %s (Go and process collectors)", name)
		}
	}
}

func TestMetricsOfOtherParts(t *testing.T) {
	f := newFixture(t)
	drops := 0.0
	if err := f.srv.CounterFunc("grantry_test_dropped_total", "Entries dropped.", func() float64 { return drops }); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.GaugeFunc("grantry_test_cache_entries", "Entries cached.", func() float64 { return 7 }); err != nil {
		t.Fatal(err)
	}
	drops = 3
	if got, _ := metricValue(t, f, "grantry_test_dropped_total"); got != "3" {
		t.Errorf("counter func = %q, want 3", got)
	}
	if got, _ := metricValue(t, f, "grantry_test_cache_entries"); got != "7" {
		t.Errorf("gauge func = %q, want 7", got)
	}
	if err := f.srv.GaugeFunc("grantry_test_cache_entries", "Again.", func() float64 { return 0 }); err == nil {
		t.Error("registering a metric name twice succeeded")
	}
	// Each server has its own registry: a second one in the same process starts clean.
	if err := newFixture(t).srv.CounterFunc("grantry_test_dropped_total", "Entries dropped.", func() float64 { return 0 }); err != nil {
		t.Errorf("a second server cannot register the same name: %v", err)
	}
}

func withRateLimit(rate float64, burst int) fixtureOption {
	return func(c *fixtureConfig) { c.RateLimit, c.RateBurst = rate, burst }
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		burst int
		// want is the status of each request made one after the other at one instant.
		want []int
		// retryAfter is the Retry-After of the first 429.
		retryAfter string
	}{
		{"off by default", 0, 0, repeat(http.StatusOK, 50), ""},
		{"burst of two", 1, 2, []int{200, 200, 429, 429}, "1"},
		{"burst defaults to one second's worth", 3, 0, []int{200, 200, 200, 429}, "1"},
		{"slow rate asks to wait longer", 0.1, 1, []int{200, 429}, "10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withRateLimit(tc.rate, tc.burst))
			_, key := f.org("acme")
			var retry string
			for i, want := range tc.want {
				r := f.do("GET", "/functions/list", key, nil)
				if r.Status != want {
					t.Fatalf("request %d = %d %s, want %d", i, r.Status, r.Body, want)
				}
				if r.Status == http.StatusTooManyRequests && retry == "" {
					retry = r.Header.Get("Retry-After")
					jsonEqual(t, r.Body, `{"detail":"Too many requests with this API key; retry later."}`)
				}
			}
			if retry != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", retry, tc.retryAfter)
			}
		})
	}
}

func repeat(status, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = status
	}
	return out
}

func TestRateLimitIsPerKeyAndRefills(t *testing.T) {
	f := newFixture(t, withRateLimit(2, 1))
	_, keyA := f.org("a")
	_, keyB := f.org("b")
	list := func(key string) int { return f.do("GET", "/functions/list", key, nil).Status }
	if a1, a2 := list(keyA), list(keyA); a1 != 200 || a2 != 429 {
		t.Fatalf("key A: %d then %d, want 200 then 429", a1, a2)
	}
	if b := list(keyB); b != 200 {
		t.Errorf("key B after A ran out = %d, want 200: each key has its own bucket", b)
	}
	// Health, readiness, metrics and the admin API take no key and are never limited.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/healthz"} {
		if got := f.do("GET", p, keyA, nil).Status; got != 200 {
			t.Errorf("%s with a limited key = %d", p, got)
		}
	}
	f.must("GET", "/admin/orgs", adminToken, nil)
	f.clock.Advance(400 * time.Millisecond)
	if got := list(keyA); got != 429 {
		t.Errorf("after 0.4 s at 2/s = %d, want 429", got)
	}
	f.clock.Advance(100 * time.Millisecond)
	if got := list(keyA); got != 200 {
		t.Errorf("after 0.5 s at 2/s = %d, want 200", got)
	}
	// Without a valid key the answer is 401, before any bucket is looked at.
	if got := list("gry_unknown"); got != 401 {
		t.Errorf("unknown key = %d, want 401", got)
	}
}

func withRequestTimeout(d time.Duration) fixtureOption {
	return func(c *fixtureConfig) { c.RequestTimeout = d }
}

// TestStoreFaults: a store that fails or stops answering makes a 503 with Retry-After and a
// {"detail"} that shows nothing internal, within the request deadline, and recovery is at once.
func TestStoreFaults(t *testing.T) {
	var store *faultyStore
	// Each request to a hanging store waits this out (the requests run at once): long enough
	// that a check of a healthy store does not time out on a loaded machine.
	const timeout = time.Second
	setUp := newFixture(t, withFaultyStore(&store))
	_, key := setUp.org("acme")
	model := setUp.model(key, "m")
	user := setUp.user(key, "ada@acme.test")
	setUp.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": model})
	f := setUp.replica(withRequestTimeout(timeout))

	requests := []struct {
		method, path string
		body         any
	}{
		{"POST", "/provisions/can_user_access", map[string]string{"user_id": user, "svc_id": model}},
		{"POST", "/provisions/can_user_access_all", map[string]any{"user_id": user, "tags": []string{model}}},
		{"POST", "/provisions/add_to_user", map[string]string{"user_id": user, "svc_id": model}},
		{"GET", "/llm_integration/list/", nil},
		// Explain reads what the check reads: an outage is an outage, not a policy's failure.
		{"POST", "/provisions/explain", map[string]string{"user_id": user, "svc_id": model}},
	}
	for _, mode := range []struct {
		name   string
		fault  fault
		reason string // of grantry_store_errors_total
	}{{"store fails", broken, "unavailable"}, {"store hangs", hanging, "timeout"}} {
		t.Run(mode.name, func(t *testing.T) {
			store.set(mode.fault)
			answers := make([]chan response, len(requests))
			for i, rq := range requests {
				answers[i] = make(chan response, 1)
				go func() { answers[i] <- f.do(rq.method, rq.path, key, rq.body) }()
			}
			for i, rq := range requests {
				var r response
				select {
				case r = <-answers[i]:
				case <-time.After(time.Minute):
					t.Fatalf("%s %s still hangs a minute after a %s deadline", rq.method, rq.path, timeout)
				}
				if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "1" {
					t.Errorf("%s %s = %d (Retry-After %q) %s, want 503 with Retry-After 1", rq.method, rq.path, r.Status, r.Header.Get("Retry-After"), r.Body)
				}
				jsonEqual(t, r.Body, `{"detail":"The store is unavailable; try again shortly."}`)
			}
			store.set(healthy)
			if got, _ := metricValue(t, f, `grantry_store_errors_total{reason="`+mode.reason+`"}`); got != strconv.Itoa(len(requests)) {
				t.Errorf("store errors with reason %s = %q, want %d", mode.reason, got, len(requests))
			}
			if !f.check(key, user, model) {
				t.Error("after the store recovered, the grant made before is gone")
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(f *fixture, store *faultyStore)
		opts    []fixtureOption
		want    int
	}{
		{"ready", func(*fixture, *faultyStore) {}, nil, http.StatusOK},
		{"store down", func(_ *fixture, s *faultyStore) { s.ping.Store(int32(broken)) }, nil, http.StatusServiceUnavailable},
		{"store hangs", func(_ *fixture, s *faultyStore) { s.ping.Store(int32(hanging)) }, nil, http.StatusServiceUnavailable},
		{"shutting down", func(f *fixture, _ *faultyStore) { f.srv.SetReady(false) }, nil, http.StatusServiceUnavailable},
		{"no policy", func(*fixture, *faultyStore) {}, []fixtureOption{func(c *fixtureConfig) { c.decider = func(d api.Decider) api.Decider { return unreadyDecider{d} } }}, http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var store *faultyStore
			f := newFixture(t, append([]fixtureOption{withFaultyStore(&store)}, tc.opts...)...)
			tc.prepare(f, store)
			if r := f.do("GET", "/readyz", "", nil); r.Status != tc.want {
				t.Errorf("readyz = %d %s, want %d", r.Status, r.Body, tc.want)
			}
			if r := f.do("GET", "/healthz", "", nil); r.Status != http.StatusOK {
				t.Errorf("healthz = %d: liveness does not depend on the store or the policy", r.Status)
			}
		})
	}
}

// accessLine is what TestAccessLog reads of each access-log line.
type accessLine struct {
	Msg        string   `json:"msg"`
	RequestID  string   `json:"request_id"`
	Method     string   `json:"method"`
	Route      string   `json:"route"`
	Status     int      `json:"status"`
	DurationMS *float64 `json:"duration_ms"`
	OrgID      *string  `json:"org_id"`
}

func TestAccessLog(t *testing.T) {
	var logs logBuffer
	var store *faultyStore
	f := newFixture(t, withLog(&logs), withFaultyStore(&store), withRateLimit(1, 4))
	orgID, key := f.org("acme")
	user := f.user(key, "ada@acme.test") // two requests of the burst of four

	type sent struct {
		status int
		route  string
		org    string
		id     string
	}
	var want []sent
	send := func(method, path, key string, body any, status int, route, org string) {
		t.Helper()
		before := strings.Count(logs.String(), `"msg":"request"`)
		r := f.do(method, path, key, body)
		if r.Status != status {
			t.Fatalf("%s %s = %d %s, want %d", method, path, r.Status, r.Body, status)
		}
		if n := strings.Count(logs.String(), `"msg":"request"`) - before; n != 1 {
			t.Errorf("%s %s (%d) wrote %d access-log lines, want 1", method, path, status, n)
		}
		want = append(want, sent{status, route, org, r.Header.Get("X-Request-ID")})
	}
	send("GET", "/users/list", key, nil, 200, "/users/list", orgID)
	send("GET", "/users/list", "gry_not-a-key", nil, 401, "/users/list", "")
	send("GET", "/nope", key, nil, 404, "unmatched", "")
	send("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}, 404, "/provisions/add_to_user", orgID)
	send("GET", "/users/list", key, nil, 429, "/users/list", orgID)
	f.clock.Advance(time.Second)
	store.set(broken)
	send("POST", "/provisions/can_user_access", key, map[string]string{"user_id": user, "svc_id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}, 503, "/provisions/can_user_access", orgID)

	var got []sent
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var l accessLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if l.Msg != "request" {
			continue
		}
		if l.DurationMS == nil || l.OrgID == nil || l.Method == "" {
			t.Errorf("access-log line lacks duration_ms, org_id or method: %s", line)
			continue
		}
		got = append(got, sent{l.Status, l.Route, *l.OrgID, l.RequestID})
	}
	// The fixture's own set-up requests come first.
	if len(got) < len(want) {
		t.Fatalf("%d access-log lines, want at least %d", len(got), len(want))
	}
	got = got[len(got)-len(want):]
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("access-log line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestLogsHoldNoSecrets drives requests that carry an API key, the admin token and third-party
// secrets, through success and every kind of failure, and finds none of them in the log.
func TestLogsHoldNoSecrets(t *testing.T) {
	var logs logBuffer
	var store *faultyStore
	f := newFixture(t, withLog(&logs), withFaultyStore(&store), withRateLimit(1000, 1000))
	_, key := f.org("acme")
	user := f.user(key, "ada@acme.test")
	const providerKey = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"
	const pineconeKey = "pcsk_4Vq2Lr8Nx6Tz1Wy3Kp5Hm7Gd9Fb0Sc2Ae4Ju6Io8"
	unknownKey := "gry_" + strings.Repeat("Q", 43)
	secrets := map[string]string{"API key": key, "admin token": adminToken, "unknown key": unknownKey,
		"provider key": providerKey, "Pinecone key": pineconeKey}

	withSecrets := map[string]any{"provider_key": providerKey, "api_key": pineconeKey, "environment": "us-east-1"}
	requests := []struct {
		method, path, token string
		body                any
	}{
		{"GET", "/users/list", key, nil},
		{"GET", "/users/list", unknownKey, nil},
		{"GET", "/admin/orgs", adminToken, nil},
		{"GET", "/admin/orgs", key, nil},
		{"POST", "/llm_integration/hostedllm", key, `{"provider_key": 7, "api_key": "` + pineconeKey + `"}`},
		{"POST", "/data_integration/vectordb/integrate", key, `{"api_key": 7, "provider_key": "` + providerKey + `"}`},
		{"POST", "/functions/create", key, map[string]any{"function_name": "f", "provider_key": providerKey, "api_key": pineconeKey}},
		{"POST", "/functions/create", key, `{"function_name": "` + providerKey + `", "description": 1}`},
		{"POST", "/provisions/can_user_access", key, `{"user_id": "` + providerKey + `", "svc_id": "` + pineconeKey + `"`},
		{"POST", "/provisions/can_user_access", key, withSecrets},
		{"POST", "/provisions/add_to_user", key, map[string]string{"user_id": providerKey, "svc_id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}},
		{"POST", "/auth_integration/create", key, map[string]string{"name": "okta", "metadata": `{"client_secret":"` + providerKey + `"}`}},
	}
	send := func() {
		for _, rq := range requests {
			f.do(rq.method, rq.path, rq.token, rq.body)
		}
	}
	send()
	store.set(broken) // failures are logged with their cause: that must not carry secrets either
	send()
	f.do("POST", "/provisions/can_user_access", key, map[string]string{"user_id": user, "svc_id": "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"})

	out := logs.String()
	if !strings.Contains(out, `"status":503`) || !strings.Contains(out, `"level":"ERROR"`) {
		t.Fatalf("the test did not reach a logged failure:\n%s", out)
	}
	for name, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the log holds the %s", name)
		}
	}
	// Nor the part of a key that would identify it beyond its display prefix.
	if regexp.MustCompile(`gry_[0-9A-Za-z]{20,}`).MatchString(out) {
		t.Errorf("the log holds something shaped like an API key:\n%s", out)
	}
}

// TestHostileBodies: bodies built to cost the server time or memory get a short answer.
func TestHostileBodies(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name, path, body string
		status           int
		problems         int // how many 422 problems, when status is 422
	}{
		// Too many items: that one problem, the items unread, as pydantic reports it.
		{"two hundred thousand wrong list items", "/provisions/can_user_access_all",
			`{"user_id":"u","tags":[` + strings.Repeat("1,", 200_000) + `1]}`, http.StatusUnprocessableEntity, 1},
		{"every tag wrong at the limit", "/provisions/can_user_access_all",
			`{"user_id":"","tags":[` + strings.Repeat(`"x",`, 999) + `"x"]}`, http.StatusUnprocessableEntity, 1001},
		{"nesting 100,000 deep", "/provisions/can_user_access", strings.Repeat("[", 100_000), http.StatusUnprocessableEntity, 1},
		{"a number too large for any type", "/provisions/can_user_access", `{"user_id":1e999999,"svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`, http.StatusUnprocessableEntity, 1},
		{"ten thousand users of all wrong types", "/users/import",
			`{"auth_integration_id":"a","users":[` + strings.Repeat(`{"id":1,"email":2,"first":3,"last":4},`, 9999) + `{}]}`, http.StatusUnprocessableEntity, 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", tc.path, key, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status = %d, want %d", r.Status, tc.status)
			}
			var body struct{ Detail []map[string]any }
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("body %.200s: %v", r.Body, err)
			}
			if len(body.Detail) != tc.problems {
				t.Errorf("%d problems, want %d", len(body.Detail), tc.problems)
			}
		})
	}
}

// TestSCIMRateLimit: a SCIM token has a bucket of its own, as an API key has, and is refused
// with a SCIM error and Retry-After when it is empty.
func TestSCIMRateLimit(t *testing.T) {
	f := newFixture(t, withRateLimit(2, 1))
	_, key := f.org("acme")
	_, okta := f.scimIntegration(key, "okta")
	f.clock.Advance(time.Second)
	_, entra := f.scimIntegration(key, "entra")
	list := func(token string) response { return f.scimDo("GET", "/scim/v2/Users", token, "") }
	if r := list(okta); r.Status != http.StatusOK {
		t.Fatalf("first request = %d %s", r.Status, r.Body)
	}
	r := list(okta)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("second request at once = %d, Retry-After %q; want 429 and 1", r.Status, r.Header.Get("Retry-After"))
	}
	jsonEqual(t, r.Body, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"429","detail":"Too many requests with this SCIM token; retry later."}`)
	if r := list(entra); r.Status != http.StatusOK {
		t.Errorf("another token = %d, want 200: each token has its own bucket", r.Status)
	}
	f.clock.Advance(time.Second)
	if got := f.do("GET", "/users/list", key, nil).Status; got != http.StatusOK {
		t.Errorf("the API key after its wait = %d, want 200: the tokens do not spend its bucket", got)
	}
	if r := list(okta); r.Status != http.StatusOK {
		t.Errorf("after the wait = %d, want 200", r.Status)
	}
	if r := list("gscim_unknown"); r.Status != http.StatusUnauthorized {
		t.Errorf("unknown token = %d, want 401 before any bucket", r.Status)
	}
}
