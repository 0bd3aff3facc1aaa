// Package api is Grantry's HTTP interface: the Gin router, its middleware (request id, access
// log, authentication), one file per resource, and the one function that maps errors to the
// wire format of CONTRACT.md.
package api

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"

	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/storage"
)

// Config is what the server is built from.
type Config struct {
	// Store is the store the server reads and writes: the decision engine's (authz.Engine.Store),
	// so that every write reaches the engine's memory before it is acknowledged.
	Store   storage.Store
	Decider Decider
	Logger  *slog.Logger
	// AdminToken is the bearer token of the admin API; empty turns the admin API off (404).
	AdminToken string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Integrations are the third-party providers and the sealer of their keys (integrations.go).
	Integrations Integrations
	// RequestTimeout is the deadline of every request's context; zero means none.
	RequestTimeout time.Duration
	// RateLimit is how many requests a second each API key may make on average; zero or less
	// means no limit. RateBurst is how many it may make at once; zero means one second's worth.
	RateLimit float64
	RateBurst int
	// Decisions receives the record of every access decision; nil logs none (decisions.go).
	Decisions DecisionRecorder
	// GatewayMaxBody is the largest request body the forward-auth endpoint reads; 0 means
	// DefaultGatewayMaxBody.
	GatewayMaxBody int64
}

// Server serves the Grantry API. It is an http.Handler.
type Server struct {
	store      storage.Store
	decider    Decider
	log        *slog.Logger
	adminToken string
	now        func() time.Time
	realClock  bool // now is time.Now: a request's own reading of the clock may stand for it (nowAt)
	validate   *validator.Validate
	keys       *apikey.Cache
	ready      atomic.Bool
	router     *gin.Engine
	lastMilli  atomic.Int64 // the last time clock returned, in Unix milliseconds

	metrics        *metrics
	limiter        *rateLimiter // nil: no rate limit
	requestTimeout time.Duration

	integrations integrations

	decisions   DecisionRecorder // nil: no decision log
	decisionIDs storage.EntryIDs

	gateway        *gateway.Gateway // nil: the gateway endpoints answer 404 (gateway.go)
	gatewayMaxBody int64
}

// New returns a server that is ready to serve.
func New(cfg Config) *Server {
	s := &Server{
		store:      cfg.Store,
		decider:    cfg.Decider,
		log:        cfg.Logger,
		adminToken: cfg.AdminToken,
		now:        cfg.Now,
		validate:   newValidator(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now, s.realClock = time.Now, true
	}
	s.keys = apikey.NewCache(cfg.Store)
	s.metrics = newMetrics()
	s.limiter = newRateLimiter(cfg.RateLimit, cfg.RateBurst, s.now)
	s.requestTimeout = cfg.RequestTimeout
	s.integrations = newIntegrations(cfg.Integrations)
	s.decisions = cfg.Decisions
	s.gatewayMaxBody = cfg.GatewayMaxBody
	if s.gatewayMaxBody <= 0 {
		s.gatewayMaxBody = DefaultGatewayMaxBody
	}
	if err := s.registerEngineMetrics(cfg.Decider); err != nil {
		panic(err) // cannot happen: a new registry holds none of them yet
	}
	s.ready.Store(true)
	s.router = s.routes()
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// nowAt returns the time on s's clock of a moment the request read the real clock at, t: t
// itself, unless the server was given a clock of its own (tests), which is then read. A request
// reads the clock as it arrives (requestContext.start) and as its handler starts, and its key's
// expiry, the grants' expiries and its decision's time are judged at those readings rather
// than at readings of their own, which a check would pay for several times over.
func (s *Server) nowAt(t time.Time) time.Time {
	if s.realClock {
		return t
	}
	return s.now()
}

// SetReady sets what /readyz answers; shutdown sets it false before it stops accepting requests.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// clock returns the current time as the store keeps it (UTC, to the millisecond), and never the
// same or an earlier time twice, so that records created one after the other list in that order
// even within one millisecond or when the system clock steps back.
func (s *Server) clock() time.Time {
	now := s.now().UnixMilli()
	for {
		last := s.lastMilli.Load()
		next := max(now, last+1)
		if s.lastMilli.CompareAndSwap(last, next) {
			return time.UnixMilli(next).UTC()
		}
	}
}
