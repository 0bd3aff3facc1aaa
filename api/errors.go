package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// Error is an error with the status and the one sentence the client is shown. Err, if set,
// is the cause, logged but never shown.
type Error struct {
	Status int
	Detail string
	Err    error
	// RetryAfter, if positive, is sent as the Retry-After header, in seconds.
	RetryAfter int
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Detail + ": " + e.Err.Error()
	}
	return e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Errors every handler may return.
var (
	errNotAuthenticated     = &Error{Status: http.StatusUnauthorized, Detail: "Not authenticated"}
	errNotFound             = &Error{Status: http.StatusNotFound, Detail: "Not Found"}
	errMethodNotAllowed     = &Error{Status: http.StatusMethodNotAllowed, Detail: "Method Not Allowed"}
	errTooLarge             = &Error{Status: http.StatusRequestEntityTooLarge, Detail: "Request body is larger than 1 MiB."}
	errUnsupportedMediaType = &Error{Status: http.StatusUnsupportedMediaType, Detail: "Request body must be JSON (Content-Type: application/json)."}
	errUserNotFound         = &Error{Status: http.StatusNotFound, Detail: "User not found."}
	errResourceNotFound     = &Error{Status: http.StatusNotFound, Detail: "Resource not found."}
)

// notFound returns a 404 with detail if err is storage.ErrNotFound, and err otherwise.
func notFound(err error, detail string) error {
	if errors.Is(err, storage.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Detail: detail, Err: err}
	}
	return err
}

// conflict returns a 409 with detail if err is storage.ErrConflict, and err otherwise.
func conflict(err error, detail string) error {
	if errors.Is(err, storage.ErrConflict) {
		return &Error{Status: http.StatusConflict, Detail: detail, Err: err}
	}
	return err
}

// retryAfterSeconds is what a 503 asks clients to wait before trying again.
const retryAfterSeconds = "1"

// writeError is the one place where errors become HTTP responses: 422 with the FastAPI detail
// array for validation errors, {"detail": "<sentence>"} for everything else. Errors of the
// server's own making are logged here, once, with the request id; a 500 shows nothing of them.
// Under /scim/v2/ the same status and sentence take SCIM's error shape instead.
func (s *Server) writeError(c *gin.Context, err error) {
	status, body := s.errorResponse(err)
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", retryAfterSeconds)
		if isStoreError(err) {
			s.metrics.storeError(err)
		}
	}
	if e, ok := errors.AsType[*Error](err); ok && e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", "Bearer")
	}
	if status == http.StatusRequestTimeout {
		// The rest of the body may still come; the connection cannot serve another request.
		c.Header("Connection", "close")
	}
	if status >= 500 {
		s.log.LogAttrs(c.Request.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(c)), slog.Int("status", status), slog.String("error", err.Error()))
	}
	if isSCIM(c) {
		s.writeSCIMError(c, status, body["detail"], err)
		return
	}
	c.AbortWithStatusJSON(status, body)
}

func (s *Server) errorResponse(err error) (int, gin.H) {
	if ve, ok := errors.AsType[*ValidationError](err); ok {
		return http.StatusUnprocessableEntity, gin.H{"detail": ve.Problems}
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Status, gin.H{"detail": e.Detail}
	}
	switch {
	// A grant or revoke names what it lacked, so that its handler need not read it first.
	case errors.Is(err, storage.ErrUserNotFound):
		return http.StatusNotFound, gin.H{"detail": errUserNotFound.Detail}
	case errors.Is(err, storage.ErrResourceNotFound):
		return http.StatusNotFound, gin.H{"detail": errResourceNotFound.Detail}
	case errors.Is(err, storage.ErrGroupNotFound):
		return http.StatusNotFound, gin.H{"detail": errGroupNotFound.Detail}
	case errors.Is(err, storage.ErrNotFound):
		return http.StatusNotFound, gin.H{"detail": errNotFound.Detail}
	case errors.Is(err, storage.ErrConflict):
		return http.StatusConflict, gin.H{"detail": "It already exists."}
	case isStoreError(err):
		return http.StatusServiceUnavailable, gin.H{"detail": "The store is unavailable; try again shortly."}
	}
	return http.StatusInternalServerError, gin.H{"detail": "Internal Server Error"}
}
