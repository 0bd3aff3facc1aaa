package api

import (
	"fmt"
	"testing"
	"time"
)

// TestRateLimiterForgetsQuietKeys: buckets of keys that have gone quiet are dropped once many
// exist, so the limiter's memory follows the keys active lately, not every key ever seen.
func TestRateLimiterForgetsQuietKeys(t *testing.T) {
	now := time.Unix(0, 0)
	l := newRateLimiter(10, 10, func() time.Time { return now })
	for i := range 5 * sweepAbove {
		l.take(fmt.Sprint("key-", i))
	}
	if n := len(l.buckets); n != 5*sweepAbove {
		t.Fatalf("%d buckets before any refilled, want %d", n, 5*sweepAbove)
	}
	now = now.Add(time.Second) // every bucket is full again
	l.take("late")
	if n := len(l.buckets); n != 1 {
		t.Errorf("%d buckets after the others refilled, want 1", n)
	}
	// A key that has not refilled keeps its bucket through a sweep, and with it its limit.
	for range 10 {
		l.take("busy")
	}
	for i := range sweepAbove {
		l.take(fmt.Sprint("other-", i))
	}
	now = now.Add(900 * time.Millisecond)
	for range 9 {
		l.take("busy")
	}
	now = now.Add(100 * time.Millisecond) // the others are full; busy has one token
	l.take("trigger")
	if n := len(l.buckets); n != 2 {
		t.Errorf("%d buckets after the second sweep, want 2 (busy, trigger)", n)
	}
	if ok, _ := l.take("busy"); !ok {
		t.Error("busy key refused its one token")
	}
	if ok, wait := l.take("busy"); ok || wait < 99*time.Millisecond || wait > 101*time.Millisecond {
		t.Errorf("busy key's next request = %v, wait %s; want refused for 100ms", ok, wait)
	}
}

// BenchmarkRateLimiterTake measures what the limit adds to each request, with many keys.
func BenchmarkRateLimiterTake(b *testing.B) {
	l := newRateLimiter(1e9, 1e9, time.Now)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.take(keys[i%len(keys)])
			i++
		}
	})
}
