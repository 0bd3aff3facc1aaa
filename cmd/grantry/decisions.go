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

// startDecisionLog starts the decision log, writing to store, and its retention. cs stops both
// when serve stops, flushing the log before the store closes.
func startDecisionLog(ctx context.Context, store storage.DecisionStore, days int, log *slog.Logger, cs *closers) *decisionlog.Log {
	dl := decisionlog.New(decisionlog.Config{Logger: log}, api.DecisionSink(store))
	cs.add("decision log", dl.Close)
	keep := time.Duration(days) * 24 * time.Hour
	cs.goUntilStop(ctx, "decision log retention", func(ctx context.Context) {
		decisionlog.Retain(ctx, keep, retentionInterval, nil, store.DeleteDecisionsBefore, log)
	})
	return dl
}
