package mongo

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestChangeFeedAcrossStores runs two stores on one database, as two Grantry processes would
// share a deployment: every organization one of them touches is reported to a watcher on the
// other within a second. FerretDB offers no change streams, so this exercises the polling
// that standalone MongoDB deployments rely on too.
func TestChangeFeedAcrossStores(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, _ := openStore(t, ferretURI, db)
	watcher, _ := openStore(t, ferretURI, db)
	if err := writer.Touch(t.Context(), "org-before"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	reports := make(chan string, 100)
	syncs := make(chan struct{}, 1000)
	var lost atomic.Int64 // polls that found the store too slow; a loaded machine may cause a few
	done := make(chan error, 1)
	go func() {
		done <- watcher.WatchChanges(ctx, func(org string) { reports <- org }, func(fresh bool) {
			if !fresh {
				lost.Add(1)
				return
			}
			select {
			case syncs <- struct{}{}:
			default:
			}
		})
	}()
	time.Sleep(3 * pollInterval) // the watcher's first read is its baseline
	select {
	case <-syncs:
	case <-time.After(time.Second):
		t.Fatal("the watcher never said it was in sync")
	}

	// expect waits for a report of org, within the second the contract allows.
	expect := func(org string) {
		t.Helper()
		deadline := time.After(time.Second)
		for {
			select {
			case got := <-reports:
				if got == org {
					return
				}
			case <-deadline:
				t.Fatalf("no report of %s within a second", org)
			}
		}
	}
	for _, tc := range []struct {
		store *Store
		org   string
	}{{writer, "org-1"}, {writer, "org-2"}, {writer, "org-1"}, {watcher, "org-3"}, {writer, "org-before"}} {
		if err := tc.store.Touch(t.Context(), tc.org); err != nil {
			t.Fatal(err)
		}
		expect(tc.org)
	}
	select {
	case got := <-reports:
		t.Errorf("reported %s, which nobody touched since", got)
	case <-time.After(3 * pollInterval):
	}

	// A store that answers keeps the watcher in sync: losing it on a slow poll (the race
	// detector on a busy machine) is tolerated, but it must come back.
	if lost.Load() > 0 {
		t.Logf("%d slow polls reported the watcher out of sync", lost.Load())
		for len(syncs) > 0 {
			<-syncs
		}
		select {
		case <-syncs:
		case <-time.After(time.Second):
			t.Error("the watcher lost sync with a store that answers and did not regain it")
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("WatchChanges ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WatchChanges did not end with its context")
	}
}
