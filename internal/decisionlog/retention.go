package decisionlog

import (
	"context"
	"log/slog"
	"time"
)

// DeleteBefore removes the entries older than a time and says how many it removed.
type DeleteBefore func(ctx context.Context, t time.Time) (int, error)

// Retain enforces a retention period until ctx ends: at once, and then every interval, it
// deletes the entries older than keep through deleteBefore. A failed delete is logged and
// tried again at the next turn; nothing is lost by a late one but disk. now is the clock (nil
// means time.Now); log may be nil.
func Retain(ctx context.Context, keep, interval time.Duration, now func() time.Time, deleteBefore DeleteBefore, log *slog.Logger) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		cutoff := now().Add(-keep)
		n, err := deleteBefore(ctx, cutoff)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("decision log: retention delete failed; trying again later", "before", cutoff.UTC().Format(time.RFC3339), "error", err.Error())
		case n > 0:
			log.Info("decision log: old decisions deleted", "before", cutoff.UTC().Format(time.RFC3339), "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
