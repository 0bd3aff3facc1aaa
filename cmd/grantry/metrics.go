package main

import (
	"errors"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// journaled is the embedded store's grant journal, as /metrics shows it.
type journaled interface {
	JournalPending() int
	JournalApplyFailures() uint64
}

// exposeMetrics puts the counters that the decision log, the live policy and the store's grant
// journal (the embedded store's) keep on /metrics; those packages count, and only api knows
// Prometheus.
func exposeMetrics(srv *api.Server, decisions *decisionlog.Log, live *policy.Live, store storage.Store) error {
	u := func(f func() uint64) func() float64 { return func() float64 { return float64(f()) } }
	var errs []error
	if j, ok := store.(journaled); ok {
		errs = append(errs,
			srv.GaugeFunc("grantry_journal_pending", "Grants and revokes journaled and not yet applied to the data file.", func() float64 { return float64(j.JournalPending()) }),
			srv.CounterFunc("grantry_journal_apply_failures_total", "Applies of the grant journal to the data file that failed.", u(j.JournalApplyFailures)))
	}
	if decisions != nil { // the log is on
		errs = append(errs,
			srv.CounterFunc("grantry_decision_log_dropped_total", "Decisions dropped unlogged because the decision log's queue was full.", u(decisions.Dropped)),
			srv.CounterFunc("grantry_decision_log_written_total", "Decisions written to the decision log.", u(decisions.Written)),
			srv.CounterFunc("grantry_decision_log_failed_total", "Decisions the decision log could not write to the store.", u(decisions.Failed)),
			srv.GaugeFunc("grantry_decision_log_waiting", "Decisions waiting in the decision log's queue.", func() float64 { return float64(decisions.Waiting()) }))
	}
	b := buildOf()
	return errors.Join(append(errs,
		srv.InfoGauge("grantry_build_info", "The version, VCS revision and Go version Grantry was built from; always 1.",
			map[string]string{"version": b.version, "revision": b.revision, "goversion": b.goVersion}),
		srv.CounterFunc("grantry_policy_reloads_total", "Policies loaded in place of the running one.", u(live.Reloads)),
		srv.CounterFunc("grantry_policy_reload_failures_total", "Policy reloads refused because the policy did not compile or failed its tests.", u(live.ReloadFailures)))...)
}
