package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grantry/grantry/internal/config"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// benchUser is a user of the benchmark organization and how many resources it holds.
type benchUser struct {
	id     string
	grants int
}

var benchUsers = []benchUser{{"holds-50", 50}, {"holds-100", 100}, {"holds-5000", 5000}}

// benchFixture is a server whose organization has 5,000 resources and the users of benchUsers,
// each holding the first n resources. The data goes straight into the embedded store through its
// Loader: granting 5,000 resources through the API would take a commit each.
func benchFixture(b *testing.B, opts ...fixtureOption) (f *fixture, org, key string, resources []string) {
	b.Helper()
	f = newFixture(b, opts...)
	org, key = f.org("bench")
	store, ok := f.store.(*bolt.Store)
	if !ok {
		b.Fatalf("fixture store is a %T, want the embedded store", f.store)
	}
	ctx, at := b.Context(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := store.NewLoader(0)
	integration := storage.AuthIntegration{OrgID: org, ID: "bench-directory", Name: "bench-directory", Type: "import", CreatedAt: at}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(l.AddIntegration(ctx, integration))
	for i := range 5000 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		resources = append(resources, id)
		must(l.AddResource(ctx, storage.Resource{
			OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprintf("model-%d", i), CreatedAt: at,
		}))
	}
	for _, u := range benchUsers {
		must(l.AddUser(ctx, storage.User{
			OrgID: org, ID: u.id, Email: u.id + "@example.com", Active: true,
			IntegrationID: integration.ID, IntegrationName: integration.Name, ImportedAt: at, ModifiedAt: at,
		}))
		for _, r := range resources[:u.grants] {
			must(l.AddGrant(ctx, storage.Grant{OrgID: org, UserID: u.id, ResourceID: r, CreatedAt: at}))
		}
	}
	must(l.Flush(ctx))
	return f, org, key, resources
}

// serveLoop sends the same request through Server.ServeHTTP on every iteration, each into a new
// httptest recorder, and fails unless the answer is want: a benchmark of a wrong answer would
// measure nothing worth knowing.
func serveLoop(b *testing.B, f *fixture, key, path string, body any, want string) {
	b.Helper()
	s := newSender(b, f, key, path, body, want)
	b.ReportAllocs()
	for b.Loop() {
		s.send(b, 1)
	}
}

// BenchmarkCheck measures the in-process decision path of the access checks: Gin, binding, the
// store reads that build the policy input, and OPA, through Server.ServeHTTP on the embedded
// store. Its cases compare a user holding 5,000 grants against one holding 50, and
// can_user_access_all over 100 tags against a single check of the same user.
func BenchmarkCheck(b *testing.B) {
	f, _, key, resources := benchFixture(b)
	tags := func(n int) []string { return resources[:n] }
	tests := []struct {
		name string
		path string
		body any
	}{
		{"can_user_access/grants=50", "/provisions/can_user_access", map[string]any{"user_id": "holds-50", "svc_id": resources[0]}},
		{"can_user_access/grants=100", "/provisions/can_user_access", map[string]any{"user_id": "holds-100", "svc_id": resources[0]}},
		{"can_user_access/grants=5000", "/provisions/can_user_access", map[string]any{"user_id": "holds-5000", "svc_id": resources[0]}},
		{"can_user_access_all/grants=100/tags=1", "/provisions/can_user_access_all", map[string]any{"user_id": "holds-100", "tags": tags(1)}},
		{"can_user_access_all/grants=100/tags=100", "/provisions/can_user_access_all", map[string]any{"user_id": "holds-100", "tags": tags(100)}},
	}
	for _, tc := range tests {
		b.Run(tc.name, func(b *testing.B) { serveLoop(b, f, key, tc.path, tc.body, "true") })
	}
}

// BenchmarkCheckRatio measures two ratios of the in-process check path as ratios:
// each case and its baseline run in alternating blocks of 64 requests through one server, and
// the case's time is reported as a multiple of the baseline's (x-baseline), beside both
// times (ns/op, B/op and allocs/op are of one block of each, 128 requests). BenchmarkCheck's
// separate cases run seconds apart, and on a shared machine their quotient moves widely
// between runs of the same code.
func BenchmarkCheckRatio(b *testing.B) {
	f, _, key, resources := benchFixture(b)
	single := func(user string) checkRequest {
		return checkRequest{"/provisions/can_user_access", map[string]any{"user_id": user, "svc_id": resources[0]}}
	}
	tests := []struct {
		name           string
		subject, based checkRequest
	}{
		// A user holding 5,000 grants against one holding 50.
		{"grants=5000/vs=grants=50", single("holds-5000"), single("holds-50")},
		// can_user_access_all over 100 tags against a single check of the same user.
		{"tags=100/vs=can_user_access", checkRequest{"/provisions/can_user_access_all",
			map[string]any{"user_id": "holds-100", "tags": resources[:100]}}, single("holds-100")},
	}
	for _, tc := range tests {
		b.Run(tc.name, func(b *testing.B) {
			subject := newSender(b, f, key, tc.subject.path, tc.subject.body, "true")
			based := newSender(b, f, key, tc.based.path, tc.based.body, "true")
			const block = 64
			var inSubject, inBase time.Duration
			var blocks int
			for b.Loop() {
				start := time.Now()
				subject.send(b, block)
				mid := time.Now()
				based.send(b, block)
				inSubject += mid.Sub(start)
				inBase += time.Since(mid)
				blocks++
			}
			n := float64(blocks * block)
			b.ReportMetric(float64(inSubject.Nanoseconds())/n, "case-ns/op")
			b.ReportMetric(float64(inBase.Nanoseconds())/n, "baseline-ns/op")
			b.ReportMetric(float64(inSubject)/float64(inBase), "x-baseline")
		})
	}
}

// checkRequest is a request of an access check whose answer is true.
type checkRequest struct {
	path string
	body any
}

// sender sends one request through Server.ServeHTTP, each time into a new httptest recorder.
type sender struct {
	f          *fixture
	path, want string
	raw        []byte
	rd         *bytes.Reader
	req        *http.Request
}

func newSender(b *testing.B, f *fixture, key, path string, body any, want string) *sender {
	b.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	rd := bytes.NewReader(raw)
	req := httptest.NewRequest("POST", path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return &sender{f: f, path: path, want: want, raw: raw, rd: rd, req: req}
}

// send sends the request n times and fails unless each answer is 200 with the body want.
func (s *sender) send(b *testing.B, n int) {
	for range n {
		s.rd.Reset(s.raw)
		// The server may wrap the body it was given (to limit its size), so it gets it afresh.
		s.req.Body = io.NopCloser(s.rd)
		rec := httptest.NewRecorder()
		s.f.srv.ServeHTTP(rec, s.req)
		if rec.Code != 200 || rec.Body.String() != s.want {
			b.Fatalf("POST %s = %d %s, want 200 %s", s.path, rec.Code, rec.Body, s.want)
		}
	}
}

// BenchmarkCheckNewUser measures a check of a user the server's LRU does not hold, as nearly
// every check of a million-user organization is: 2,000 users of 20 grants each, asked about in
// turn by a server that keeps 16 of them (and every resource), with the binary's request
// deadline, so that each check reads the user (a first load: only the grant asked about) from
// the store, or from the resident index, and asks the policy once.
func BenchmarkCheckNewUser(b *testing.B) {
	for _, held := range []string{"store", "read-in"} {
		for _, via := range []string{"own", "group"} {
			b.Run(held+"/"+via, func(b *testing.B) { benchCheckNewUser(b, held == "read-in", via == "group") })
		}
	}
}

// benchCheckNewUser is BenchmarkCheckNewUser's case: users read from the store (the engine
// holding 16), or held since a read-in; each asked about a grant of their own, or of the group
// of 100 they are in (20 groups of 20 grants).
func benchCheckNewUser(b *testing.B, readIn, viaGroup bool) {
	const users, grants, groups = 2000, 20, 20
	opts := []fixtureOption{withRequestTimeout(config.DefaultRequestTimeout)}
	if !readIn {
		opts = append(opts, withMaxUsers(16))
	}
	f, org, key, resources := benchFixture(b, opts...)
	store := f.store.(*bolt.Store)
	ctx, at := b.Context(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	l := store.NewLoader(0)
	bodies := make([][]byte, users)
	members := make([][]string, groups)
	groupGrant := func(g, j int) string { return resources[(g*37+j*131+11)%len(resources)] }
	for i := range users {
		id := fmt.Sprintf("new-%d", i)
		u := storage.User{OrgID: org, ID: id, Email: id + "@example.com", Active: true,
			IntegrationID: "bench-directory", IntegrationName: "bench-directory", ImportedAt: at, ModifiedAt: at}
		must(l.AddUser(ctx, u))
		for j := range grants {
			must(l.AddGrant(ctx, storage.Grant{OrgID: u.OrgID, UserID: id, ResourceID: resources[(i*7+j*131)%len(resources)], CreatedAt: at}))
		}
		asked := resources[(i*7+grants/2*131)%len(resources)]
		if viaGroup {
			members[i%groups] = append(members[i%groups], id)
			asked = groupGrant(i%groups, i%grants)
		}
		bodies[i] = fmt.Appendf(nil, `{"user_id":%q,"svc_id":%q}`, id, asked)
	}
	must(l.Flush(ctx))
	if viaGroup {
		for g := range groups {
			id := fmt.Sprintf("group-%d", g)
			must(store.CreateGroup(ctx, storage.Group{OrgID: org, ID: id, DisplayName: id, Members: members[g], CreatedAt: at, ModifiedAt: at}))
			for j := range grants {
				_, err := store.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: id, ResourceID: groupGrant(g, j), CreatedAt: at})
				must(err)
			}
		}
	}
	if readIn {
		read, err := f.engine.ReadIn(ctx)
		must(err)
		if read.Users < users || (viaGroup && read.Groups != groups) {
			b.Fatalf("read in %+v, want every user and group", read)
		}
	}
	rd := bytes.NewReader(nil)
	req := httptest.NewRequest("POST", "/provisions/can_user_access", rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rd.Reset(bodies[i%users])
		i++
		req.Body, req.ContentLength = io.NopCloser(rd), int64(rd.Len())
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.String() != "true" {
			b.Fatalf("check %d = %d %s, want 200 true", i, rec.Code, rec.Body)
		}
	}
}
