package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/storage"
)

// watchChanges follows the store's change feed until serve stops, telling srv of every
// organization another process changed and of every moment the feed is known to be up to date.
func watchChanges(ctx context.Context, feed storage.ChangeFeed, srv *api.Server, log *slog.Logger, cs *closers) {
	cs.goUntilStop(ctx, "change feed", func(ctx context.Context) {
		if err := feed.WatchChanges(ctx, srv.InvalidateOrg, srv.Synced); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("change feed stopped; caches of other processes' writes may be stale", "error", err.Error())
		}
	})
}
