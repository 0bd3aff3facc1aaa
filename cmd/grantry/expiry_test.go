package main

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// TestGrantCleanup: the clean-up keeps a grant until it has expired, by the clock it is given,
// then removes it and keeps the others, and stops with its context.
func TestGrantCleanup(t *testing.T) {
	ctx := t.Context()
	store := bolttest.Open(t)
	start := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.CreateOrg(ctx, storage.Org{ID: "org", Name: "acme", CreatedAt: start}))
	must(store.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org", ID: "hr", Name: "hr", Type: storage.IntegrationImport, CreatedAt: start}))
	_, err := store.ImportUsers(ctx, "org", "hr", []storage.UserImport{{ID: "ada", Email: "ada@example.com"}}, start)
	must(err)
	for _, id := range []string{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"} {
		must(store.CreateResource(ctx, storage.Resource{OrgID: "org", ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: id, CreatedAt: start}))
	}
	must(storage.AddGrant(ctx, store, storage.Grant{OrgID: "org", UserID: "ada", ResourceID: "00000000-0000-4000-8000-000000000001", CreatedAt: start, ExpiresAt: start.Add(time.Hour)}))
	must(storage.AddGrant(ctx, store, storage.Grant{OrgID: "org", UserID: "ada", ResourceID: "00000000-0000-4000-8000-000000000002", CreatedAt: start}))

	// The loop's clock reads now, counting its reads, so that the test knows a turn happened.
	var now atomic.Int64
	var turns atomic.Int64
	now.Store(start.Add(59 * time.Minute).UnixNano())
	var log syncBuffer
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cleanExpiredGrants(loopCtx, store, time.Millisecond, func() time.Time {
			turns.Add(1)
			return time.Unix(0, now.Load())
		}, slog.New(slog.NewTextHandler(&log, nil)))
	}()
	grantCount := func() int {
		grants, err := store.UserGrants(ctx, "org", "ada")
		must(err)
		return len(grants)
	}
	// A minute before the expiry, turns go by and both grants stay.
	waitUntil(t, 10*time.Second, "three turns of the clean-up", func() bool { return turns.Load() >= 3 })
	if n := grantCount(); n != 2 {
		t.Fatalf("before the expiry the clean-up left %d grants, want both", n)
	}
	// At the expiry, the expiring grant goes and the other stays.
	now.Store(start.Add(time.Hour).UnixNano())
	waitUntil(t, 10*time.Second, "the expired grant removed", func() bool { return grantCount() == 1 })
	grants, err := store.UserGrants(ctx, "org", "ada")
	must(err)
	if grants[0].ResourceID != "00000000-0000-4000-8000-000000000002" {
		t.Fatalf("the clean-up kept %+v, want the grant that never expires", grants)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the clean-up did not stop with its context")
	}
	if !strings.Contains(log.String(), "expired grants removed") {
		t.Errorf("log = %s, want the removal said", log.String())
	}
}
