package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/storage"
)

// metrics are what GET /metrics serves. Each Server has a registry of its own rather than the
// Prometheus default one, so that tests may build many servers in one process.
//
// Other parts of Grantry add their own numbers without touching this file: a counter or gauge
// that some component already keeps (decision-log drops, cache hits, policy reloads) is exposed
// with Server.CounterFunc or Server.GaugeFunc at wiring time, and any other collector with
// Server.RegisterMetrics.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.HistogramVec
	storeErrs *prometheus.CounterVec
	http      http.Handler

	// The series every request adds to, found once rather than by WithLabelValues each time
	// (hashing the label values, a map lookup under the vector's lock, and formatting the
	// status), which every check would pay.
	seriesMu sync.RWMutex
	series   map[requestSeries]prometheus.Observer
}

// requestSeries names one series of grantry_http_request_duration_seconds.
type requestSeries struct {
	method, route string
	status        int
}

// requestBuckets reach down to half a millisecond: a cached access check answers well under a
// millisecond, and Prometheus' default buckets would put every such request in the first one.
var requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grantry_http_request_duration_seconds",
			Help:    "Time from the first middleware to the response, by method, route pattern (\"unmatched\" for unknown paths) and status.",
			Buckets: requestBuckets,
		}, []string{"method", "route", "status"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grantry_store_errors_total",
			Help: "Requests answered 503 because the store was unavailable (reason=unavailable) or did not answer within the request deadline (reason=timeout).",
		}, []string{"reason"}),
	}
	m.series = make(map[requestSeries]prometheus.Observer)
	for _, r := range []string{"unavailable", "timeout"} {
		m.storeErrs.WithLabelValues(r)
	}
	m.reg.MustRegister(
		m.requests, m.storeErrs,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.http = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return m
}

// observeRequest records one finished request. route is a route pattern, never a raw path:
// paths hold ids, and one series per id would grow without bound.
func (m *metrics) observeRequest(method, route string, status int, d time.Duration) {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
	default:
		method = "other" // clients choose methods freely; each would be a series of its own
	}
	m.requestObserver(requestSeries{method, route, status}).Observe(d.Seconds())
}

// requestObserver returns the series of k, found in the vector the first time only. There are
// as many as the vector's series: methods, routes and statuses are each of a small fixed set.
func (m *metrics) requestObserver(k requestSeries) prometheus.Observer {
	m.seriesMu.RLock()
	o, ok := m.series[k]
	m.seriesMu.RUnlock()
	if ok {
		return o
	}
	o = m.requests.WithLabelValues(k.method, k.route, strconv.Itoa(k.status))
	m.seriesMu.Lock()
	m.series[k] = o
	m.seriesMu.Unlock()
	return o
}

// storeError records a request that the store could not serve; err is what writeError maps to 503.
func (m *metrics) storeError(err error) {
	reason := "unavailable"
	if errors.Is(err, context.DeadlineExceeded) {
		reason = "timeout"
	}
	m.storeErrs.WithLabelValues(reason).Inc()
}

// isStoreError reports whether err is a store outage, as opposed to a 503 of another making.
func isStoreError(err error) bool {
	return errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// serveMetrics answers GET /metrics in the Prometheus text format. It needs no key: it shows
// counts and timings by route, never ids, keys or organizations.
func (s *Server) serveMetrics(c *gin.Context) {
	s.metrics.http.ServeHTTP(c.Writer, c.Request)
}

// RegisterMetrics adds collectors to what GET /metrics serves. It returns an error if one of
// them clashes with a metric already there; call it while wiring the server, before serving.
func (s *Server) RegisterMetrics(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := s.metrics.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// CounterFunc exposes a count that another component keeps (such as the decision log's dropped
// entries) as the Prometheus counter name, read by fn at every scrape. fn must be safe for
// concurrent use and never decrease. The caller need not import Prometheus.
func (s *Server) CounterFunc(name, help string, fn func() float64) error {
	return s.RegisterMetrics(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// GaugeFunc exposes a value that another component keeps (such as a cache's size) as the
// Prometheus gauge name, read by fn at every scrape. fn must be safe for concurrent use.
func (s *Server) GaugeFunc(name, help string, fn func() float64) error {
	return s.RegisterMetrics(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// InfoGauge exposes facts that do not change while the process runs (such as its version) as
// the labels of the Prometheus gauge name, always 1, the convention of *_info metrics.
func (s *Server) InfoGauge(name, help string, labels map[string]string) error {
	return s.RegisterMetrics(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 { return 1 }))
}

// engineCounts is what a Decider that counts its decisions offers for /metrics; *authz.Engine
// is one.
type engineCounts interface {
	Counts() authz.Counts
	Reading() bool
}

// registerEngineMetrics puts the decision engine's counts on /metrics, when it keeps them.
func (s *Server) registerEngineMetrics(d Decider) error {
	e, ok := d.(engineCounts)
	if !ok {
		return nil
	}
	count := func(f func(authz.Counts) uint64) func() float64 {
		return func() float64 { return float64(f(e.Counts())) }
	}
	decisions := func(result string, f func(authz.Counts) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "grantry_decisions_total",
			Help:        "Policy decisions, by result: allow, deny, or error (an evaluation error, which denies and is not counted as deny).",
			ConstLabels: prometheus.Labels{"result": result}}, count(f))
	}
	memoised := func(rule string, which func(allow, allowAll bool) bool) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "grantry_policy_memoized",
			Help:        "1 while the running policy's rule (allow or allow_all) reads a bounded part of its input, so that its answers are remembered; 0 while it is evaluated for every question (GET /policy says why).",
			ConstLabels: prometheus.Labels{"rule": rule}}, func() float64 {
			a, b, _ := d.Memoised()
			if which(a, b) {
				return 1
			}
			return 0
		})
	}
	return errors.Join(
		s.RegisterMetrics(
			decisions("allow", func(c authz.Counts) uint64 { return c.Allowed }),
			decisions("deny", func(c authz.Counts) uint64 { return c.Denied }),
			decisions("error", func(c authz.Counts) uint64 { return c.Failed }),
			memoised("allow", func(a, _ bool) bool { return a }),
			memoised("allow_all", func(_, b bool) bool { return b }),
		),
		s.CounterFunc("grantry_policy_evaluations_total", "Evaluations of the policy: questions the memo did not hold, and every question of a policy that is not memoised.", count(func(c authz.Counts) uint64 { return c.Evaluations })),
		s.CounterFunc("grantry_memo_hits_total", "Questions answered from a policy's memo, without evaluating it.", count(func(c authz.Counts) uint64 { return c.MemoHits })),
		s.CounterFunc("grantry_memo_misses_total", "Questions a policy's memo did not hold.", count(func(c authz.Counts) uint64 { return c.MemoMisses })),
		s.GaugeFunc("grantry_memo_answers", "Answers the memo of the running policy holds.", func() float64 { return float64(e.Counts().MemoAnswers) }),
		s.GaugeFunc("grantry_users_held", "Users whose facts the decision engine holds in memory.", func() float64 { return float64(e.Counts().UsersHeld) }),
		s.CounterFunc("grantry_user_hits_total", "Questions whose user's facts were held in memory.", count(func(c authz.Counts) uint64 { return c.UserHits })),
		s.CounterFunc("grantry_user_misses_total", "Questions whose user's facts were read from the store.", count(func(c authz.Counts) uint64 { return c.UserMisses })),
		s.GaugeFunc("grantry_read_in", "1 from start until users and groups have been read into memory, else 0: questions asked meanwhile may read the store.", func() float64 {
			if e.Reading() {
				return 1
			}
			return 0
		}),
	)
}
