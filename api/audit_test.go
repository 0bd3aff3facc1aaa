package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage/audit"
)

// withAudit records every change in the audit trail, as `grantry serve` does.
func withAudit(c *fixtureConfig) { c.Engine.Store = audit.New(c.Engine.Store, c.Now, nil) }

// withDecisionLog logs decisions to the store through a decision log configured by cfg and
// sink (nil: the store, as `grantry serve` does); *dl is set to the log, which the test closes
// to flush it.
func withDecisionLog(dl **decisionlog.Log, cfg decisionlog.Config, sink decisionlog.Sink) fixtureOption {
	return func(c *fixtureConfig) {
		if sink == nil {
			sink = api.DecisionSink(c.Engine.Store)
		}
		*dl = decisionlog.New(cfg, sink)
		c.Decisions = *dl
	}
}

func flush(tb testing.TB, dl *decisionlog.Log) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dl.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}

// keyID is the id of an API key, which the admin API does not show.
func (f *fixture) keyID(key string) string {
	f.tb.Helper()
	k, err := f.store.APIKeyByHash(context.Background(), apikey.Hash(key))
	if err != nil {
		f.tb.Fatal(err)
	}
	return k.ID
}

type decisionsPage struct {
	Decisions []struct {
		ID             string   `json:"id"`
		Time           string   `json:"time"`
		RequestID      string   `json:"request_id"`
		APIKeyID       string   `json:"api_key_id"`
		Endpoint       string   `json:"endpoint"`
		UserID         string   `json:"user_id"`
		ResourceIDs    []string `json:"resource_ids"`
		Result         bool     `json:"result"`
		PolicyRevision string   `json:"policy_revision"`
		DurationMS     *float64 `json:"duration_ms"`
	} `json:"decisions"`
	NextCursor *string `json:"next_cursor"`
}

type eventsPage struct {
	Events []struct {
		ID        string  `json:"id"`
		Time      string  `json:"time"`
		RequestID *string `json:"request_id"`
		Actor     struct {
			Kind string  `json:"kind"`
			ID   *string `json:"id"`
		} `json:"actor"`
		Action string `json:"action"`
		Target struct {
			Kind string `json:"kind"`
			ID   string `json:"id"`
		} `json:"target"`
		UserID *string         `json:"user_id"`
		SvcID  *string         `json:"svc_id"`
		Before json.RawMessage `json:"before"`
		After  json.RawMessage `json:"after"`
	} `json:"events"`
	NextCursor *string `json:"next_cursor"`
}

// TestDecisionLog: every check is logged with who asked, about what, the answer, the policy
// revision and the request id, and never a key; the log's filters and pages select them.
func TestDecisionLog(t *testing.T) {
	var dl *decisionlog.Log
	f := newFixture(t, withDecisionLog(&dl, decisionlog.Config{}, nil))
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	other := f.model(key, "llama")
	ada := f.user(key, "ada@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model})

	type check struct {
		path string
		body map[string]any
		want bool
	}
	checks := []check{
		{"/provisions/can_user_access", map[string]any{"user_id": ada, "svc_id": strings.ToUpper(model)}, true},
		{"/provisions/can_user_access", map[string]any{"user_id": ada, "svc_id": other}, false},
		{"/provisions/can_user_access", map[string]any{"user_id": "nobody", "svc_id": model}, false},
		{"/provisions/can_user_access_all", map[string]any{"user_id": ada, "tags": []string{model, other}}, false},
	}
	var requestIDs []string
	for _, c := range checks {
		r := f.must("POST", c.path, key, c.body)
		if got := decode[bool](t, r); got != c.want {
			t.Fatalf("POST %s %v = %v, want %v", c.path, c.body, got, c.want)
		}
		requestIDs = append(requestIDs, r.Header.Get("X-Request-ID"))
		f.clock.Advance(time.Second)
	}
	// Neither an invalid request nor explain is a decision.
	f.do("POST", "/provisions/can_user_access", key, map[string]any{"user_id": ada, "svc_id": "not-a-uuid"})
	f.must("POST", "/provisions/explain", key, map[string]any{"user_id": ada, "svc_id": model})
	flush(t, dl)

	raw := f.must("GET", "/audit/decisions", key, nil)
	if strings.Contains(string(raw.Body), key) || strings.Contains(string(raw.Body), apikey.Hash(key)) {
		t.Errorf("the decision log shows the API key or its hash: %s", raw.Body)
	}
	page := decode[decisionsPage](t, raw)
	if len(page.Decisions) != len(checks) || page.NextCursor != nil {
		t.Fatalf("GET /audit/decisions = %d decisions, next %v; want %d and no next page: %s", len(page.Decisions), page.NextCursor, len(checks), raw.Body)
	}
	revision := policy.Revision(policy.Embedded())
	type entry struct {
		Time, RequestID, APIKeyID, Endpoint, UserID string
		ResourceIDs                                 []string
		Result                                      bool
		Revision                                    string
	}
	var got, want []entry
	for i, d := range page.Decisions {
		got = append(got, entry{d.Time, d.RequestID, d.APIKeyID, d.Endpoint, d.UserID, d.ResourceIDs, d.Result, d.PolicyRevision})
		if d.DurationMS == nil || *d.DurationMS < 0 || d.ID == "" {
			t.Errorf("decision %d: id %q, duration %v; want an id and a duration", i, d.ID, d.DurationMS)
		}
	}
	endpoints := []string{"can_user_access", "can_user_access", "can_user_access", "can_user_access_all"}
	ids := [][]string{{model}, {other}, {model}, {model, other}}
	for i := len(checks) - 1; i >= 0; i-- { // newest first
		want = append(want, entry{
			Time: fmt.Sprintf("2026-11-22T09:30:%02d.000Z", i), RequestID: requestIDs[i], APIKeyID: f.keyID(key),
			Endpoint: endpoints[i], UserID: checks[i].body["user_id"].(string), ResourceIDs: ids[i], Result: checks[i].want, Revision: revision,
		})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	filters := []struct {
		query string
		want  []int // indexes of checks, newest first
	}{
		{"user_id=" + ada, []int{3, 1, 0}},
		{"user_id=nobody", []int{2}},
		{"svc_id=" + model, []int{3, 2, 0}},
		{"svc_id=" + strings.ToUpper(other), []int{3, 1}},
		{"result=true", []int{0}},
		{"result=false", []int{3, 2, 1}},
		{"user_id=" + ada + "&result=false&svc_id=" + other, []int{3, 1}},
		{"since=2026-11-22T09:30:01Z", []int{3, 2, 1}},
		{"until=2026-11-22T09:30:01Z", []int{0}},
		{"since=2026-11-22T10:30:01%2B01:00&until=2026-11-22T09:30:03Z", []int{2, 1}},
		{"since=2026-11-22T09:30:00.0005Z", []int{3, 2, 1}},
		{"user_id=someone-else", nil},
	}
	for _, tc := range filters {
		t.Run(tc.query, func(t *testing.T) {
			page := decode[decisionsPage](t, f.must("GET", "/audit/decisions?"+tc.query, key, nil))
			var gotReq, wantReq []string
			for _, d := range page.Decisions {
				gotReq = append(gotReq, d.RequestID)
			}
			for _, i := range tc.want {
				wantReq = append(wantReq, requestIDs[i])
			}
			if diff := cmp.Diff(wantReq, gotReq); diff != "" {
				t.Errorf("request ids of the decisions (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		var seen []string
		path := "/audit/decisions/?limit=3"
		for range 3 {
			page := decode[decisionsPage](t, f.must("GET", path, key, nil))
			for _, d := range page.Decisions {
				seen = append(seen, d.RequestID)
			}
			if page.NextCursor == nil {
				break
			}
			path = "/audit/decisions?limit=3&cursor=" + url.QueryEscape(*page.NextCursor)
		}
		if diff := cmp.Diff([]string{requestIDs[3], requestIDs[2], requestIDs[1], requestIDs[0]}, seen); diff != "" {
			t.Errorf("decisions over pages of 3 (-want +got):\n%s", diff)
		}
	})
}

// TestDecisionLogNeverHoldsUpChecks: with the store stuck, checks still answer at once; the
// queue keeps the newest decisions and counts the ones it dropped.
func TestDecisionLogNeverHoldsUpChecks(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	stuck := func(ctx context.Context, batch []decisionlog.Entry) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	var dl *decisionlog.Log
	f := newFixture(t, withDecisionLog(&dl, decisionlog.Config{QueueSize: 2, BatchSize: 1, FlushInterval: time.Hour}, stuck))
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	f.check(key, "ada", model)
	<-entered // the writer is stuck on the first decision

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 9 {
			f.check(key, "ada", model)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("checks were held up by a stuck decision log")
	}
	if got := dl.Dropped(); got != 7 {
		t.Errorf("Dropped = %d, want 7: one decision is being written, two wait, seven made room", got)
	}
	close(release)
	flush(t, dl)
	if dl.Written() != 3 {
		t.Errorf("Written = %d, want 3", dl.Written())
	}
}

// TestAuditEvents: every kind of change is in the trail, with who made it, in which request,
// and the record before and after; changes that change nothing are not; no secret appears.
func TestAuditEvents(t *testing.T) {
	f := newFixture(t, withAudit)
	orgID, key := f.org("acme")
	keyID := f.keyID(key)
	var requests []string // X-Request-ID of each change below, in order
	do := func(method, path, token string, body any) response {
		t.Helper()
		r := f.must(method, path, token, body)
		requests = append(requests, r.Header.Get("X-Request-ID"))
		f.clock.Advance(time.Millisecond)
		return r
	}
	second := decode[struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}](t, do("POST", "/admin/orgs/"+orgID+"/api_keys", adminToken, nil))
	do("DELETE", "/admin/api_keys/"+second.ID, adminToken, nil)
	model := decode[struct{ Model struct{ ID string } }](t, do("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "gpt"})).Model.ID
	fn := decode[struct{ Function struct{ ID string } }](t, do("POST", "/functions/create", key, map[string]string{"function_name": "search", "description": "finds"})).Function.ID
	ds := decode[struct{ Datasets []struct{ ID string } }](t, do("POST", "/data_integration/custom", key, map[string]string{"dataset_name": "docs"})).Datasets[0].ID
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, do("POST", "/auth_integration/create", key, map[string]string{"name": "hr", "metadata": "{}"})).AuthIntegration.ID
	do("POST", "/users/import", key, map[string]any{"auth_integration_id": integ, "users": []map[string]string{{"id": "ada", "email": "ada@example.com", "first": "Ada"}}})
	do("POST", "/users/import", key, map[string]any{"auth_integration_id": integ, "users": []map[string]string{{"email": "ada@example.com", "first": "Augusta"}}})
	do("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "ada", "svc_id": model})
	do("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": "ada", "svc_id": model})
	do("POST", "/functions/remove", key, map[string]string{"svc_id": fn})
	// Changes that change nothing record nothing.
	f.must("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": "ada", "svc_id": model})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "ada", "svc_id": ds})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "ada", "svc_id": ds})
	f.must("POST", "/users/import", key, map[string]any{"auth_integration_id": integ, "users": []map[string]string{{"email": "ada@example.com", "first": "Augusta"}}})
	// Refused changes record nothing either.
	f.do("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "gpt"})
	f.do("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "nobody", "svc_id": model})

	raw := f.must("GET", "/audit/events?limit=1000", key, nil)
	for _, secret := range []string{key, second.APIKey, apikey.Hash(key), apikey.Hash(second.APIKey)} {
		if strings.Contains(string(raw.Body), secret) {
			t.Errorf("the audit trail shows a key or a key's hash: %s", raw.Body)
		}
	}
	page := decode[eventsPage](t, raw)
	type brief struct{ Action, Actor, Target, User, Svc, Request string }
	str := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	var got []brief
	for _, e := range page.Events {
		got = append(got, brief{e.Action, e.Actor.Kind + ":" + str(e.Actor.ID), e.Target.Kind + ":" + e.Target.ID, str(e.UserID), str(e.SvcID), str(e.RequestID)})
	}
	byKey := "api_key:" + keyID
	want := []brief{
		{"grant.created", byKey, "user:ada", "ada", ds, "<set>"},
		{"resource.deleted", byKey, "function:" + fn, "<null>", fn, requests[10]},
		{"grant.revoked", byKey, "user:ada", "ada", model, requests[9]},
		{"grant.created", byKey, "user:ada", "ada", model, requests[8]},
		{"user.updated", byKey, "user:ada", "ada", "<null>", requests[7]},
		{"user.created", byKey, "user:ada", "ada", "<null>", requests[6]},
		{"auth_integration.created", byKey, "auth_integration:" + integ, "<null>", "<null>", requests[5]},
		{"resource.created", byKey, "dataset:" + ds, "<null>", ds, requests[4]},
		{"resource.created", byKey, "function:" + fn, "<null>", fn, requests[3]},
		{"resource.created", byKey, "model:" + model, "<null>", model, requests[2]},
		{"api_key.revoked", "admin:<null>", "api_key:" + second.ID, "<null>", "<null>", requests[1]},
		{"api_key.created", "admin:<null>", "api_key:" + second.ID, "<null>", "<null>", requests[0]},
		{"api_key.created", "admin:<null>", "api_key:" + keyID, "<null>", "<null>", "<set>"},
		{"org.created", "admin:<null>", "org:" + orgID, "<null>", "<null>", "<set>"},
	}
	for i := range got {
		if i < len(want) && want[i].Request == "<set>" && got[i].Request != "<null>" {
			got[i].Request = "<set>"
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events, newest first (-want +got):\n%s", diff)
	}

	snapshots := []struct {
		index         int
		before, after string
	}{
		{4, `{"id":"ada","email":"ada@example.com","first":"Ada","last":"","active":true,"auth_integration_id":"` + integ + `","auth_integration_name":"hr","imported_at":"2026-11-22T09:30:00.006Z","modified_at":"2026-11-22T09:30:00.006Z"}`,
			`{"id":"ada","email":"ada@example.com","first":"Augusta","last":"","active":true,"auth_integration_id":"` + integ + `","auth_integration_name":"hr","imported_at":"2026-11-22T09:30:00.006Z","modified_at":"2026-11-22T09:30:00.007Z"}`},
		{1, `{"id":"` + fn + `","kind":"function","source":"custom","name":"search","description":"finds","created_at":"2026-11-22T09:30:00.003Z"}`, `null`},
		{2, `{"user_id":"ada","svc_id":"` + model + `"}`, `null`},
		{3, `null`, `{"user_id":"ada","svc_id":"` + model + `","created_at":"2026-11-22T09:30:00.008Z"}`},
		{11, `null`, `{"id":"` + second.ID + `","org_id":"` + orgID + `","prefix":"` + apikey.Display(second.APIKey) + `","created_at":"2026-11-22T09:30:00.001Z"}`},
	}
	for _, s := range snapshots {
		e := page.Events[s.index]
		jsonEqual(t, nonNull(e.Before), s.before)
		jsonEqual(t, nonNull(e.After), s.after)
	}

	t.Run("filters", func(t *testing.T) {
		tests := []struct {
			query string
			want  []string
		}{
			{"user_id=ada", []string{"grant.created", "grant.revoked", "grant.created", "user.updated", "user.created"}},
			{"svc_id=" + strings.ToUpper(model), []string{"grant.revoked", "grant.created", "resource.created"}},
			{"action=resource.created", []string{"resource.created", "resource.created", "resource.created"}},
			{"action=grant.created&svc_id=" + ds, []string{"grant.created"}},
			{"limit=2", []string{"grant.created", "resource.deleted"}},
			{"since=2026-11-22T09:30:00.009Z&until=2026-11-22T09:30:00.010Z", []string{"grant.revoked"}},
			{"action=user.deleted", nil},
		}
		for _, tc := range tests {
			page := decode[eventsPage](t, f.must("GET", "/audit/events?"+tc.query, key, nil))
			var actions []string
			for _, e := range page.Events {
				actions = append(actions, e.Action)
			}
			if diff := cmp.Diff(tc.want, actions); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.query, diff)
			}
		}
	})

	t.Run("pages", func(t *testing.T) {
		var ids []string
		path := "/audit/events?limit=4"
		for range 10 {
			page := decode[eventsPage](t, f.must("GET", path, key, nil))
			for _, e := range page.Events {
				ids = append(ids, e.ID)
			}
			if page.NextCursor == nil {
				break
			}
			path = "/audit/events?limit=4&cursor=" + url.QueryEscape(*page.NextCursor)
		}
		var want []string
		for _, e := range page.Events {
			want = append(want, e.ID)
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("events over pages of 4 (-want +got):\n%s", diff)
		}
	})
}

// nonNull turns an absent snapshot into the JSON null the API shows for it.
func nonNull(raw json.RawMessage) []byte {
	if raw == nil {
		return []byte("null")
	}
	return raw
}

// TestAuditIsolation: an organization sees only its own decisions and events, whatever it
// filters on, and a cursor of one organization or one list is refused by another.
func TestAuditIsolation(t *testing.T) {
	var dl *decisionlog.Log
	f := newFixture(t, withAudit, withDecisionLog(&dl, decisionlog.Config{}, nil))
	_, keyA := f.org("a")
	_, keyB := f.org("b")
	modelA := f.model(keyA, "gpt")
	userA := f.user(keyA, "ada@example.com")
	f.must("POST", "/provisions/add_to_user", keyA, map[string]string{"user_id": userA, "svc_id": modelA})
	for range 3 {
		f.check(keyA, userA, modelA)
	}
	f.check(keyB, userA, modelA) // B asking about A's ids: logged for B, about nothing of B's
	flush(t, dl)

	for _, q := range []string{"", "?user_id=" + userA, "?svc_id=" + modelA} {
		var actions []string
		for _, e := range decode[eventsPage](t, f.must("GET", "/audit/events"+q, keyB, nil)).Events {
			actions = append(actions, e.Action)
		}
		want := []string{"api_key.created", "org.created"} // B's own, by the admin
		if q != "" {
			want = nil
		}
		if diff := cmp.Diff(want, actions); diff != "" {
			t.Errorf("B: GET /audit/events%s (-want +got):\n%s", q, diff)
		}
		decisions := decode[decisionsPage](t, f.must("GET", "/audit/decisions"+q, keyB, nil)).Decisions
		if len(decisions) != 1 || decisions[0].APIKeyID != f.keyID(keyB) {
			t.Errorf("B: GET /audit/decisions%s = %+v, want only B's own check", q, decisions)
		}
	}
	if n := len(decode[decisionsPage](t, f.must("GET", "/audit/decisions", keyA, nil)).Decisions); n != 3 {
		t.Errorf("A sees %d decisions, want its own 3", n)
	}

	cursorA := decode[decisionsPage](t, f.must("GET", "/audit/decisions?limit=1", keyA, nil)).NextCursor
	eventCursorA := decode[eventsPage](t, f.must("GET", "/audit/events?limit=1", keyA, nil)).NextCursor
	if cursorA == nil || eventCursorA == nil {
		t.Fatal("A got no next cursor")
	}
	tests := []struct {
		name, path, key, cursor string
		want                    int
	}{
		{"A's decisions cursor, from A", "/audit/decisions", keyA, *cursorA, http.StatusOK},
		{"A's decisions cursor, from B", "/audit/decisions", keyB, *cursorA, http.StatusUnprocessableEntity},
		{"A's events cursor, from B", "/audit/events", keyB, *eventCursorA, http.StatusUnprocessableEntity},
		{"a decisions cursor for events", "/audit/events", keyA, *cursorA, http.StatusUnprocessableEntity},
	}
	for _, tc := range tests {
		if r := f.do("GET", tc.path+"?cursor="+url.QueryEscape(tc.cursor), tc.key, nil); r.Status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.want)
		}
	}
	for _, path := range []string{"/audit/events", "/audit/decisions"} {
		if r := f.do("GET", path, "", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("GET %s without a key = %d, want 401", path, r.Status)
		}
	}
}

func TestAuditQueryValidation(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name, path, want string
	}{
		{"limit zero", "/audit/decisions?limit=0",
			`[{"loc":["query","limit"],"msg":"Input should be greater than or equal to 1","type":"greater_than_equal"}]`},
		{"limit too large", "/audit/events?limit=1001",
			`[{"loc":["query","limit"],"msg":"Input should be less than or equal to 1000","type":"less_than_equal"}]`},
		{"limit not a number", "/audit/events?limit=ten",
			`[{"loc":["query","limit"],"msg":"Input should be a valid integer, unable to parse string as an integer","type":"int_parsing"}]`},
		{"result not a boolean", "/audit/decisions?result=maybe",
			`[{"loc":["query","result"],"msg":"Input should be a valid boolean, unable to interpret input","type":"bool_parsing"}]`},
		{"svc_id not a uuid", "/audit/events?svc_id=gpt",
			`[{"loc":["query","svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"}]`},
		{"empty user_id", "/audit/decisions?user_id=",
			`[{"loc":["query","user_id"],"msg":"String should have at least 1 character","type":"string_too_short"}]`},
		{"since not RFC 3339", "/audit/decisions?since=2026-11-22",
			`[{"loc":["query","since"],"msg":"Input should be a valid datetime in RFC 3339 format, such as 2026-11-22T09:30:00Z","type":"datetime_parsing"}]`},
		{"garbage cursor", "/audit/events?cursor=%21%21",
			`[{"loc":["query","cursor"],"msg":"Value error, the cursor is not one this list gave for these credentials","type":"value_error"}]`},
		{"every problem at once, in order", "/audit/decisions?limit=0&until=yesterday&result=2&svc_id=x&user_id=",
			`[{"loc":["query","user_id"],"msg":"String should have at least 1 character","type":"string_too_short"},
			  {"loc":["query","svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"},
			  {"loc":["query","result"],"msg":"Input should be a valid boolean, unable to interpret input","type":"bool_parsing"},
			  {"loc":["query","until"],"msg":"Input should be a valid datetime in RFC 3339 format, such as 2026-11-22T09:30:00Z","type":"datetime_parsing"},
			  {"loc":["query","limit"],"msg":"Input should be greater than or equal to 1","type":"greater_than_equal"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("GET", tc.path, key, nil)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("GET %s = %d %s, want 422", tc.path, r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":`+tc.want+`}`)
		})
	}
	for _, ok := range []string{"/audit/decisions?result=0&limit=1000&since=2026-11-22T09:30:00.5%2B02:00", "/audit/events?action=grant.created&limit=1&result=whatever"} {
		if r := f.do("GET", ok, key, nil); r.Status != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", ok, r.Status, r.Body)
		}
	}
	jsonEqual(t, f.must("GET", "/audit/events", key, nil).Body, `{"events":[],"next_cursor":null}`)
	jsonEqual(t, f.must("GET", "/audit/decisions", key, nil).Body, `{"decisions":[],"next_cursor":null}`)
}

// BenchmarkCheckDecisionLog is what logging costs a check: the same check with no decision log
// and with one writing to the embedded store, as `grantry serve` runs it.
func BenchmarkCheckDecisionLog(b *testing.B) {
	f, _, key, resources := benchFixture(b)
	body := map[string]any{"user_id": "holds-50", "svc_id": resources[0]}
	b.Run("off", func(b *testing.B) {
		f.srv = api.New(api.Config{Store: f.engine.Store(), Decider: f.engine})
		serveLoop(b, f, key, "/provisions/can_user_access", body, "true")
	})
	b.Run("on", func(b *testing.B) {
		dl := decisionlog.New(decisionlog.Config{}, api.DecisionSink(f.store))
		f.srv = api.New(api.Config{Store: f.engine.Store(), Decider: f.engine, Decisions: dl})
		serveLoop(b, f, key, "/provisions/can_user_access", body, "true")
		b.StopTimer()
		flush(b, dl)
		if dl.Dropped() > 0 {
			b.Logf("%d of %d decisions dropped", dl.Dropped(), dl.Written()+dl.Dropped())
		}
	})
}
