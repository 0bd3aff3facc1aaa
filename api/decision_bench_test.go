package api

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// BenchmarkDecision measures the in-process decision path without HTTP: the user's facts from
// the check path's cache and the decision from its memo when warm, or the facts from the store
// and one policy evaluation when cold (the user dropped from the cache before each one, as when
// first seen or evicted; the organization's resources stay cached).
func BenchmarkDecision(b *testing.B) {
	const org = "bench"
	ctx := context.Background()
	must := fatalOn(b)
	store, l, resources := benchOrg(b, org, 5000)
	for _, n := range []int{50, 5000} {
		addBenchUser(b, l, org, fmt.Sprint("holds-", n), resources[:n])
	}
	must(l.Flush(ctx))
	engine, err := policy.New(ctx, policy.Embedded())
	must(err)
	s := New(Config{Store: store, Decider: engine})

	decide := func(b *testing.B, user string, ids []string, all, cold bool) {
		b.Helper()
		b.ReportAllocs()
		for b.Loop() {
			if cold {
				s.cache.invalidateUser(org, user)
			}
			f, err := s.userFacts(ctx, org, user)
			if err != nil {
				b.Fatal(err)
			}
			allowed, _, err := s.answerNow(ctx, org, f, all, ids)
			if err != nil {
				b.Fatal(err)
			}
			if !allowed {
				b.Fatal("denied a granted resource")
			}
		}
	}
	for _, tc := range []struct {
		name string
		user string
		ids  []string
		all  bool
	}{
		{"warm/can_user_access/grants=50", "holds-50", resources[:1], false},
		{"warm/can_user_access/grants=5000", "holds-5000", resources[:1], false},
		{"warm/can_user_access_all/tags=50", "holds-50", resources[:50], true},
	} {
		b.Run(tc.name, func(b *testing.B) { decide(b, tc.user, tc.ids, tc.all, false) })
	}
	b.Run("warm/can_user_access_all/tags=100", func(b *testing.B) {
		tags := append(append([]string{}, resources[:50]...), resources[:50]...)
		decide(b, "holds-50", tags, true, false)
	})
	// miss: the user's facts are cached but the question was never asked, so the policy is
	// evaluated, as for most checks of a workload that rarely repeats a pair.
	b.Run("miss/can_user_access/grants=50", func(b *testing.B) {
		b.ReportAllocs()
		f, err := s.userFacts(ctx, org, "holds-50")
		if err != nil {
			b.Fatal(err)
		}
		d, _ := s.pinPolicy()
		i := 0
		for b.Loop() {
			ids := resources[i%50 : i%50+1]
			i++
			rs, err := s.resourceFacts(ctx, org, ids)
			if err != nil {
				b.Fatal(err)
			}
			if allowed, err := s.evaluate(ctx, d, false, policy.Input{User: f.Facts, ResourceIDs: ids, Resources: rs, Now: s.now()}); err != nil || !allowed {
				b.Fatal("denied a granted resource", err)
			}
		}
	})
	// set: as miss, but the user has been asked enough new questions to have their set
	// (permitted.go), which answers every question without evaluating the policy.
	b.Run("set/can_user_access/grants=50", func(b *testing.B) {
		b.ReportAllocs()
		f, err := s.userFacts(ctx, org, "holds-50")
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; f.permitted.Load() == nil; i++ {
			if _, _, err := s.answerNow(ctx, org, f, false, resources[i:i+1]); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		for b.Loop() {
			k := i % 100 // the first 50 are granted
			i++
			if allowed, _, err := s.answerNow(ctx, org, f, false, resources[k:k+1]); err != nil || allowed != (k < 50) {
				b.Fatal("wrong answer", err)
			}
		}
	})
	for _, n := range []int{50, 5000} {
		b.Run(fmt.Sprintf("cold/can_user_access/grants=%d", n), func(b *testing.B) {
			decide(b, fmt.Sprint("holds-", n), resources[:1], false, true)
		})
	}
}

// BenchmarkCachedUserMemory measures what the check path's cache holds for a user of make
// bench's workload: 50 grants of an organization's 1,000 resources, asked about until the
// user's set is built, as every user of make bench's later runs is. B/user is the live heap
// after a collection, less the heap before the users were loaded, per user.
func BenchmarkCachedUserMemory(b *testing.B) {
	const org, users, grants = "bench", 2000, 50
	ctx := context.Background()
	must := fatalOn(b)
	store, l, resources := benchOrg(b, org, 1000)
	held := func(u, j int) string { return resources[(u*7+j*13)%len(resources)] }
	for u := range users {
		ids := make([]string, grants)
		for j := range ids {
			ids[j] = held(u, j)
		}
		addBenchUser(b, l, org, fmt.Sprint("user-", u), ids)
	}
	must(l.Flush(ctx))
	engine, err := policy.New(ctx, policy.Embedded())
	must(err)
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var perUser float64
	for b.Loop() {
		s := New(Config{Store: store, Decider: engine, CacheEntries: 2 * users})
		if _, err := s.resourceFacts(ctx, org, resources); err != nil { // the organization's resources, cached by every server
			b.Fatal(err)
		}
		before := live()
		for u := range users {
			id := fmt.Sprint("user-", u)
			// The third load keeps the user (admit); each question after that is new.
			for j := 0; ; j++ {
				f, err := s.userFacts(ctx, org, id)
				if err != nil {
					b.Fatal(err)
				}
				if f.permitted.Load() != nil {
					break
				}
				if allowed, _, err := s.answerNow(ctx, org, f, false, []string{held(u, j%grants)}); err != nil || !allowed {
					b.Fatal("denied a granted resource", err)
				}
			}
		}
		perUser = float64(live()-before) / users
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perUser, "B/user")
}

// benchAt is when the benchmarks' records were made.
var benchAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchOrg opens an embedded store whose organization org has a directory to import users
// through and n resources (models), and returns a Loader for the caller to add users to
// (addBenchUser) and then flush.
func benchOrg(b *testing.B, org string, n int) (*bolt.Store, *bolt.Loader, []string) {
	b.Helper()
	ctx, must := context.Background(), fatalOn(b)
	store := bolttest.Open(b)
	l := store.NewLoader(0)
	must(l.AddIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "dir", Name: "dir", Type: "import", CreatedAt: benchAt}))
	resources := make([]string, n)
	for i := range resources {
		resources[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		must(l.AddResource(ctx, storage.Resource{OrgID: org, ID: resources[i], Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("model-", i), CreatedAt: benchAt}))
	}
	return store, l, resources
}

// addBenchUser adds to l an active user of benchOrg's directory holding the resources held.
func addBenchUser(b *testing.B, l *bolt.Loader, org, id string, held []string) {
	b.Helper()
	ctx, must := context.Background(), fatalOn(b)
	must(l.AddUser(ctx, storage.User{OrgID: org, ID: id, Email: id + "@x", Active: true, IntegrationID: "dir", IntegrationName: "dir", ImportedAt: benchAt, ModifiedAt: benchAt}))
	for _, r := range held {
		must(l.AddGrant(ctx, storage.Grant{OrgID: org, UserID: id, ResourceID: r, CreatedAt: benchAt}))
	}
}
