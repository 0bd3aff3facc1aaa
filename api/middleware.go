package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/uid"
)

// requestID echoes the client's X-Request-ID when it is a sane one, and makes one otherwise.
// As the first middleware, it gives the request its requestContext.
func (s *Server) requestID(c *gin.Context) {
	// The header's canonical key, read from the map: c.GetHeader("X-Request-ID") would make
	// the canonical key anew, an allocation, on every request.
	var id string
	if v := c.Request.Header["X-Request-Id"]; len(v) > 0 {
		id = v[0]
	}
	if !validRequestID(id) {
		id = uid.NewCheap()
	}
	r := &requestContext{Context: c.Request.Context(), id: id, start: time.Now()}
	c.Request = c.Request.WithContext(r)
	// As c.Header("X-Request-ID", id), without the canonical key and the value slice it would
	// make each request: the value lives in r.
	r.idHeader[0] = id
	c.Writer.Header()["X-Request-Id"] = r.idHeader[:]
	c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

func requestID(c *gin.Context) string { return requestOf(c).id }

// orgID is the organization the request's API key (or SCIM token) belongs to.
func orgID(c *gin.Context) string { return requestOf(c).orgID }

// accessLog writes one line per request. It never logs headers or bodies, so no key, token or
// third-party secret can reach the log.
func (s *Server) accessLog(c *gin.Context) {
	start := requestOf(c).start
	c.Writer.Header()["Date"] = httpDate(start)
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	end := time.Now()
	took := end.Sub(start)
	s.metrics.observeRequest(c.Request.Method, route, c.Writer.Status(), took)
	ctx := c.Request.Context()
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The record goes to the handler as Logger.LogAttrs would hand it, but without the caller's
	// program counter, which Grantry's handlers never write and which would cost a stack walk
	// (runtime.Callers) for every request's line.
	r := slog.NewRecord(end, slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("request_id", requestID(c)),
		slog.String("method", c.Request.Method),
		slog.String("route", route),
		slog.Int("status", c.Writer.Status()),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		slog.String("org_id", orgID(c)),
	)
	_ = s.log.Handler().Handle(ctx, r)
}

// recoverPanic turns a panic in a handler into a 500 that shows nothing of it.
func (s *Server) recoverPanic(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			err := fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			if c.Writer.Written() {
				s.log.LogAttrs(c.Request.Context(), slog.LevelError, "request failed after answering",
					slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
				return
			}
			s.writeError(c, err) // a 500 that shows nothing of it, logged once with the stack
		}
	}()
	c.Next()
}

// limitBody refuses a body declared larger than 1 MiB (the gateway's: GatewayMaxBody) at once,
// and stops reading an undeclared one there, so that no request body is ever read whole if it
// is too large.
func (s *Server) limitBody(c *gin.Context) {
	limit := s.bodyLimit(c.Request.URL.Path)
	if c.Request.ContentLength > limit {
		s.writeError(c, tooLarge(limit))
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	c.Next()
}

// dateHeader is the Date header's value for the responses begun in one second.
type dateHeader struct {
	unix  int64
	value []string
}

var lastDate atomic.Pointer[dateHeader]

// httpDate returns the Date header's value for a response begun at t, formatted once a second
// and shared by that second's responses (net/http copies a header's values as it writes them,
// and nothing changes one), rather than formatted by net/http for each response, a cost that
// every response would pay.
func httpDate(t time.Time) []string {
	sec := t.Unix()
	if d := lastDate.Load(); d != nil && d.unix == sec {
		return d.value
	}
	d := &dateHeader{unix: sec, value: []string{t.UTC().Format(http.TimeFormat)}}
	lastDate.Store(d)
	return d.value
}
