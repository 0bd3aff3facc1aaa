package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/storage"
)

// watchChanges follows the store's change feed until serve stops, telling the engine of every
// organization another process changed and of every moment the feed is known to be up to date.
func watchChanges(ctx context.Context, feed storage.ChangeFeed, eng *authz.Engine, log *slog.Logger, cs *closers) {
	cs.goUntilStop(ctx, "change feed", func(ctx context.Context) {
		if err := feed.WatchChanges(ctx, eng.Changed, eng.Synced); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("change feed stopped; what other processes write is read from the store", "error", err.Error())
		}
	})
}
