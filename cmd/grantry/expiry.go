package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/grantry/grantry/storage"
)

// grantCleanupInterval is how often expired grants are removed, besides once at start. An
// expired grant never allows, whether removed or not; removing it keeps lists and the store
// small. The store finds what expired through an index, so a turn costs little.
const grantCleanupInterval = time.Minute

// startGrantCleanup removes expired grants and group grants from store until serve stops; cs
// stops it, and waits for a turn under way, before the store closes.
func startGrantCleanup(ctx context.Context, store storage.AccessStore, log *slog.Logger, cs *closers) {
	cs.goUntilStop(ctx, "grant clean-up", func(ctx context.Context) {
		cleanExpiredGrants(ctx, store, grantCleanupInterval, time.Now, log)
	})
}

// cleanExpiredGrants deletes the grants expired by now() at once and then every interval,
// until ctx ends. A failed turn is logged and tried again at the next: an expired grant does
// not allow in the meantime.
func cleanExpiredGrants(ctx context.Context, store storage.AccessStore, interval time.Duration, now func() time.Time, log *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		gone, err := store.DeleteExpiredGrants(ctx, now().UTC())
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("grant clean-up failed; trying again later", "error", err.Error())
		case len(gone.Users)+len(gone.Groups) > 0:
			log.Info("expired grants removed", "grants", len(gone.Users), "group_grants", len(gone.Groups))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
