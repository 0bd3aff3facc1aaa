package decisionlog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestRetain: the first delete comes at once, later ones every interval, each for the entries
// older than keep; a failure does not stop it, and it stops with ctx.
func TestRetain(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	var cutoffs []time.Time
	calls := make(chan struct{}, 10)
	deleteBefore := func(ctx context.Context, before time.Time) (int, error) {
		mu.Lock()
		cutoffs = append(cutoffs, before)
		n := len(cutoffs)
		mu.Unlock()
		select {
		case calls <- struct{}{}:
		default: // the test has seen enough
		}
		if n == 2 {
			return 0, errors.New("store down")
		}
		return 3, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Retain(ctx, 30*24*time.Hour, time.Millisecond, func() time.Time { return now }, deleteBefore, nil)
		close(done)
	}()
	for range 3 {
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatal("Retain did not delete")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Retain did not stop with its context")
	}
	mu.Lock()
	defer mu.Unlock()
	want := now.Add(-30 * 24 * time.Hour)
	for i, c := range cutoffs {
		if !c.Equal(want) {
			t.Errorf("delete %d: before %s, want %s", i, c, want)
		}
	}
}
