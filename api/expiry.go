package api

import (
	"errors"
	"time"
)

// Pydantic's messages for a datetime that does not parse, and for a FutureDatetime that is not
// in the future.
const (
	msgDatetime = "Input should be a valid datetime in RFC 3339 format, such as 2026-11-22T09:30:00Z"
	msgFuture   = "Input should be in the future"
)

// parseTime reads an RFC 3339 time, such as 2026-11-22T09:30:00Z or 2026-11-22T10:30:00+01:00.
func parseTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// expiresAt finishes the binding of a request with an optional expires_at field (validated
// "omitnil,rfc3339", and declared last, so that its problem comes last as pydantic reports
// it): bindErr is what bindJSON said. A time that is not after now is one more problem of
// the request, of type datetime_future. It returns the expiry as the store keeps it, to the
// millisecond, rounded up so that an expiry just after now is still after now once stored; or
// the zero time when there is none.
func (s *Server) expiresAt(bindErr error, raw *string) (time.Time, error) {
	ve, invalid := errors.AsType[*ValidationError](bindErr)
	if bindErr != nil && !invalid {
		return time.Time{}, bindErr
	}
	if raw == nil {
		return time.Time{}, bindErr
	}
	t, err := parseTime(*raw)
	if err != nil {
		return time.Time{}, bindErr // reported by the rfc3339 validation
	}
	if !t.After(s.now()) {
		if ve == nil {
			ve = &ValidationError{}
		}
		ve.Problems = append(ve.Problems, Problem{Loc: []any{"body", "expires_at"}, Msg: msgFuture, Type: "datetime_future"})
		return time.Time{}, ve
	}
	if bindErr != nil {
		return time.Time{}, bindErr
	}
	return ceilMilli(t), nil
}

// expiryJSON is an expiry as the API shows it: a timestamp, or null for never.
func expiryJSON(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	ts := timestamp(t)
	return &ts
}
