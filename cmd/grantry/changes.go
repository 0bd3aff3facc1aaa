package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/storage"
)

// watchChanges follows the store's change feed until serve stops, telling srv of every
// organization another process changed and of every moment the feed is known to be up to date,
// and returns the closer that stops it.
func watchChanges(ctx context.Context, feed storage.ChangeFeed, srv *api.Server, log *slog.Logger) func(context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := feed.WatchChanges(ctx, srv.InvalidateOrg, srv.Synced); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("change feed stopped; caches of other processes' writes may be stale", "error", err.Error())
		}
	}()
	return func(wait context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-wait.Done():
			return wait.Err()
		}
	}
}

// cacheEntries turns GRANTRY_CACHE_ENTRIES, where 0 means no cache, into api.Config's, where 0
// means the default.
func cacheEntries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
