package main

import (
	"encoding/json"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/internal/config"
)

// TestCacheEntries checks the translation of GRANTRY_CACHE_ENTRIES into authz.Config, and that
// the two packages agree on the default (config cannot import authz, so each names it).
func TestCacheEntries(t *testing.T) {
	if config.DefaultCacheEntries != authz.DefaultMaxUsers {
		t.Errorf("config.DefaultCacheEntries = %d, authz.DefaultMaxUsers = %d; they must agree", config.DefaultCacheEntries, authz.DefaultMaxUsers)
	}
	for _, tc := range []struct{ setting, want int }{{0, -1}, {1, 1}, {config.DefaultCacheEntries, config.DefaultCacheEntries}} {
		if got := maxUsers(tc.setting); got != tc.want {
			t.Errorf("maxUsers(%d) = %d, want %d", tc.setting, got, tc.want)
		}
	}
}

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	if got := tuneGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] }); got != "50" {
		t.Errorf("with GOGC=50, tuneGC reports %q", got)
	}
	if was := debug.SetGCPercent(100); was != 100 {
		t.Errorf("with GOGC set, tuneGC changed the goal to %d", was)
	}
	if got := tuneGC(func(string) string { return "" }); got != "200" {
		t.Errorf("without GOGC, tuneGC reports %q", got)
	}
	if was := debug.SetGCPercent(100); was != gcPercent {
		t.Errorf("without GOGC, the goal is %d, want %d", was, gcPercent)
	}
}

// TestServeReadsGrantsIn: on a restart, users and their grants are read into the engine's
// memory, which the log says; /metrics says when that is done and how many users are held, one
// fewer once a user is written to. (That what a write reaches while a read-in is under way is
// not held from it is authz's TestReadInKeepsNothingAWriteReached.)
func TestServeReadsGrantsIn(t *testing.T) {
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "boot-key"}
	url, _, stop := startServer(t, env)
	call := func(path string, body any) []byte {
		t.Helper()
		return mustSend(t, "POST", url+path, "boot-key", body)
	}
	var model struct{ Model struct{ ID string } }
	json.Unmarshal(call("/llm_integration/custom_model", map[string]string{"model_name": "gpt"}), &model)
	var integ struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}
	json.Unmarshal(call("/auth_integration/create", map[string]string{"name": "import"}), &integ)
	var users struct{ Users []struct{ ID string } }
	json.Unmarshal(call("/users/import", map[string]any{"auth_integration_id": integ.AuthIntegration.ID,
		"users": []map[string]string{{"email": "ada@acme.test", "first": "Ada", "last": "L"}, {"email": "bob@acme.test", "first": "Bob", "last": "L"}}}), &users)
	for _, u := range users.Users {
		call("/provisions/add_to_user", map[string]string{"user_id": u.ID, "svc_id": model.Model.ID})
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	url, stderr, stop := startServer(t, env)
	metric := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(string(mustSend(t, "GET", url+"/metrics", "boot-key", nil)))
		if m == nil {
			t.Fatalf("/metrics lacks %s", name)
		}
		return m[1]
	}
	waitUntil(t, 15*time.Second, "the read-in", func() bool { return metric("grantry_read_in") == "0" })
	if !strings.Contains(stderr.String(), `"msg":"users and groups read into memory","users":2,"groups":0,`) {
		t.Errorf("no line saying two users were read in:\n%s", stderr)
	}
	if got := metric("grantry_users_held"); got != "2" {
		t.Errorf("grantry_users_held = %s after the read-in, want 2", got)
	}
	check := func(user string) string {
		return string(call("/provisions/can_user_access", map[string]string{"user_id": user, "svc_id": model.Model.ID}))
	}
	ada := users.Users[0].ID
	if got := check(ada); got != "true" {
		t.Errorf("check of ada, read in = %s", got)
	}
	call("/provisions/remove_from_user", map[string]string{"user_id": ada, "svc_id": model.Model.ID})
	if got := metric("grantry_journal_pending"); got != "1" {
		t.Errorf("grantry_journal_pending = %s just after a revoke, want 1", got)
	}
	if got := metric("grantry_users_held"); got != "1" {
		t.Errorf("grantry_users_held = %s after ada was written to, want 1", got)
	}
	if got := check(ada); got != "false" {
		t.Errorf("check of ada after the revoke = %s", got)
	}
	if got := metric("grantry_users_held"); got != "2" {
		t.Errorf("grantry_users_held = %s once ada was asked about again, want 2", got)
	}
	waitUntil(t, 15*time.Second, "the revoke's apply", func() bool { return metric("grantry_journal_pending") == "0" })
	if got := metric("grantry_journal_apply_failures_total"); got != "0" {
		t.Errorf("grantry_journal_apply_failures_total = %s, want 0", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkLoggedDurations(t, stderr.String())
}
