package api

import (
	"context"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// deadline puts the request timeout on the request's context, so that every store call and
// policy evaluation made for the request gives up by then: a store that does not answer makes
// a 503 within the timeout rather than a request that hangs. It covers the whole handling,
// reading the body included.
func (s *Server) deadline(c *gin.Context) {
	if s.requestTimeout <= 0 {
		c.Next()
		return
	}
	ctx := &deadlineContext{Context: c.Request.Context(), deadline: time.Now().Add(s.requestTimeout)}
	defer ctx.cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// deadlineContext is context.WithDeadline without its cost where nothing waits on it. The
// standard one starts a timer and registers with its parent as it is made, about 3% of a
// check's CPU under make bench's load; most checks are answered from memory, and what they
// call reads Err at most (the embedded store, at the start of each call), which this one
// answers from the clock. The timer is made when something first asks for Done (the MongoDB
// driver, a policy evaluation), from the same deadline. After cancel, Err is
// context.Canceled and Done is closed, as with the standard one.
type deadlineContext struct {
	context.Context // the parent
	deadline        time.Time

	mu       sync.Mutex
	timed    context.Context // made by Done
	stop     context.CancelFunc
	canceled bool
}

func (d *deadlineContext) Deadline() (time.Time, bool) { return d.deadline, true }

func (d *deadlineContext) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timed == nil {
		d.timed, d.stop = context.WithDeadline(d.Context, d.deadline)
		if d.canceled {
			d.stop()
		}
	}
	return d.timed.Done()
}

func (d *deadlineContext) Err() error {
	d.mu.Lock()
	canceled := d.canceled
	d.mu.Unlock()
	switch {
	case canceled:
		return context.Canceled
	case d.Context.Err() != nil:
		return d.Context.Err()
	case !time.Now().Before(d.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

// cancel ends the context when the request is done.
func (d *deadlineContext) cancel() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.canceled = true
	if d.stop != nil {
		d.stop()
	}
}
