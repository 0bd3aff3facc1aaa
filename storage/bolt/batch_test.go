package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

const testResource = "00000000-0000-4000-8000-000000000001"

// withUsers opens a store holding org-1 with users u-0 … u-(n-1) and the resource testResource.
func withUsers(tb testing.TB, n int) *bolt.Store {
	tb.Helper()
	ctx := tb.Context()
	s := bolttest.Open(tb)
	if err := s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "directory", Type: "import"}); err != nil {
		tb.Fatal(err)
	}
	items := make([]storage.UserImport, n)
	for i := range items {
		items[i] = storage.UserImport{ID: fmt.Sprintf("u-%d", i), Email: fmt.Sprintf("u-%d@example.com", i)}
	}
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", items, time.Now().UTC().Truncate(time.Millisecond)); err != nil {
		tb.Fatal(err)
	}
	r := storage.Resource{OrgID: "org-1", ID: testResource, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "model"}
	if err := s.CreateResource(ctx, r); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestBatchFailureFailsOnlyItsCall checks that concurrent writers sharing transactions get each
// their own outcome: grants to unknown users fail with ErrNotFound, and the others are stored.
func TestBatchFailureFailsOnlyItsCall(t *testing.T) {
	const users = 64
	ctx := t.Context()
	s := withUsers(t, users)
	errs := make([]error, 2*users)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			// Odd writers name users that do not exist.
			user := fmt.Sprintf("u-%d", i/2)
			if i%2 == 1 {
				user = fmt.Sprintf("ghost-%d", i/2)
			}
			errs[i] = storage.AddGrant(ctx, s, storage.Grant{OrgID: "org-1", UserID: user, ResourceID: testResource, CreatedAt: time.Now()})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 1 && !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("grant %d to an unknown user: error = %v, want ErrNotFound", i, err)
		}
		if i%2 == 0 && err != nil {
			t.Errorf("grant %d: %v", i, err)
		}
	}
	got, err := s.ResourceGrants(ctx, "org-1", testResource)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != users {
		t.Errorf("%d grants stored, want %d", len(got), users)
	}
}

// TestRecordedChangeCommitsWithItsEvents checks that SetGrantRecorded and RevokeRecorded write
// the change and its events together, or neither.
func TestRecordedChangeCommitsWithItsEvents(t *testing.T) {
	at := time.Now().UTC().Truncate(time.Millisecond)
	var ids storage.EntryIDs
	event := func(action string, valid bool) []storage.Event {
		e := storage.Event{ID: ids.New(at), OrgID: "org-1", Time: at, Actor: storage.Actor{Kind: storage.ActorSystem},
			Action: action, TargetKind: "user", TargetID: "u-0", UserID: "u-0", SvcID: testResource}
		if !valid {
			e.ID = "not-an-entry-id"
		}
		return []storage.Event{e}
	}
	grant := storage.Grant{OrgID: "org-1", UserID: "u-0", ResourceID: testResource, CreatedAt: at}
	tests := []struct {
		name        string
		granted     bool // before the change
		change      func(ctx context.Context, s *bolt.Store, valid bool) error
		wantGranted bool // after the change succeeded
	}{
		{"grant", false, func(ctx context.Context, s *bolt.Store, valid bool) error {
			_, err := s.SetGrantRecorded(ctx, grant, func(prev *storage.Grant) []storage.Event {
				return event("grant.created", valid)
			})
			return err
		}, true},
		{"revoke", true, func(ctx context.Context, s *bolt.Store, valid bool) error {
			_, err := s.RevokeRecorded(ctx, "org-1", "u-0", testResource, func(removed bool) []storage.Event {
				return event("grant.revoked", valid)
			})
			return err
		}, false},
	}
	for _, tt := range tests {
		for _, valid := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/valid event %t", tt.name, valid), func(t *testing.T) {
				ctx := t.Context()
				s := withUsers(t, 1)
				if tt.granted {
					if err := storage.AddGrant(ctx, s, grant); err != nil {
						t.Fatal(err)
					}
				}
				err := tt.change(ctx, s, valid)
				wantGranted, wantEvents := tt.wantGranted, 1
				if !valid {
					if !errors.Is(err, storage.ErrInvalidID) {
						t.Errorf("change with an invalid event: error = %v, want ErrInvalidID", err)
					}
					wantGranted, wantEvents = tt.granted, 0
				} else if err != nil {
					t.Fatalf("change: %v", err)
				}
				grants, err := s.UserGrants(ctx, "org-1", "u-0")
				if err != nil {
					t.Fatal(err)
				}
				if granted := len(grants) == 1; granted != wantGranted {
					t.Errorf("granted after the change = %t, want %t", granted, wantGranted)
				}
				events, err := s.ListEvents(ctx, "org-1", storage.EventFilter{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(events) != wantEvents {
					t.Errorf("%d events stored, want %d", len(events), wantEvents)
				}
			})
		}
	}
}
