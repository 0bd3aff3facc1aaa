package storage

import "context"

// Actor names who caused a change, for the audit trail. It travels in the request context from
// the authentication middleware down to the store, so that the audit decorator can record it
// without every Store method growing a parameter.
type Actor struct {
	// Kind is one of the Actor* constants.
	Kind string
	// ID identifies the actor within its kind: the API key id, the SCIM token id; empty for
	// the admin and the system.
	ID string
}

// The kinds of actors.
const (
	// ActorAPIKey is an organization's API key; ID is the key id (never the key).
	ActorAPIKey = "api_key"
	// ActorAdmin is the holder of the admin token; ID is empty.
	ActorAdmin = "admin"
	// ActorSCIMToken is an identity provider pushing users over SCIM; ID is the token id.
	ActorSCIMToken = "scim_token"
	// ActorSystem is Grantry itself (bootstrap at start-up, retention): the actor of any
	// change made without an authenticated caller.
	ActorSystem = "system"
)

type actorKey struct{}

// ActorKey and RequestIDKey are the context keys under which WithActor and WithRequestID put
// their values: an Actor and a string. A context type of its own may answer them from its Value
// method instead, as the API's request context does, sparing a request the two contexts (and
// the boxed Actor) that WithActor and WithRequestID make.
var (
	ActorKey     any = actorKey{}
	RequestIDKey any = requestIDKey{}
)

// WithActor returns a context that carries a as the actor of the changes made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, ActorKey, a)
}

// ActorFrom returns the actor carried by ctx, or the system actor when there is none, so that
// an audit event always names someone.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(ActorKey).(Actor); ok && a.Kind != "" {
		return a
	}
	return Actor{Kind: ActorSystem}
}

type requestIDKey struct{}

// WithRequestID returns a context that carries the id of the request whose changes are made
// with it, so that an audit event can be matched with the request's log lines.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, RequestIDKey, id)
}

// RequestIDFrom returns the request id carried by ctx, or "" when there is none.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(RequestIDKey).(string)
	return id
}
