package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/internal/decisionlog"
)

// explainReasons asks explain and returns its reasons.
func (f *fixture) explainReasons(key, userID, svcID string) []string {
	f.tb.Helper()
	return decode[struct{ Reasons []string }](f.tb, f.must("POST", "/provisions/explain", key, map[string]string{"user_id": userID, "svc_id": svcID})).Reasons
}

// TestGrantsExpireOnTheSystemClock runs a server on the system clock (no Config.Now) with a
// request timeout, as serve does. There a request reads the clock as it arrives (its deadline,
// its key's expiry) and as its handler starts (its grants' expiries, its decision's time), and
// nowhere else: a grant allows until its expires_at and not after, also for a user whose
// answers are kept in memory, and each decision is dated within its request.
func TestGrantsExpireOnTheSystemClock(t *testing.T) {
	var (
		dl     *decisionlog.Log
		mu     sync.Mutex
		logged []decisionlog.Entry
	)
	sink := func(_ context.Context, batch []decisionlog.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, batch...)
		return nil
	}
	f := newFixture(t, func(c *fixtureConfig) { c.Now = nil }, withRequestTimeout(time.Minute), withDecisionLog(&dl, decisionlog.Config{}, sink))
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	ada := f.user(key, "ada@acme.test")

	expires := time.Now().Add(time.Second).Truncate(time.Millisecond)
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model, "expires_at": expires.Format(time.RFC3339Nano)})
	type window struct{ from, to time.Time }
	var asked []window
	ask := func() bool {
		from := time.Now()
		allowed := f.check(key, ada, model)
		asked = append(asked, window{from.Truncate(time.Millisecond), time.Now()})
		return allowed
	}
	for range 4 { // enough questions for the user's answers to be kept
		if !ask() && time.Now().Before(expires) {
			t.Fatal("a grant that has not expired does not allow")
		}
	}
	time.Sleep(time.Until(expires))
	if ask() {
		t.Error("a grant allows after its expires_at")
	}

	flush(t, dl)
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != len(asked) {
		t.Fatalf("%d decisions logged, want %d", len(logged), len(asked))
	}
	for i, d := range logged {
		if w := asked[i]; d.Time.Before(w.from) || d.Time.After(w.to) {
			t.Errorf("decision %d dated %v, outside its request (%v to %v)", i, d.Time, w.from, w.to)
		}
	}
}

// TestGrantsExpire drives the clock the server reads past the expiry of direct and group
// grants: each allows until its expires_at and not from that instant on, explain says
// "expired", granting again replaces the expiry, and the clean-up leaves "not granted".
func TestGrantsExpire(t *testing.T) {
	f := newFixture(t) // the clock starts at 2026-11-22T09:30:00Z
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	dataset := f.model(key, "docs")
	ada := f.user(key, "ada@acme.test")
	eng := f.group(key, "Engineering")
	f.addMember(key, eng, ada)

	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model, "expires_at": "2026-11-22T09:31:00Z"})
	// An offset is understood: 10:32 in UTC+1 is 09:32Z.
	f.must("POST", "/provisions/add_to_group", key, map[string]string{"group_id": eng, "svc_id": dataset, "expires_at": "2026-11-22T10:32:00+01:00"})

	type state struct {
		model, dataset   bool
		modelReasons     []string
		datasetReasons   []string
		resourceListSize int
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    state
	}{
		{"before either expiry", 0, state{true, true, []string{"granted"}, []string{"granted", "granted via group Engineering"}, 1}},
		{"a millisecond before the first", time.Minute - time.Millisecond, state{true, true, []string{"granted"}, []string{"granted", "granted via group Engineering"}, 1}},
		{"at the first", time.Millisecond, state{false, true, []string{"expired"}, []string{"granted", "granted via group Engineering"}, 0}},
		{"at the second", time.Minute, state{false, false, []string{"expired"}, []string{"expired"}, 0}},
	}
	for _, st := range steps {
		f.clock.Advance(st.advance)
		got := state{
			model: f.check(key, ada, model), dataset: f.check(key, ada, dataset),
			modelReasons: f.explainReasons(key, ada, model), datasetReasons: f.explainReasons(key, ada, dataset),
			resourceListSize: len(decode[struct {
				Users []struct {
					ResourceList []any `json:"resource_list"`
				}
			}](t, f.must("GET", "/users/list", key, nil)).Users[0].ResourceList),
		}
		if show(got) != show(st.want) {
			t.Errorf("%s: %+v, want %+v", st.name, got, st.want)
		}
	}

	// Granting again replaces the expiry: a later one allows again, none allows for good.
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model, "expires_at": "2026-11-22T10:00:00Z"})
	if !f.check(key, ada, model) {
		t.Error("a grant given a later expiry does not allow")
	}
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model})
	f.clock.Advance(365 * 24 * time.Hour)
	if !f.check(key, ada, model) {
		t.Error("a grant given again without expiry stopped allowing")
	}
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model, "expires_at": "2027-11-22T09:33:00Z"})
	f.clock.Advance(time.Minute)
	if f.check(key, ada, model) {
		t.Error("a grant that lasted for good, given an expiry that has now passed, still allows")
	}

	// The clean-up removes what expired (through the server's store, as serve runs it); the
	// answer stays no, and explain no longer has an expired grant to speak of.
	gone, err := f.engine.Store().DeleteExpiredGrants(t.Context(), f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(gone.Users) != 1 || len(gone.Groups) != 1 {
		t.Errorf("clean-up removed %+v, want the model's and the group's grants", gone)
	}
	if f.check(key, ada, model) || f.check(key, ada, dataset) {
		t.Error("a grant removed by the clean-up allows")
	}
	for _, svc := range []string{model, dataset} {
		if got := f.explainReasons(key, ada, svc); show(got) != `["not granted"]` {
			t.Errorf("explain after the clean-up = %v, want [not granted]", got)
		}
	}
}

func TestExpiresAtValidation(t *testing.T) {
	f := newFixture(t) // the clock is at 2026-11-22T09:30:00Z
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	ada := f.user(key, "ada@acme.test")
	eng := f.group(key, "Engineering")
	future := `{"loc":["body","expires_at"],"msg":"Input should be in the future","type":"datetime_future"}`
	parsing := `{"loc":["body","expires_at"],"msg":"Input should be a valid datetime in RFC 3339 format, such as 2026-11-22T09:30:00Z","type":"datetime_parsing"}`
	tests := []struct {
		name      string
		expiresAt any
		svcID     string
		want      string // the detail array
	}{
		{"in the past", "2026-11-22T09:29:59Z", model, `[` + future + `]`},
		{"now is not the future", "2026-11-22T09:30:00Z", model, `[` + future + `]`},
		{"now, in another zone", "2026-11-22T10:30:00+01:00", model, `[` + future + `]`},
		{"a date without a time", "2026-12-01", model, `[` + parsing + `]`},
		{"no offset", "2026-12-01T00:00:00", model, `[` + parsing + `]`},
		{"not a time at all", "tomorrow", model, `[` + parsing + `]`},
		{"a number", 1795000000, model, `[{"loc":["body","expires_at"],"msg":"Input should be a valid string","type":"string_type"}]`},
		{"every problem at once", "2020-01-01T00:00:00Z", "not-a-uuid",
			`[{"loc":["body","svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"},` + future + `]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for path, body := range map[string]map[string]any{
				"/provisions/add_to_user":  {"user_id": ada, "svc_id": tc.svcID, "expires_at": tc.expiresAt},
				"/provisions/add_to_group": {"group_id": eng, "svc_id": tc.svcID, "expires_at": tc.expiresAt},
			} {
				r := f.do("POST", path, key, body)
				if r.Status != http.StatusUnprocessableEntity {
					t.Fatalf("POST %s = %d %s, want 422", path, r.Status, r.Body)
				}
				jsonEqual(t, r.Body, `{"detail":`+tc.want+`}`)
			}
		})
	}
	if f.check(key, ada, model) {
		t.Error("a refused grant allows")
	}
	// null is no expiry, as FastAPI reads an optional field.
	f.must("POST", "/provisions/add_to_user", key, map[string]any{"user_id": ada, "svc_id": model, "expires_at": nil})
	if !f.check(key, ada, model) {
		t.Error("a grant with expires_at null does not allow")
	}
}
