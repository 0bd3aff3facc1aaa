package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// TestGrantCleanup: the clean-up removes a grant once it has expired, by the clock it is
// given, keeps the others, and stops with its context.
func TestGrantCleanup(t *testing.T) {
	ctx := t.Context()
	store, err := bolt.Open(ctx, filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	start := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.CreateOrg(ctx, storage.Org{ID: "org", Name: "acme", CreatedAt: start}))
	must(store.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org", ID: "hr", Name: "hr", Type: storage.IntegrationImport, CreatedAt: start}))
	_, err = store.ImportUsers(ctx, "org", "hr", []storage.UserImport{{ID: "ada", Email: "ada@example.com"}}, start)
	must(err)
	for _, id := range []string{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"} {
		must(store.CreateResource(ctx, storage.Resource{OrgID: "org", ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: id, CreatedAt: start}))
	}
	must(store.Grant(ctx, storage.Grant{OrgID: "org", UserID: "ada", ResourceID: "00000000-0000-4000-8000-000000000001", CreatedAt: start, ExpiresAt: start.Add(time.Hour)}))
	must(store.Grant(ctx, storage.Grant{OrgID: "org", UserID: "ada", ResourceID: "00000000-0000-4000-8000-000000000002", CreatedAt: start}))

	var log bytes.Buffer
	clock := make(chan time.Time, 1)
	clock <- start.Add(time.Hour)
	var now time.Time
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cleanExpiredGrants(loopCtx, store, time.Millisecond, func() time.Time {
			select {
			case now = <-clock:
			default:
			}
			return now
		}, slog.New(slog.NewTextHandler(&log, nil)))
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		grants, err := store.UserGrants(ctx, "org", "ada")
		must(err)
		if len(grants) == 1 {
			if grants[0].ResourceID != "00000000-0000-4000-8000-000000000002" {
				t.Fatalf("the clean-up kept %+v, want the grant that never expires", grants)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired grant is still there after 10 s: %+v", grants)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the clean-up did not stop with its context")
	}
	if !bytes.Contains(log.Bytes(), []byte("expired grants removed")) {
		t.Errorf("log = %s, want the removal said", log.String())
	}
}
