package api

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// rateLimiter keeps one token bucket per API key: each key may make burst requests at once and
// rate requests a second on average. A bucket that has filled up again is the same as no bucket,
// so buckets of keys gone quiet are dropped, and the map holds only keys active lately.
type rateLimiter struct {
	rate  float64 // tokens added per second
	burst float64 // the most tokens a bucket holds
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// sweepAbove is how many buckets may exist before full ones are looked for and dropped.
const sweepAbove = 1024

// newRateLimiter returns a limiter of rate requests a second per key with bursts of burst
// requests, or nil (no limit) when rate is not positive. A burst below 1 means one second's
// worth of requests, at least one.
func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	if rate <= 0 {
		return nil
	}
	b := float64(burst)
	if burst < 1 {
		b = max(1, math.Ceil(rate))
	}
	return &rateLimiter{rate: rate, burst: b, now: now, buckets: map[string]*bucket{}}
}

// take spends one of key's tokens. When none is left it spends nothing and returns false and
// how long until one will be.
func (l *rateLimiter) take(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		l.sweep(now)
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+elapsed*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// sweep drops the buckets that have filled up again, at most once per refill period, once there
// are many. l.mu is held.
func (l *rateLimiter) sweep(now time.Time) {
	refill := time.Duration(l.burst / l.rate * float64(time.Second))
	if len(l.buckets) < sweepAbove || now.Sub(l.lastSweep) < refill {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// rateLimit answers 429 with Retry-After when the request's API key has used up its bucket. It
// runs after authenticate, so only known keys get a bucket, and never before the caller is known.
func (s *Server) rateLimit(c *gin.Context) {
	s.limit(c, requestOf(c).keyID, "Too many requests with this API key; retry later.")
}

// scimRateLimit is rateLimit for SCIM tokens, after scimAuthenticate: each token has a bucket
// of its own, as each API key has, at the same rate.
func (s *Server) scimRateLimit(c *gin.Context) {
	s.limit(c, "scim:"+requestOf(c).caller.ID, "Too many requests with this SCIM token; retry later.")
}

// limit spends one of the bucket key's tokens, or answers 429 with detail when there is none.
func (s *Server) limit(c *gin.Context, key, detail string) {
	if s.limiter == nil {
		c.Next()
		return
	}
	if ok, wait := s.limiter.take(key); !ok {
		s.writeError(c, &Error{Status: http.StatusTooManyRequests, Detail: detail, RetryAfter: retryAfter(wait)})
		return
	}
	c.Next()
}

// retryAfter is a wait in whole seconds for the Retry-After header, rounded up and at least 1:
// "0" would invite an immediate retry that fails again.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
