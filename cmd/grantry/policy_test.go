package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// writeFiles writes files (name → content) into a new folder and returns it.
func writeFiles(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

const (
	openRego   = "package grantry.authz\nallow := true\nallow_all := true\n"
	closedRego = "package grantry.authz\nallow := false\nallow_all := false\n"
	openTest   = "package grantry.authz_test\nimport data.grantry.authz\ntest_open if { authz.allow }\n"
	closedTest = "package grantry.authz_test\nimport data.grantry.authz\ntest_closed if { not authz.allow }\n"
)

func TestPolicyTestCommand(t *testing.T) {
	shipped := writeFiles(t, nil)
	for _, name := range []string{"authz.rego", "authz_test.rego"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "policy", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(shipped, name), src, 0o644)
	}
	tests := []struct {
		name    string
		args    []string
		wantOut []string
		wantErr string // "" for success
	}{
		{"the shipped policy passes", []string{"policy", "test", shipped},
			[]string{"PASS data.grantry.authz_test.test_reasons_inactive_user", " passed, 0 failed; revision "}, ""},
		{"tests in subfolders count", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": openRego, "tests/authz_test.rego": openTest})},
			[]string{"PASS data.grantry.authz_test.test_open", "1 passed, 0 failed"}, ""},
		{"a failing test fails", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": openRego, "authz_test.rego": openTest + closedTest[strings.Index(closedTest, "test_closed"):]})},
			[]string{"PASS data.grantry.authz_test.test_open", "FAIL data.grantry.authz_test.test_closed", "1 passed, 1 failed"}, "1 of 2 tests failed"},
		{"a test that cannot be evaluated fails", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": openRego,
			"authz_test.rego": "package grantry.authz_test\nx := 1 if true\nx := 2 if true\ntest_conflict if { x == 1 }\n"})},
			[]string{"FAIL data.grantry.authz_test.test_conflict: ", "conflict"}, "1 of 1 tests failed"},
		{"a compile error fails", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": "package grantry.authz\nallow if {\n", "authz_test.rego": openTest})},
			nil, "parse policy"},
		{"a policy Grantry cannot serve fails", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": "package grantry.authz\nallow := true\n", "authz_test.rego": openTest})},
			[]string{"1 passed, 0 failed"}, "does not define data.grantry.authz.allow_all"},
		{"no tests fails", []string{"policy", "test", writeFiles(t, map[string]string{"authz.rego": openRego})},
			[]string{"0 passed, 0 failed"}, "has no tests"},
		{"a missing folder fails", []string{"policy", "test", filepath.Join(t.TempDir(), "nope")}, nil, "read policy folder"},
		{"no folder", []string{"policy", "test"}, nil, "usage: grantry policy test DIR"},
		{"unknown subcommand", []string{"policy", "lint", shipped}, nil, "usage: grantry policy test DIR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, func(string) string { return "" }, &out, io.Discard)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("run %v = %v, want error %q", tc.args, err, tc.wantErr)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestServeKeepsAnAuditTrailAndReloadsThePolicy drives `grantry serve` as a client would: its
// changes are in the audit trail, its checks in the decision log, and a change to the policy
// folder is served without a restart while a broken one is refused.
func TestServeKeepsAnAuditTrailAndReloadsThePolicy(t *testing.T) {
	policyDir := writeFiles(t, map[string]string{"authz.rego": closedRego, "authz_test.rego": closedTest})
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "boot-key", "GRANTRY_POLICY_DIR": policyDir}
	url, stderr, stop := startServer(t, env)
	call := func(method, path string, body any) []byte {
		t.Helper()
		return mustSend(t, method, url+path, "boot-key", body)
	}
	var model struct{ Model struct{ ID string } }
	json.Unmarshal(call("POST", "/llm_integration/custom_model", map[string]string{"model_name": "gpt"}), &model)
	check := func() string {
		return string(call("POST", "/provisions/can_user_access", map[string]string{"user_id": "ada", "svc_id": model.Model.ID}))
	}
	if got := check(); got != "false" {
		t.Fatalf("check under the closed policy = %s", got)
	}

	// The bootstrap is Grantry's own doing; the model is the key's.
	events := string(call("GET", "/audit/events", nil))
	for _, want := range []string{`"action":"resource.created"`, `"actor":{"kind":"api_key","id":"bootstrap"}`, `"action":"org.created"`, `"actor":{"kind":"system","id":null}`} {
		if !strings.Contains(events, want) {
			t.Errorf("audit trail lacks %s: %s", want, events)
		}
	}

	// A broken policy is refused; a good one is served, without a restart.
	os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte("package grantry.authz\nallow if {\n"), 0o644)
	waitUntil(t, 15*time.Second, "refusal logged", func() bool { return strings.Contains(stderr.String(), "policy reload failed") })
	if got := check(); got != "false" {
		t.Errorf("check after a broken policy = %s, want the old policy's false", got)
	}
	os.WriteFile(filepath.Join(policyDir, "authz_test.rego"), []byte(openTest), 0o644)
	os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte(openRego), 0o644)
	waitUntil(t, 15*time.Second, "reload", func() bool { return check() == "true" })

	var decisions struct {
		Decisions []struct {
			Result         bool   `json:"result"`
			PolicyRevision string `json:"policy_revision"`
		}
	}
	waitUntil(t, 15*time.Second, "decisions logged", func() bool {
		json.Unmarshal(call("GET", "/audit/decisions?result=true&limit=1", nil), &decisions)
		return len(decisions.Decisions) == 1
	})
	var current struct{ Revision string }
	json.Unmarshal(call("GET", "/policy", nil), &current)
	if decisions.Decisions[0].PolicyRevision != current.Revision {
		t.Errorf("the allowed decision names revision %s, the running policy is %s", decisions.Decisions[0].PolicyRevision, current.Revision)
	}

	// The decision log and the reloads are counted on /metrics.
	metrics := string(call("GET", "/metrics", nil))
	for _, want := range []string{"grantry_policy_reloads_total 1\n", "grantry_policy_reload_failures_total 1\n", "grantry_decision_log_dropped_total 0\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !regexp.MustCompile(`grantry_decision_log_written_total [1-9]`).MatchString(metrics) {
		t.Error("/metrics does not count the decisions written")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestServeRefusesAPolicyFailingItsTests(t *testing.T) {
	dir := writeFiles(t, map[string]string{"authz.rego": openRego, "authz_test.rego": closedTest})
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_POLICY_DIR": dir}
	err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "policy tests failed: data.grantry.authz_test.test_closed") {
		t.Errorf("serve = %v, want it to refuse a policy that fails its own tests", err)
	}
}
