// Package api is Grantry's HTTP interface: the Gin router, its middleware (request id, access
// log, authentication), one file per resource, and the one function that maps errors to the
// wire format of CONTRACT.md.
package api

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"

	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// Decider decides access over a policy input; *policy.Engine is one. Both methods fail closed:
// an error comes with false.
type Decider interface {
	Allow(ctx context.Context, in policy.Input) (bool, error)
	AllowAll(ctx context.Context, in policy.Input) (bool, error)
}

// Config is what the server is built from.
type Config struct {
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
	// CacheEntries is how many users' facts and decisions the check path keeps in memory
	// (cache.go); 0 means DefaultCacheEntries, and a negative number keeps none.
	CacheEntries int
	// ResidentGrants is how many grants ReadIn may keep in memory (resident.go); 0 or less
	// keeps none. It takes effect only with a cache, and a store that is not shared: the
	// index is read in through storage.FactsScanner and kept fresh only by this process's writes.
	ResidentGrants int
	// SharedStore says that other processes may change the store (MongoDB). The cache is then
	// used only within maxStaleness of the last Synced, the store's change feed saying it has
	// reported every change of the other processes: while the feed cannot read the store,
	// checks read the store (and answer 503 if it is down) rather than trust what may be stale.
	SharedStore bool
	// GatewayMaxBody is the largest request body the forward-auth endpoint reads; 0 means
	// DefaultGatewayMaxBody.
	GatewayMaxBody int64
}

// maxStaleness is how long the cache of a shared store is trusted after the change feed last
// confirmed it has seen every change. It is well inside the one second within which a change
// made by another process must show, and it bounds how long a warm check may still be answered
// from the cache after the store stops answering unnoticed.
const maxStaleness = 500 * time.Millisecond

// DefaultCacheEntries is how many users the check path caches unless told otherwise: a few
// kilobytes each for users with tens of grants.
const DefaultCacheEntries = 100_000

// Server serves the Grantry API. It is an http.Handler.
type Server struct {
	store      storage.Store
	decider    Decider
	log        *slog.Logger
	adminToken string
	now        func() time.Time
	realClock  bool // now is time.Now: a request's own reading of the clock may stand for it (nowAt)
	validate   *validator.Validate
	keys       *keyCache
	ready      atomic.Bool
	router     *gin.Engine
	lastMilli  atomic.Int64 // the last time clock returned, in Unix milliseconds

	metrics        *metrics
	limiter        *rateLimiter // nil: no rate limit
	requestTimeout time.Duration

	integrations integrations

	decisions   DecisionRecorder // nil: no decision log
	decisionIDs storage.EntryIDs

	cache    *accessCache[*policy.User]
	seed     maphash.Seed  // of the questions the cache remembers answers to
	memoHits atomic.Uint64 // decisions answered from the cache
	warming  atomic.Bool   // the cache is yet to be warmed after start (WarmCache)
	shapes   shapeMemo     // the policy's answers by the shape of a question
	shared   bool
	lastSync atomic.Int64 // when the change feed last confirmed the cache, in Unix nanoseconds

	gateway        *gateway.Gateway // nil: the gateway endpoints answer 404 (gateway.go)
	modelNames     modelIndexes
	gatewayMaxBody int64
}

// New returns a server that is ready to serve.
func New(cfg Config) *Server {
	s := &Server{
		store:      cfg.Store, // wrapped below, once the cache exists
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
	entries := cfg.CacheEntries
	if entries == 0 {
		entries = DefaultCacheEntries
	}
	if entries > 0 {
		s.cache = newAccessCache[*policy.User](entries)
		if cfg.ResidentGrants > 0 && !cfg.SharedStore {
			s.cache.resident = newResidentIndex(cfg.Store, cfg.ResidentGrants)
			s.warming.Store(true)
		}
	}
	s.store = invalidating{Store: cfg.Store, cache: s.cache}
	s.seed = maphash.MakeSeed()
	s.shared = cfg.SharedStore
	s.keys = newKeyCache(cfg.Store)
	s.metrics = newMetrics()
	s.limiter = newRateLimiter(cfg.RateLimit, cfg.RateBurst, s.now)
	s.requestTimeout = cfg.RequestTimeout
	s.integrations = newIntegrations(cfg.Integrations)
	s.decisions = cfg.Decisions
	s.gatewayMaxBody = cfg.GatewayMaxBody
	if s.gatewayMaxBody <= 0 {
		s.gatewayMaxBody = DefaultGatewayMaxBody
	}
	s.ready.Store(true)
	s.router = s.routes()
	return s
}

// ReadIn reads every group's and user's grants into memory, up to Config.ResidentGrants of them
// (resident.go), so that checks about users the cache does not hold read nothing from the
// store. It does nothing when the server keeps no resident index, and fails with
// errors.ErrUnsupported when the store turns out to have no way to read them so. It may run
// while the server serves: checks made meanwhile read the store, and users written to
// meanwhile are not kept (ResidentRead.Dropped).
func (s *Server) ReadIn(ctx context.Context) (ResidentRead, error) {
	if s.resident() == nil {
		return ResidentRead{}, nil
	}
	return s.resident().readIn(ctx)
}

// KeepResident reads users' grants in (ReadIn), and again whenever writes have since dropped
// (or created) users numbering a tenth of those it kept, until ctx ends: it looks every check,
// and rests after each read-in at least ten times as long as that took, so that reading in
// costs at most about a tenth of a CPU. A read-in that fails is tried again after the same
// rest. report is told of each read-in's end but the one ctx stopped. After the first, it
// warms the cache (WarmCache), and logs how many users that kept, if any. It returns at once when
// the server keeps no resident index, and when the store cannot read users' grants so.
func (s *Server) KeepResident(ctx context.Context, check time.Duration, report func(read ResidentRead, took time.Duration, err error)) {
	r := s.resident()
	if r == nil {
		return
	}
	for warmed := false; ; warmed = true {
		start := time.Now()
		read, err := r.readIn(ctx)
		took := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		report(read, took, err)
		if !warmed {
			start = time.Now()
			if kept := s.WarmCache(ctx); kept > 0 {
				s.log.LogAttrs(ctx, slog.LevelInfo, "users kept in the check path's cache, with what each may use",
					slog.Int("users", kept), slog.String("took", time.Since(start).Round(time.Millisecond).String()))
			}
		}
		if errors.Is(err, errors.ErrUnsupported) || !sleep(ctx, max(check, 10*took)) {
			return
		}
		for err == nil && !r.worn() {
			if !sleep(ctx, check) {
				return
			}
		}
	}
}

// WarmCache keeps in the check path's cache every user the resident index holds of each
// organization whose users all fit in half the cache (taking organizations while those taken
// fit together), each with the set of resources they may use, and returns how many it kept.
// A user is otherwise kept from their third check on and given a set from a later one
// (keptFromLoad, grantsPerEvaluation), each step asking the policy, so that a server started
// under make bench's load of 10,000 users served 5,005 and then 11,683 checks/s in its first
// two 10 s runs and 13,142 in its third. The users of an organization too large to fit, whom
// checks mostly ask about once in a long while, are left to admit. It does nothing without a
// cache or a resident index, or when the policy does not decide per user (a replaced one), and
// stops at the first user it cannot load or whose set it cannot evaluate (each logged). It
// loads users on as many goroutines as may run at once (GOMAXPROCS). From its end, Warming
// reports false.
func (s *Server) WarmCache(ctx context.Context) int {
	defer s.warming.Store(false)
	c, r := s.cache, s.resident()
	if c == nil || r == nil {
		return 0
	}
	d, revision := s.pinPolicy()
	pd, ok := decidesPerUser(d)
	if !ok {
		return 0
	}
	type job struct{ org, user string }
	jobs := make(chan job)
	var kept atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) { // as many as may run at once
		wg.Go(func() {
			for j := range jobs {
				if failed.Load() {
					continue // the jobs already sent, until the sender sees it
				}
				f, err := c.keep(j.org, j.user, s.loadUser(ctx, j.org, j.user))
				if err != nil {
					if !failed.Swap(true) && ctx.Err() == nil {
						s.log.LogAttrs(ctx, slog.LevelError, "warming the check path's cache stopped; checks keep users as they come",
							slog.String("error", err.Error()))
					}
					continue
				}
				if f.Facts == nil {
					continue
				}
				if f.permitted.Load() == nil && s.setOf(ctx, j.org, pd, revision, f, s.now()) == nil {
					failed.Store(true)
					continue
				}
				kept.Add(1)
			}
		})
	}
send:
	for org, users := range r.usersOfOrgsUpTo(c.max / 2) {
		for _, user := range users {
			if ctx.Err() != nil || failed.Load() {
				break send
			}
			jobs <- job{org, user}
		}
	}
	close(jobs)
	wg.Wait()
	return int(kept.Load())
}

// Warming reports whether the cache is yet to be warmed after start (WarmCache, which
// KeepResident calls after its first read-in): checks are answered meanwhile, more slowly.
func (s *Server) Warming() bool { return s.warming.Load() }

// sleep waits for d, or until ctx ends, and reports whether it waited for d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ResidentReading reports whether users' grants are being read into memory (ReadIn) or are yet
// to be read in for the first time: checks of users not held meanwhile read the store.
func (s *Server) ResidentReading() bool {
	r := s.resident()
	return r != nil && r.readingIn()
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Store is the store as the server uses it: a write made through it keeps the server's cache
// right (see invalidating). Components that write beside the server, such as the expired-grant
// clean-up, should write through it.
func (s *Server) Store() storage.Store { return s.store }

// InvalidateOrg drops what the check path cached of an organization. The store's change feed
// calls it when another process changed the organization's data.
func (s *Server) InvalidateOrg(orgID string) { s.cache.invalidateOrg(orgID) }

// Synced tells the server what the store's change feed knows: fresh, that it has reported
// every change made until now, so that the cache of a shared store may be trusted for
// maxStaleness more (if it had gone unconfirmed for longer, everything cached is dropped
// first: changes may have been missed); not fresh, that it cannot know, so that the cache is
// not trusted until it is fresh again.
func (s *Server) Synced(fresh bool) {
	if !fresh {
		s.distrustCache()
		return
	}
	now := time.Now().UnixNano()
	if last := s.lastSync.Swap(now); now-last > int64(maxStaleness) {
		s.cache.invalidateAll()
	}
}

// distrustCache stops the check path from using the cache of a shared store until the change
// feed next confirms it: the store may be failing, and changes of other processes unseen.
func (s *Server) distrustCache() { s.lastSync.Store(0) }

// cached returns the cache the check path may use now: none while the cache of a shared store
// is not known to be fresh.
func (s *Server) cached() *accessCache[*policy.User] {
	if s.shared && time.Now().UnixNano()-s.lastSync.Load() > int64(maxStaleness) {
		return nil
	}
	return s.cache
}

// nowAt returns the time on s's clock of a moment the request read the real clock at, t: t
// itself, unless the server was given a clock of its own (tests), which is then read. A request
// reads the clock once as it arrives (requestContext.start) and once as its handler starts,
// and its key's expiry, the grants' expiries and its decision's time are judged at those
// readings instead of reading it again for each: a reading took 74 ns in a loop on the
// development machine (a virtual one), and the four readings this saves about 0.7 µs of a
// check's 62 µs of CPU in a pprof of a pinned server under make bench's load.
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
