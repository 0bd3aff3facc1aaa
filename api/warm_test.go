package api_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/grantry/grantry/api"
)

// TestWarmCache: WarmCache keeps every user of each organization whose users fit in half the
// cache, each with the set of what they may use, so that their first checks find them in the
// cache and are answered without asking the policy, as the store would answer them; an
// organization too large for it is left to the checks.
func TestWarmCache(t *testing.T) {
	w := newResidentWorld(t, 1000)
	w.readIn(t)
	srv := w.res.srv
	if err := srv.RegisterCacheMetrics(); err != nil {
		t.Fatal(err)
	}
	metric := func(series string) int {
		t.Helper()
		v, ok := metricValue(t, w.res, series)
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("/metrics %s = %q, %v", series, v, ok)
		}
		return n
	}
	if !srv.Warming() {
		t.Error("Warming() = false before WarmCache")
	}
	if n := srv.WarmCache(context.Background()); n != 6 {
		t.Errorf("WarmCache kept %d users, want 6 (5 of acme, 1 of globex)", n)
	}
	if srv.Warming() {
		t.Error("Warming() = true after WarmCache")
	}
	if n := metric("grantry_cache_users"); n != 6 {
		t.Errorf("grantry_cache_users = %d after WarmCache, want 6", n)
	}

	hits, misses, fromMemory := metric("grantry_cache_user_hits_total"), metric("grantry_cache_user_misses_total"), metric("grantry_cache_decision_hits_total")
	questions := []struct {
		key, user, model string
		want             bool
	}{
		{w.key, w.ada, w.models[0], true},
		{w.key, w.ada, w.models[3], false},
		{w.key, w.carl, w.models[2], true},  // through his group
		{w.key, w.dana, w.models[0], false}, // deactivated
		{w.key, w.erin, w.models[0], true},
		{w.key, w.erin, w.models[1], false}, // expired
		{w.otherKey, w.eve, w.otherModels[0], true},
	}
	for _, q := range questions {
		if got, plain := w.res.check(q.key, q.user, q.model), w.plain.check(q.key, q.user, q.model); got != q.want || plain != q.want {
			t.Errorf("can_user_access(%s, %s) = %v, the store says %v; want %v", q.user, q.model, got, plain, q.want)
		}
	}
	n := len(questions)
	if got := metric("grantry_cache_user_hits_total") - hits; got != n {
		t.Errorf("%d of %d first questions found their user in the cache", got, n)
	}
	if got := metric("grantry_cache_user_misses_total") - misses; got != 0 {
		t.Errorf("%d first questions loaded their user, want 0", got)
	}
	if got := metric("grantry_cache_decision_hits_total") - fromMemory; got != n {
		t.Errorf("%d of %d first questions were answered from memory (the user's set)", got, n)
	}
	w.sameAnswers(t, "warmed")

	// A cache of 8 warms organizations of up to 4 users: globex, not acme and its 5.
	small := newResidentWorld(t, 1000, func(c *api.Config) { c.CacheEntries = 8 })
	small.readIn(t)
	if n := small.res.srv.WarmCache(context.Background()); n != 1 {
		t.Errorf("with a cache of 8, WarmCache kept %d users, want 1 (globex's)", n)
	}
	small.sameAnswers(t, "small cache warmed")

	// Without a resident index there is nothing to warm from, and nothing to wait for.
	plain := w.plain.srv
	if plain.Warming() {
		t.Error("a server without a resident index: Warming() = true")
	}
	if n := plain.WarmCache(context.Background()); n != 0 {
		t.Errorf("a server without a resident index: WarmCache kept %d users", n)
	}
}

// TestWarmCacheStopsAtAFailingStore: a user WarmCache cannot load (their resources cannot be
// read) stops the warming, which says so in the log rather than going on through every user;
// checks then keep users as they come, and answer as the store does once it is back.
func TestWarmCacheStopsAtAFailingStore(t *testing.T) {
	logged := &syncBuffer{}
	w := newResidentWorld(t, 1000, func(c *api.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logged, nil))
	})
	w.readIn(t)
	w.reads.mu.Lock()
	w.reads.resourcesFail = errors.New("the disk is gone")
	w.reads.mu.Unlock()
	if n := w.res.srv.WarmCache(context.Background()); n != 0 {
		t.Errorf("WarmCache kept %d users while no resource could be read, want 0", n)
	}
	if w.res.srv.Warming() {
		t.Error("Warming() = true after a WarmCache that stopped")
	}
	line := string(logged.Bytes())
	if strings.Count(line, "warming the check path's cache stopped") != 1 || !strings.Contains(line, "the disk is gone") {
		t.Errorf("want one line saying the warming stopped, with its cause; logged:\n%s", line)
	}
	w.reads.mu.Lock()
	w.reads.resourcesFail = nil
	w.reads.mu.Unlock()
	w.sameAnswers(t, "after a warming that stopped")
}
