package bolt

import (
	"context"

	"github.com/grantry/grantry/storage"
)

// Touch does nothing: only this process can have the data file open, and it knows what it
// changed.
func (s *Store) Touch(context.Context, storage.Change) error { return nil }

// WatchChanges waits for ctx to end: no other process can change the data file, so there is
// never anything to report, nor to confirm.
func (s *Store) WatchChanges(ctx context.Context, _ func(storage.Change), _ func(bool)) error {
	<-ctx.Done()
	return ctx.Err()
}
