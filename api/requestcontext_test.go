package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// TestRequestContextActsAsWithDeadline holds requestContext with a deadline to what
// context.WithDeadline does, with Done asked for before and after the event or never. Each case
// runs on synctest's clock, so that "after the deadline" and "still open a while later" do not
// depend on how soon a busy machine runs the context's timer.
func TestRequestContextActsAsWithDeadline(t *testing.T) {
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
				synctest.Test(t, func(t *testing.T) {
					parent, parentCancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
					defer parentCancel()
					deadline := time.Now().Add(tc.timeout)
					ctx := &requestContext{Context: parent, deadline: deadline}
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
			})
		}
	}
}

// TestRequestContextWithoutDeadlineIsItsParent: without a deadline, the context ends when, and
// as, its parent does.
func TestRequestContextWithoutDeadlineIsItsParent(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	parent, cancel := context.WithDeadline(context.Background(), deadline)
	ctx := &requestContext{Context: parent}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
		t.Errorf("Deadline() = %v, %v; want the parent's %v, true", d, ok, deadline)
	}
	if err := ctx.Err(); err != nil {
		t.Errorf("Err() = %v while the parent runs", err)
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("Done is still open after the parent's cancel")
	}
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want %v", err, context.Canceled)
	}
}

// TestRequestContextCarriesTheCaller: once the caller is set, the store reads it and the
// request's id from the context, which keeps its parent's values, and the request's
// requestContext is found under contexts made from it.
func TestRequestContextCarriesTheCaller(t *testing.T) {
	type key struct{}
	rc := &requestContext{Context: context.WithValue(context.Background(), key{}, "v"), id: "req-1"}
	if a := storage.ActorFrom(rc); a.Kind != storage.ActorSystem {
		t.Errorf("before setCaller, the actor is %+v, want the system", a)
	}
	if id := storage.RequestIDFrom(rc); id != "" {
		t.Errorf("before setCaller, the request id is %q, want none", id)
	}
	caller := storage.Actor{Kind: storage.ActorAPIKey, ID: "key-1"}
	rc.setCaller(caller)
	var ctx context.Context = rc
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a := storage.ActorFrom(ctx); a != caller {
		t.Errorf("actor = %+v, want %+v", a, caller)
	}
	if id := storage.RequestIDFrom(ctx); id != "req-1" {
		t.Errorf("request id = %q, want req-1", id)
	}
	if ctx.Value(key{}) != "v" {
		t.Error("the parent's values are lost")
	}
	c := &gin.Context{Request: httptest.NewRequest("GET", "/", nil).WithContext(ctx)}
	if requestOf(c) != rc {
		t.Error("requestOf does not find the request's context under a context made from it")
	}
}
