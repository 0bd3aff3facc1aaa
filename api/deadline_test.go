package api

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlineContextActsAsWithDeadline holds deadlineContext to what context.WithDeadline
// does, with Done asked for before and after the event or never.
func TestDeadlineContextActsAsWithDeadline(t *testing.T) {
	type key struct{}
	const soon = 30 * time.Millisecond
	tests := []struct {
		name    string
		timeout time.Duration
		event   func(parentCancel, cancel func()) // what happens to the contexts
		wantErr error
	}{
		{"running", time.Minute, func(func(), func()) {}, nil},
		{"past its deadline", soon, func(func(), func()) { time.Sleep(2 * soon) }, context.DeadlineExceeded},
		{"parent canceled", time.Minute, func(parentCancel, _ func()) { parentCancel() }, context.Canceled},
		{"canceled", time.Minute, func(_, cancel func()) { cancel() }, context.Canceled},
	}
	for _, tc := range tests {
		for _, doneFirst := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				parent, parentCancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
				defer parentCancel()
				deadline := time.Now().Add(tc.timeout)
				ctx := &deadlineContext{Context: parent, deadline: deadline}
				defer ctx.cancel()
				afterFunc := make(chan struct{})
				if doneFirst {
					_ = ctx.Done()
					context.AfterFunc(ctx, func() { close(afterFunc) })
				}
				tc.event(parentCancel, ctx.cancel)

				if err := ctx.Err(); !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
					t.Errorf("Err() = %v, want %v", err, tc.wantErr)
				}
				if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
					t.Errorf("Deadline() = %v, %v; want %v, true", d, ok, deadline)
				}
				if ctx.Value(key{}) != "v" {
					t.Error("the parent's values are lost")
				}
				select {
				case <-ctx.Done():
					if tc.wantErr == nil {
						t.Error("Done is closed while the context runs")
					}
				case <-time.After(soon):
					if tc.wantErr != nil {
						t.Errorf("Done is still open after %v", tc.wantErr)
					}
				}
				if doneFirst && tc.wantErr != nil {
					select {
					case <-afterFunc:
					case <-time.After(time.Second):
						t.Error("context.AfterFunc did not run")
					}
				}
			})
		}
	}
}
