package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// requestContext is a request's context, made by the first middleware (requestID). It holds
// what the middleware learns of the request as it goes, for handlers to read: its id, and once
// its credentials are known, its organization, its API key's id and scope or its SCIM
// integration, and its caller for the store's audit trail; and the request's deadline.
//
// It stands in for values in gin's Keys (a map and a boxed value each) and for a
// context.WithDeadline and a context.WithValue, each followed by a copy of the http.Request,
// which together would make garbage on every check. Its fields above mu are written only by
// the middleware, before the handler runs, on the goroutine that serves the request, so they
// need no lock: whatever reads them later, on that goroutine or one it starts, sees them.
type requestContext struct {
	context.Context // the request's own (net/http's)

	id, orgID, keyID, keyScope, scimIntegration string

	caller    storage.Actor // who makes the request's changes, for the store (setCaller)
	hasCaller bool          // setCaller has been called
	deadline  time.Time     // zero: none
	start     time.Time     // when the request reached the first middleware (time.Now)

	idHeader [1]string // the X-Request-Id header's value, id

	mu       sync.Mutex
	timed    context.Context // made by Done
	stop     context.CancelFunc
	canceled bool
}

// requestContextKey finds a request's requestContext among its context's values.
type requestContextKey struct{}

// requestOf returns the request's requestContext. A request that did not go through the
// middleware gets an empty one of its own, whose fields read as empty.
func requestOf(c *gin.Context) *requestContext {
	ctx := c.Request.Context()
	if rc, ok := ctx.(*requestContext); ok {
		return rc
	}
	if rc, ok := ctx.Value(requestContextKey{}).(*requestContext); ok {
		return rc
	}
	return &requestContext{Context: ctx}
}

// Value answers the store's keys itself (storage.ActorKey and RequestIDKey) once the caller is
// known: as storage.WithActor and WithRequestID would, without the two contexts they make.
func (r *requestContext) Value(key any) any {
	switch {
	case key == (requestContextKey{}):
		return r
	case r.hasCaller && key == storage.ActorKey:
		return r.caller
	case r.hasCaller && key == storage.RequestIDKey:
		return r.id
	}
	return r.Context.Value(key)
}

// setCaller makes the caller, and the request's id, known to the store through the context.
func (r *requestContext) setCaller(a storage.Actor) {
	r.caller, r.hasCaller = a, true
}

// The deadline is context.WithDeadline's without its cost where nothing waits on it. The
// standard one starts a timer and registers with its parent as it is made, a cost every check
// would pay; most checks are answered from memory, and what they call reads Err at most (the
// embedded store, at the start of each call), which this one answers from the clock. The timer
// is made when something first asks for Done (the MongoDB driver, a policy evaluation), from
// the same deadline. After cancel, Err is context.Canceled and Done is closed, as with the
// standard one. Without a deadline (the deadline middleware, the one caller of cancel, is
// off), the context is done when its parent is.

func (r *requestContext) Deadline() (time.Time, bool) {
	if r.deadline.IsZero() {
		return r.Context.Deadline()
	}
	return r.deadline, true
}

func (r *requestContext) Done() <-chan struct{} {
	if r.deadline.IsZero() {
		return r.Context.Done()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timed == nil {
		r.timed, r.stop = context.WithDeadline(r.Context, r.deadline)
		if r.canceled {
			r.stop()
		}
	}
	return r.timed.Done()
}

func (r *requestContext) Err() error {
	r.mu.Lock()
	canceled := r.canceled
	r.mu.Unlock()
	switch {
	case canceled:
		return context.Canceled
	case r.Context.Err() != nil:
		return r.Context.Err()
	case !r.deadline.IsZero() && !time.Now().Before(r.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

// cancel ends the context, given a deadline, when the request is done.
func (r *requestContext) cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canceled = true
	if r.stop != nil {
		r.stop()
	}
}

// deadline puts the request timeout on the request's context, so that every store call and
// policy evaluation made for the request gives up by then: a store that does not answer makes
// a 503 within the timeout rather than a request that hangs. It covers the whole handling,
// reading the body included: the connection's reads of a body end at the deadline too (or at
// the server's ReadTimeout, if that comes first), so that a client that stalls its body gets
// a 408 then (bodyReadError), not a handler blocked until the server gives up.
func (s *Server) deadline(c *gin.Context) {
	if s.requestTimeout <= 0 {
		c.Next()
		return
	}
	r := requestOf(c)
	r.deadline = r.start.Add(s.requestTimeout)
	if c.Request.ContentLength != 0 && c.Request.Body != http.NoBody && c.Request.Body != nil {
		limitBodyReads(c, r.deadline)
	}
	defer r.cancel()
	c.Next()
}

// limitBodyReads ends the reads of the request's body at deadline, unless the server that
// serves it ends them sooner. A ResponseWriter that cannot (a test's recorder) is left as it is.
func limitBodyReads(c *gin.Context, deadline time.Time) {
	if hs, ok := c.Request.Context().Value(http.ServerContextKey).(*http.Server); ok && hs.ReadTimeout > 0 {
		if deadline.After(time.Now().Add(hs.ReadTimeout)) {
			return
		}
	}
	_ = http.NewResponseController(c.Writer).SetReadDeadline(deadline)
}
