package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/storage"
)

// retentionInterval is how often decisions older than GRANTRY_DECISION_LOG_DAYS are deleted,
// besides once at start.
const retentionInterval = time.Hour

// startDecisionLog starts the decision log, writing to store, unless it is off (nil then), and
// its retention, which deletes what an earlier run logged even when it is. cs stops both when
// serve stops, flushing the log before the store closes.
func startDecisionLog(ctx context.Context, store storage.DecisionStore, on bool, days int, log *slog.Logger, cs *closers) *decisionlog.Log {
	var dl *decisionlog.Log
	if on {
		dl = decisionlog.New(decisionlog.Config{Logger: log}, api.DecisionSink(store))
		cs.add("decision log", dl.Close)
	}
	keep := time.Duration(days) * 24 * time.Hour
	cs.goUntilStop(ctx, "decision log retention", func(ctx context.Context) {
		decisionlog.Retain(ctx, keep, retentionInterval, nil, store.DeleteDecisionsBefore, log)
	})
	return dl
}

// recorder is what the server records decisions with: dl, or none when the log is off (a nil
// interface, where a nil *decisionlog.Log would not be).
func recorder(dl *decisionlog.Log) api.DecisionRecorder {
	if dl == nil {
		return nil
	}
	return dl
}
