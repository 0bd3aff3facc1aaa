package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/policy"
)

type explanation struct {
	Allowed        bool     `json:"allowed"`
	Reasons        []string `json:"reasons"`
	PolicyRevision string   `json:"policy_revision"`
}

// TestExplain: explain gives the policy's reason for each cause of a deny, agrees with the
// check, and reveals nothing of another organization.
func TestExplain(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	_, otherKey := f.org("other")
	granted := f.model(key, "gpt")
	notGranted := f.model(key, "llama")
	removed := f.model(key, "old")
	theirs := f.model(otherKey, "theirs")
	ada := f.user(key, "ada@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": granted})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": removed})
	f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": removed})

	tests := []struct {
		name        string
		user, svc   string
		wantAllowed bool
		wantReasons []string
	}{
		{"granted", ada, strings.ToUpper(granted), true, []string{"granted"}},
		{"unknown user", "nobody", granted, false, []string{"unknown user"}},
		{"unknown resource", ada, "00000000-0000-4000-8000-000000000000", false, []string{"unknown resource"}},
		{"removed resource", ada, removed, false, []string{"unknown resource"}},
		{"resource of another organization", ada, theirs, false, []string{"unknown resource"}},
		{"not granted", ada, notGranted, false, []string{"not granted"}},
		{"unknown user and resource", "nobody", theirs, false, []string{"unknown resource", "unknown user"}},
	}
	revision := policy.Revision(policy.Embedded())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]string{"user_id": tc.user, "svc_id": tc.svc}
			got := decode[explanation](t, f.must("POST", "/provisions/explain", key, body))
			want := explanation{Allowed: tc.wantAllowed, Reasons: tc.wantReasons, PolicyRevision: revision}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("explain (-want +got):\n%s", diff)
			}
			if check := decode[bool](t, f.must("POST", "/provisions/can_user_access", key, body)); check != got.Allowed {
				t.Errorf("explain says allowed=%v, the check says %v", got.Allowed, check)
			}
		})
	}

	t.Run("validated like the check", func(t *testing.T) {
		r := f.do("POST", "/provisions/explain", key, map[string]string{"user_id": ada, "svc_id": "gpt"})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("explain with a bad svc_id = %d %s, want 422", r.Status, r.Body)
		}
		jsonEqual(t, r.Body, `{"detail":[{"loc":["body","svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"}]}`)
		if r := f.do("POST", "/provisions/explain", "", map[string]string{"user_id": ada, "svc_id": granted}); r.Status != http.StatusUnauthorized {
			t.Errorf("explain without a key = %d, want 401", r.Status)
		}
	})
}

// TestExplainFailingPolicy: a policy that cannot be evaluated explains the deny it causes.
func TestExplainFailingPolicy(t *testing.T) {
	engine, err := policy.New(context.Background(), []policy.Module{{Name: "p.rego", Source: "package grantry.authz\nallow if { 1 / 0 }\nallow_all := false\n"}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, withPolicy(policy.NewLive(engine)))
	_, key := f.org("acme")
	got := decode[explanation](t, f.must("POST", "/provisions/explain", key, map[string]string{"user_id": "u", "svc_id": "00000000-0000-4000-8000-000000000000"}))
	want := explanation{Allowed: false, Reasons: []string{"policy evaluation failed"}, PolicyRevision: engine.Revision()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("explain (-want +got):\n%s", diff)
	}
}

func TestGetPolicy(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	got := decode[struct {
		Revision string          `json:"revision"`
		Modules  []policy.Module `json:"modules"`
	}](t, f.must("GET", "/policy", key, nil))
	if got.Revision != policy.Revision(policy.Embedded()) {
		t.Errorf("revision = %s, want the embedded policy's", got.Revision)
	}
	if diff := cmp.Diff(policy.Embedded(), got.Modules); diff != "" {
		t.Errorf("modules (-want +got):\n%s", diff)
	}
	if r := f.do("GET", "/policy", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /policy without a key = %d, want 401", r.Status)
	}
}

// Policies for the reload test: each allows everything or nothing, and passes its own test.
var (
	openPolicy = []policy.Module{
		{Name: "authz.rego", Source: "package grantry.authz\nallow := true\nallow_all := true\n"},
		{Name: "authz_test.rego", Source: "package grantry.authz_test\nimport data.grantry.authz\ntest_open if { authz.allow }\n"},
	}
	closedPolicy = []policy.Module{
		{Name: "authz.rego", Source: "package grantry.authz\nallow := false\nallow_all := false\n"},
		{Name: "authz_test.rego", Source: "package grantry.authz_test\nimport data.grantry.authz\ntest_closed if { not authz.allow }\n"},
	}
	brokenPolicy  = []policy.Module{{Name: "authz.rego", Source: "package grantry.authz\nallow if {\n"}}
	failingPolicy = []policy.Module{
		{Name: "authz.rego", Source: "package grantry.authz\nallow := true\nallow_all := true\n"},
		{Name: "authz_test.rego", Source: "package grantry.authz_test\nimport data.grantry.authz\ntest_closed if { not authz.allow }\n"},
	}
)

// TestHotReload swaps policies while checks and explains run concurrently: none fails, each
// answer comes from one whole policy, and each logged decision names the revision that made
// it. Broken policies and policies failing their own tests are refused without a trace in the
// answers. Run it with -race.
func TestHotReload(t *testing.T) {
	ctx := context.Background()
	engine, err := policy.Load(ctx, closedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	live := policy.NewLive(engine)
	var dl *decisionlog.Log
	f := newFixture(t, withPolicy(live), withDecisionLog(&dl, decisionlog.Config{QueueSize: 100_000}, nil))
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	ada := f.user(key, "ada@example.com")

	stop := make(chan struct{})
	var checks atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				path, body := "/provisions/can_user_access", map[string]any{"user_id": ada, "svc_id": model}
				if w%2 == 1 {
					path, body = "/provisions/can_user_access_all", map[string]any{"user_id": ada, "tags": []string{model}}
				}
				r := f.do("POST", path, key, body)
				if r.Status != http.StatusOK || (string(r.Body) != "true" && string(r.Body) != "false") {
					t.Errorf("check during a reload: %d %s", r.Status, r.Body)
					return
				}
				e := f.do("POST", "/provisions/explain", key, map[string]any{"user_id": ada, "svc_id": model})
				ex := decode[explanation](t, e)
				if e.Status != http.StatusOK || ex.Allowed != (ex.PolicyRevision == policy.Revision(openPolicy)) {
					t.Errorf("explain during a reload: %d %s", e.Status, e.Body)
					return
				}
				checks.Add(1)
			}
		})
	}
	for i := range 10 {
		next := openPolicy
		if i%2 == 1 {
			next = closedPolicy
		}
		if _, err := live.Replace(ctx, next); err != nil {
			t.Errorf("Replace %d: %v", i, err)
		}
		for _, bad := range [][]policy.Module{brokenPolicy, failingPolicy} {
			if _, err := live.Replace(ctx, bad); err == nil {
				t.Error("a bad policy replaced the running one")
			}
		}
	}
	close(stop)
	wg.Wait()
	if checks.Load() == 0 {
		t.Fatal("no check ran during the reloads")
	}
	if live.Reloads() != 10 || live.ReloadFailures() != 20 {
		t.Errorf("reloads %d, failures %d; want 10 and 20", live.Reloads(), live.ReloadFailures())
	}
	if got := decode[struct{ Revision string }](t, f.must("GET", "/policy", key, nil)).Revision; got != policy.Revision(closedPolicy) {
		t.Errorf("GET /policy revision = %s, want the last good policy's", got)
	}

	// Every logged decision agrees with the revision it names: the open policy allowed, the
	// closed one denied.
	flush(t, dl)
	seen := map[string]int{}
	for path := "/audit/decisions?limit=1000"; path != ""; {
		page := decode[decisionsPage](t, f.must("GET", path, key, nil))
		for _, d := range page.Decisions {
			seen[d.PolicyRevision]++
			if d.Result != (d.PolicyRevision == policy.Revision(openPolicy)) {
				t.Fatalf("decision %s: result %v from revision %s", d.ID, d.Result, d.PolicyRevision)
			}
		}
		path = ""
		if page.NextCursor != nil {
			path = "/audit/decisions?limit=1000&cursor=" + *page.NextCursor
		}
	}
	if total := seen[policy.Revision(openPolicy)] + seen[policy.Revision(closedPolicy)]; int64(total) != checks.Load() || len(seen) > 2 {
		t.Errorf("logged decisions by revision %v, want %d from the open and closed policies", seen, checks.Load())
	}
}
