package main

import (
	"net/http"
	"regexp"
	"testing"
	"time"
)

// TestTwoProcessesShareOneStore runs two Grantry processes on one FerretDB, as replicas share
// one MongoDB: a change made through either is seen by a check on the other, although the other
// has cached what it answered before (FerretDB has no change streams, so this is the polling
// fallback every standalone deployment relies on), and a grant to one user leaves the other
// process's memory of another user in place. The second within which a change must be seen
// follows from the feed's poll interval and the cache's staleness bound; a machine busy with
// other work can delay any one poll past it, so the test waits longer and logs how long it took.
// The cache has no expiry of its own while the feed vouches for it: without the feed's report,
// the old answer would stay.
func TestTwoProcessesShareOneStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs FerretDB")
	}
	host := startFerretDB(t)
	env := func() map[string]string {
		return map[string]string{
			"GRANTRY_MONGO_URI":         "mongodb://" + host + "/?maxPoolSize=1",
			"GRANTRY_MONGO_DB":          "shared",
			"GRANTRY_DATA_DIR":          t.TempDir(),
			"GRANTRY_BOOTSTRAP_API_KEY": "boot-key",
		}
	}
	a, _, _ := startServer(t, env())
	b, _, _ := startServer(t, env())
	models, users := setUp(t, a, "boot-key", 2, 2)
	check := func(base, user, model string) bool {
		t.Helper()
		status, _, body := do(t, "POST", base+"/provisions/can_user_access", `{"user_id":"`+user+`","svc_id":"`+model+`"}`)
		if status != http.StatusOK {
			t.Fatalf("check on %s = %d %s", base, status, body)
		}
		return body == "true"
	}
	// within checks on other until it answers want.
	within := func(what, other, user, model string, want bool) {
		t.Helper()
		const limit = 30 * time.Second
		start := time.Now()
		for check(other, user, model) != want {
			if time.Since(start) > limit {
				t.Fatalf("%s: the other process still answers %v after %s", what, !want, limit)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: seen by the other process after %v", what, time.Since(start).Round(time.Millisecond))
	}
	grant := func(base, path, user, model string) {
		t.Helper()
		if status, _, body := do(t, "POST", base+path, `{"user_id":"`+user+`","svc_id":"`+model+`"}`); status != http.StatusOK {
			t.Fatalf("%s on %s = %d %s", path, base, status, body)
		}
	}

	// Both processes have answered, and cached, "no".
	for _, base := range []string{a, b} {
		if check(base, users[0], models[0]) {
			t.Fatal("allowed before any grant")
		}
	}
	grant(a, "/provisions/add_to_user", users[0], models[0])
	if !check(a, users[0], models[0]) {
		t.Fatal("the process that granted does not see its own grant")
	}
	within("grant on A", b, users[0], models[0], true)

	grant(b, "/provisions/remove_from_user", users[0], models[0])
	if check(b, users[0], models[0]) {
		t.Fatal("the process that revoked does not see its own revoke")
	}
	within("revoke on B", a, users[0], models[0], false)

	// B holds users[1]; a grant to users[0] on A drops only users[0] on B, so B answers about
	// users[1] without reading the store. A look of B's change feed that fails (on a machine busy
	// with other work) rightly makes B drop everything, so a round that saw one is tried again.
	misses := func(base string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^grantry_user_misses_total (\S+)$`).FindStringSubmatch(string(mustSend(t, "GET", base+"/metrics", "boot-key", nil)))
		if m == nil {
			t.Fatal("/metrics lacks grantry_user_misses_total")
		}
		return m[1]
	}
	kept := false
	for round := 0; round < 5 && !kept; round++ {
		check(b, users[1], models[0])
		path, want := "/provisions/add_to_user", true
		if round%2 == 1 {
			path, want = "/provisions/remove_from_user", false
		}
		grant(a, path, users[0], models[1])
		within("a change of another user on A", b, users[0], models[1], want)
		before := misses(b)
		check(b, users[1], models[0])
		if after := misses(b); after == before {
			kept = true
		} else {
			t.Logf("round %d: B read users[1] from the store (misses %s → %s)", round, before, after)
		}
	}
	if !kept {
		t.Error("B read a user that no change reached from the store after every change of another user on A")
	}

	grant(a, "/provisions/add_to_user", users[1], models[1])
	within("second grant on A", b, users[1], models[1], true)
	if status, _, body := do(t, "POST", a+"/llm_integration/remove", `{"svc_id":"`+models[1]+`"}`); status != http.StatusOK {
		t.Fatalf("remove = %d %s", status, body)
	}
	within("removal on A", b, users[1], models[1], false)
}
