package storage

import "context"

// Loader writes records in bulk, far faster than one store call each, for seeding a new
// store. Records are written as the store's own methods would write them; Flush writes what
// is buffered. It does no checks the store's methods do (uniqueness aside, where the store
// enforces it by itself: MongoDB's unique indexes refuse a taken id or name, while the
// embedded store writes over it): a caller loads a consistent set into an empty organization.
type Loader interface {
	AddIntegration(ctx context.Context, a AuthIntegration) error
	AddResource(ctx context.Context, r Resource) error
	AddUser(ctx context.Context, u User) error
	AddGrant(ctx context.Context, g Grant) error
	Flush(ctx context.Context) error
}
