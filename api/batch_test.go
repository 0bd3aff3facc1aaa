package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// batchItem is one check of a batch request, and batchAnswer one result.
type batchItem struct {
	UserID        string  `json:"user_id"`
	SvcID         string  `json:"svc_id"`
	CorrelationID *string `json:"correlation_id,omitempty"`
}

type batchAnswer struct {
	CorrelationID *string `json:"correlation_id"`
	UserID        string  `json:"user_id"`
	SvcID         string  `json:"svc_id"`
	Allowed       bool    `json:"allowed"`
}

// accessWorld seeds an organization straight into the embedded store with what a check can
// meet: active and deactivated users, grants that never expire, that expire later and that
// have expired (but are not yet cleaned up), groups with members and grants of the same three
// kinds, and a resource removed after it was granted. It returns the ids checks may use,
// unknown ones included.
func accessWorld(tb testing.TB, f *fixture, org string, rng *rand.Rand) (users, resources []string) {
	tb.Helper()
	store, ok := f.store.(*bolt.Store)
	if !ok {
		tb.Fatalf("fixture store is a %T, want the embedded store", f.store)
	}
	ctx, now := tb.Context(), f.clock.Now()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	expiry := func() time.Time { // a third never, a third later, a third past
		switch rng.IntN(3) {
		case 0:
			return time.Time{}
		case 1:
			return now.Add(time.Duration(1+rng.IntN(1000)) * time.Minute)
		}
		return now.Add(-time.Duration(rng.IntN(1000)) * time.Minute)
	}
	l := store.NewLoader(0)
	integ := storage.AuthIntegration{OrgID: org, ID: "world", Name: "world", Type: storage.IntegrationImport, CreatedAt: now}
	must(l.AddIntegration(ctx, integ))
	for i := range 60 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		resources = append(resources, id)
		must(l.AddResource(ctx, storage.Resource{OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom,
			Name: fmt.Sprintf("model-%d", i), CreatedAt: now}))
	}
	for i := range 150 {
		id := fmt.Sprintf("user-%03d", i)
		users = append(users, id)
		must(l.AddUser(ctx, storage.User{OrgID: org, ID: id, Email: id + "@example.com", Active: i%10 != 0,
			IntegrationID: integ.ID, IntegrationName: integ.Name, ImportedAt: now, ModifiedAt: now}))
		for _, n := range rng.Perm(len(resources))[:rng.IntN(8)] {
			must(l.AddGrant(ctx, storage.Grant{OrgID: org, UserID: id, ResourceID: resources[n], CreatedAt: now, ExpiresAt: expiry()}))
		}
	}
	must(l.Flush(ctx))
	for g := range 12 {
		group := storage.Group{OrgID: org, ID: fmt.Sprintf("group-%02d", g), DisplayName: fmt.Sprintf("Group %d", g), CreatedAt: now, ModifiedAt: now}
		for _, n := range rng.Perm(len(users))[:rng.IntN(25)] {
			group.Members = append(group.Members, users[n])
		}
		must(f.store.CreateGroup(ctx, group))
		for _, n := range rng.Perm(len(resources))[:rng.IntN(5)] {
			_, err := f.store.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: group.ID, ResourceID: resources[n], CreatedAt: now, ExpiresAt: expiry()})
			must(err)
		}
	}
	// A resource removed after it was granted directly and to groups.
	must(f.store.DeleteResource(ctx, org, resources[0]))
	return append(users, "nobody"), append(resources, "00000000-0000-4000-8000-999999999999")
}

// TestBatchEqualsSingleChecks: on a randomized workload of 10,000 checks, every result of
// check_batch is what can_user_access answers for the same item alone.
func TestBatchEqualsSingleChecks(t *testing.T) {
	f := newFixture(t)
	org, key := f.org("acme")
	rng := rand.New(rand.NewPCG(7, 11))
	users, resources := accessWorld(t, f, org, rng)

	const checks, perBatch = 10_000, 1000
	items := make([]batchItem, checks)
	for i := range items {
		id := fmt.Sprintf("c-%d", i)
		items[i] = batchItem{UserID: users[rng.IntN(len(users))], SvcID: resources[rng.IntN(len(resources))], CorrelationID: &id}
		if i%7 == 0 {
			items[i].SvcID = strings.ToUpper(items[i].SvcID) // answered as the same resource, echoed as sent
		}
	}
	var got []batchAnswer
	for start := 0; start < checks; start += perBatch {
		r := decode[struct{ Results []batchAnswer }](t, f.must("POST", "/provisions/check_batch", key, map[string]any{"checks": items[start : start+perBatch]}))
		got = append(got, r.Results...)
	}
	if len(got) != checks {
		t.Fatalf("%d results for %d checks", len(got), checks)
	}
	allowed := 0
	for i, it := range items {
		want := batchAnswer{CorrelationID: it.CorrelationID, UserID: it.UserID, SvcID: it.SvcID, Allowed: f.check(key, it.UserID, it.SvcID)}
		if show(got[i]) != show(want) {
			t.Fatalf("result %d = %s, want %s (the single check's answer, in request order)", i, show(got[i]), show(want))
		}
		if want.Allowed {
			allowed++
		}
	}
	// The workload must exercise both answers, or the comparison proves little.
	if allowed < checks/20 || allowed > checks*19/20 {
		t.Errorf("%d of %d checks allowed: the workload does not mix answers", allowed, checks)
	}
}

// decisionRecorder keeps every decision the server logs.
type decisionRecorder struct {
	mu      sync.Mutex
	entries []decisionlog.Entry
}

func (r *decisionRecorder) Record(e decisionlog.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

func TestBatch(t *testing.T) {
	rec := &decisionRecorder{}
	f := newFixture(t, func(c *fixtureConfig) { c.Decisions = rec })
	_, key := f.org("acme")
	model, other := f.model(key, "gpt"), f.model(key, "llama")
	ada := f.user(key, "ada@acme.test")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": model})

	r := f.must("POST", "/provisions/check_batch", key, map[string]any{"checks": []map[string]any{
		{"user_id": ada, "svc_id": model, "correlation_id": "first"},
		{"user_id": ada, "svc_id": other},
		{"user_id": "nobody", "svc_id": model, "correlation_id": ""},
		{"user_id": ada, "svc_id": strings.ToUpper(model), "correlation_id": "again"},
	}})
	jsonEqual(t, r.Body, `{"results":[
		{"correlation_id":"first","user_id":"`+ada+`","svc_id":"`+model+`","allowed":true},
		{"correlation_id":null,"user_id":"`+ada+`","svc_id":"`+other+`","allowed":false},
		{"correlation_id":"","user_id":"nobody","svc_id":"`+model+`","allowed":false},
		{"correlation_id":"again","user_id":"`+ada+`","svc_id":"`+strings.ToUpper(model)+`","allowed":true}]}`)

	// Each item is a decision of its own in the decision log.
	var logged []string
	for _, e := range rec.entries {
		if e.Endpoint == "check_batch" {
			logged = append(logged, fmt.Sprintf("%s %v %v", e.UserID, e.ResourceIDs, e.Allowed))
		}
	}
	want := []string{ada + " [" + model + "] true", ada + " [" + other + "] false", "nobody [" + model + "] false", ada + " [" + model + "] true"}
	if show(logged) != show(want) {
		t.Errorf("decisions logged = %v, want %v", logged, want)
	}

	item := map[string]any{"user_id": ada, "svc_id": model}
	tests := []struct {
		name string
		body any
		want string
	}{
		{"no checks", map[string]any{}, `[{"loc":["body","checks"],"msg":"Field required","type":"missing"}]`},
		{"empty checks", map[string]any{"checks": []any{}}, `[{"loc":["body","checks"],"msg":"List should have at least 1 item after validation, not 0","type":"too_short"}]`},
		{"too many checks", map[string]any{"checks": repeatAny(item, 1001)}, `[{"loc":["body","checks"],"msg":"List should have at most 1000 items after validation, not 1001","type":"too_long"}]`},
		// As pydantic answers: the list is too long, and its items are not looked at.
		{"a megabyte of wrong checks", `{"checks":[` + strings.TrimSuffix(strings.Repeat(`{"user_id":1,"svc_id":2},`, 40_000), ",") + `]}`,
			`[{"loc":["body","checks"],"msg":"List should have at most 1000 items after validation, not 40000","type":"too_long"}]`},
		{"every bad item named", map[string]any{"checks": []any{item, map[string]any{"user_id": "", "svc_id": "x"}, 7,
			map[string]any{"user_id": ada, "svc_id": model, "correlation_id": strings.Repeat("c", 257)}}},
			`[{"loc":["body","checks",1,"user_id"],"msg":"String should have at least 1 character","type":"string_too_short"},
			  {"loc":["body","checks",1,"svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"},
			  {"loc":["body","checks",2],"msg":"Input should be a valid dictionary or object to extract fields from","type":"model_attributes_type"},
			  {"loc":["body","checks",3,"correlation_id"],"msg":"String should have at most 256 characters","type":"string_too_long"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", "/provisions/check_batch", key, tc.body)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":`+tc.want+`}`)
		})
	}
	// A batch of the most items allowed is answered.
	if got := decode[struct{ Results []batchAnswer }](t, f.must("POST", "/provisions/check_batch", key, map[string]any{"checks": repeatAny(item, 1000)})); len(got.Results) != 1000 {
		t.Errorf("a batch of 1000 got %d results", len(got.Results))
	}
}

func repeatAny(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// BenchmarkCheckBatch compares 1,000 checks asked in one check_batch with the same 1,000 asked
// one can_user_access at a time, on the benchmark organization (users holding 50 and 100 of
// 5,000 resources). Both report the time of all 1,000 checks per op.
func BenchmarkCheckBatch(b *testing.B) {
	f, _, key, resources := benchFixture(b)
	items := make([]batchItem, 1000)
	for i := range items {
		items[i] = batchItem{UserID: []string{"holds-50", "holds-100"}[i%2], SvcID: resources[(i*7)%200]}
	}
	body := map[string]any{"checks": items}
	want := string(f.must("POST", "/provisions/check_batch", key, body).Body)
	b.Run("check_batch/items=1000", func(b *testing.B) { serveLoop(b, f, key, "/provisions/check_batch", body, want) })
	b.Run("can_user_access/calls=1000", func(b *testing.B) {
		reqs := make([][]byte, len(items))
		answers := make([]string, len(items))
		for i, it := range items {
			reqs[i], _ = json.Marshal(it)
			answers[i] = fmt.Sprint(f.check(key, it.UserID, it.SvcID))
		}
		b.ReportAllocs()
		for b.Loop() {
			for i, raw := range reqs {
				req := httptest.NewRequest("POST", "/provisions/can_user_access", io.NopCloser(bytes.NewReader(raw)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				f.srv.ServeHTTP(rec, req)
				if rec.Code != 200 || rec.Body.String() != answers[i] {
					b.Fatalf("check %d = %d %s, want %s", i, rec.Code, rec.Body, answers[i])
				}
			}
		}
	})
}
