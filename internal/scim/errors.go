package scim

import "fmt"

// The scimType values of RFC 7644 §3.12 that this package reports. Every one of them is an
// HTTP 400 Bad Request.
const (
	InvalidFilter = "invalidFilter"
	InvalidSyntax = "invalidSyntax"
	InvalidPath   = "invalidPath"
	InvalidValue  = "invalidValue"
	NoTarget      = "noTarget"
	// TooMany is a filter that would take more work than the service provider does for one
	// request.
	TooMany = "tooMany"
)

// Error is a request that breaks the protocol: its Type is the scimType of the error response,
// and its Detail is a sentence fit to show the client (it quotes no attribute values, which
// may be personal data).
type Error struct {
	Type   string
	Detail string
}

func (e *Error) Error() string { return e.Type + ": " + e.Detail }

func errorf(typ, format string, args ...any) *Error {
	return &Error{Type: typ, Detail: fmt.Sprintf(format, args...)}
}
