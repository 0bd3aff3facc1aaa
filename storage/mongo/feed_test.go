package mongo

import (
	"context"
	"testing"
	"time"
)

// waitLong bounds each wait of the feed test for something that happens within a poll or two:
// long enough for a machine that is busy with other work, and only reached if it never happens.
const waitLong = 30 * time.Second

// TestChangeFeedAcrossStores runs two stores on one database, as two Grantry processes would
// share a deployment: every organization one of them touches is reported to a watcher on the
// other, and nothing else is. FerretDB offers no change streams, so this exercises the polling
// that standalone MongoDB deployments rely on too. How soon a change shows follows from
// pollInterval; a test on a shared machine can only check that it shows.
func TestChangeFeedAcrossStores(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, _ := openStore(t, ferretURI, db)
	watcher, _ := openStore(t, ferretURI, db)
	// A read that the race detector on a busy machine makes slow is not a lost one here: every
	// read of a store that answers must succeed.
	watcher.pollTimeout = waitLong
	if err := writer.Touch(t.Context(), "org-before"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	reports := make(chan string, 100)
	syncs := make(chan bool, 1000)
	done := make(chan error, 1)
	go func() {
		done <- watcher.WatchChanges(ctx, func(org string) { reports <- org }, func(fresh bool) { syncs <- fresh })
	}()
	// synced waits for the watcher's next look at the store, which must find it answering:
	// whatever changed before that look has been reported once it returns.
	synced := func() {
		t.Helper()
		select {
		case fresh := <-syncs:
			if !fresh {
				t.Fatal("the watcher lost sync with a store that answers")
			}
		case <-time.After(waitLong):
			t.Fatal("the watcher never said it was in sync")
		}
	}
	synced() // the first read is the watcher's baseline: org-before is not a change

	for _, tc := range []struct {
		store *Store
		org   string
	}{{writer, "org-1"}, {writer, "org-2"}, {writer, "org-1"}, {watcher, "org-3"}, {writer, "org-before"}} {
		if err := tc.store.Touch(t.Context(), tc.org); err != nil {
			t.Fatal(err)
		}
		// Two looks: the one under way may have read before the touch.
		for range len(syncs) {
			synced()
		}
		synced()
		synced()
		select {
		case got := <-reports:
			if got != tc.org {
				t.Fatalf("reported %s, want %s", got, tc.org)
			}
		default:
			t.Fatalf("no report of %s after two looks at the store", tc.org)
		}
		if len(reports) > 0 {
			t.Fatalf("reported %s as well as %s, which alone was touched", <-reports, tc.org)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("WatchChanges ended with %v, want context.Canceled", err)
		}
	case <-time.After(waitLong):
		t.Fatal("WatchChanges did not end with its context")
	}
}
