package api

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/policy"
)

func TestAccessCacheUsers(t *testing.T) {
	c := newAccessCache[string](1000)
	loads := 0
	loader := func(facts string) func() (string, error) {
		return func() (string, error) { loads++; return facts, nil }
	}
	get := func(org, user string, load func() (string, error)) *cacheEntry[string] {
		t.Helper()
		e, err := c.user(org, user, load, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	tests := []struct {
		name      string
		before    func()
		org, user string
		wantLoad  bool
	}{
		{"first use loads", nil, "o1", "ada", true},
		{"a user loaded once is not kept", nil, "o1", "ada", true},
		{"nor twice", nil, "o1", "ada", true},
		{"one loaded three times is", nil, "o1", "ada", false},
		{"another user loads", nil, "o1", "bob", true},
		{"and again", nil, "o1", "bob", true},
		{"and is kept at the third", nil, "o1", "bob", true},
		{"the same user id in another org loads", nil, "o2", "ada", true},
		{"and again", nil, "o2", "ada", true},
		{"and is kept at the third too", nil, "o2", "ada", true},
		{"and is cached", nil, "o2", "ada", false},
		{"after invalidating the user", func() { c.invalidateUser("o1", "ada") }, "o1", "ada", true},
		{"the user reloaded is kept at once", nil, "o1", "ada", false},
		{"another user of the org is untouched", nil, "o1", "bob", false},
		{"after invalidating the org", func() { c.invalidateOrg("o1") }, "o1", "bob", true},
		{"another org is untouched", nil, "o2", "ada", false},
		{"after invalidating everything", func() { c.invalidateAll() }, "o2", "ada", true},
		{"everything is reloaded", nil, "o1", "ada", true},
	}
	for _, tc := range tests {
		if tc.before != nil {
			tc.before()
		}
		before := loads
		get(tc.org, tc.user, loader("facts"))
		if got := loads > before; got != tc.wantLoad {
			t.Errorf("%s: loaded = %v, want %v", tc.name, got, tc.wantLoad)
		}
	}
}

// TestAccessCacheLoadRacingAWrite: a load that an invalidation overtakes is used once but not
// kept, so that the write is seen on the next check: a load of a user admitted (the third),
// and one of keep, which admits every user.
func TestAccessCacheLoadRacingAWrite(t *testing.T) {
	loads := map[string]func(c *accessCache[string], load func() (string, error)) *cacheEntry[string]{
		"user": func(c *accessCache[string], load func() (string, error)) *cacheEntry[string] {
			e, _ := c.user("o", "ada", load, nil)
			return e
		},
		"keep": func(c *accessCache[string], load func() (string, error)) *cacheEntry[string] {
			e, _ := c.keep("o", "ada", load)
			return e
		},
	}
	for via, get := range loads {
		for _, invalidate := range []string{"user", "org"} {
			c := newAccessCache[string](1000)
			for range keptFromLoad - 1 { // the loads before the one that keeps the user
				c.user("o", "ada", func() (string, error) { return "not kept", nil }, nil)
			}
			e := get(c, func() (string, error) {
				if invalidate == "user" {
					c.invalidateUser("o", "ada")
				} else {
					c.invalidateOrg("o")
				}
				return "read before the write", nil
			})
			if e.Facts != "read before the write" {
				t.Fatalf("%s, invalidating the %s: the racing load was not returned", via, invalidate)
			}
			if e = get(c, func() (string, error) { return "read after", nil }); e.Facts != "read after" {
				t.Errorf("%s, invalidating the %s during a load: next use got %q, want a fresh load", via, invalidate, e.Facts)
			}
		}
	}
}

func TestAccessCacheIsBounded(t *testing.T) {
	c := newAccessCache[int](64)
	for i := range 10_000 {
		for range keptFromLoad {
			c.user("o", fmt.Sprint(i), func() (int, error) { return i, nil }, nil)
		}
	}
	if n := c.len(); n > 64+cacheShards {
		t.Errorf("%d users cached, want at most about 64", n)
	}
	// The most recent user is still there.
	e, _ := c.user("o", "9999", func() (int, error) { return -1, nil }, nil)
	if e.Facts != 9999 {
		t.Error("the most recently used user was evicted")
	}
}

// TestAccessCacheEvictsTheLeastRecentlyUsed: in one shard, a user used between every two users
// kept is never evicted, however many are kept after it, though lookup moves it to the front
// only now and then (not at a use just after another); the users kept and not used again are,
// oldest first.
func TestAccessCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := newAccessCache[int](cacheShards * 8)
	per := c.perShard()
	shard := c.shard(c.hash(cacheKey{"o", "hot"}))
	var users []string // of hot's shard
	for i := 0; len(users) < 5*per; i++ {
		if u := fmt.Sprint(i); c.shard(c.hash(cacheKey{"o", u})) == shard {
			users = append(users, u)
		}
	}
	cached := func(u string) bool { // a use of u, if it is cached
		e, _, _ := c.lookup(cacheKey{"o", u}, shard, c.org("o"))
		return e != nil
	}
	c.keep("o", "hot", func() (int, error) { return 1, nil })
	for i, u := range users {
		c.keep("o", u, func() (int, error) { return i, nil })
		if !cached("hot") {
			t.Fatalf("the user used between every two others was evicted after %d others were kept", i+1)
		}
		if i >= per && cached(users[i-per+1]) {
			t.Fatalf("%s, kept %d users ago and not used since, is still cached", users[i-per+1], per-1)
		}
	}
	if n := c.len(); n > per {
		t.Errorf("%d users cached in one shard, want at most %d", n, per)
	}
	// Used again at once, hot is near the front and stays where it is.
	cached("hot")
	e := shard.users[cacheKey{"o", "hot"}]
	moved := e.moved
	if cached("hot"); e.moved != moved {
		t.Error("a use just after another moved the entry to the front again")
	}
}

// TestAccessCacheAdmitsFromTheThirdLoad: users loaded once or twice are not kept, however many
// there are, and each is kept at their third load; a load made with first only until then.
func TestAccessCacheAdmitsFromTheThirdLoad(t *testing.T) {
	c := newAccessCache[int](1000)
	var whole, first atomic.Int64
	load := func(i int) func() (int, error) { return func() (int, error) { whole.Add(1); return i, nil } }
	part := func() (int, error) { first.Add(1); return -2, nil }
	for round := 1; round < keptFromLoad; round++ {
		for i := range 500 {
			if e, _ := c.user("o", fmt.Sprint(i), load(i), part); e.Facts != -2 {
				t.Fatalf("load %d of user %d was not made with first", round, i)
			}
		}
		if n := c.len(); n != 0 || whole.Load() != 0 {
			t.Fatalf("after %d loads of 500 users, %d are kept and %d were loaded whole; want none", round, n, whole.Load())
		}
	}
	for i := range 500 {
		c.user("o", fmt.Sprint(i), load(i), part)
	}
	// A user whose slot another took since is loaded more: a few of 500 in 1,024 slots.
	if n := c.len(); n < 450 {
		t.Errorf("%d of 500 users loaded three times are kept, want nearly all", n)
	}
	misses := c.misses.Load()
	for i := range 500 {
		c.user("o", fmt.Sprint(i), load(-1), part)
	}
	if n := c.misses.Load() - misses; n > 50 {
		t.Errorf("%d of 500 users loaded three times were loaded again", n)
	}
}

// An entry made for one request and kept nowhere remembers no decision: no later request
// finds it, so the memo would be made for nothing. A kept entry remembers.
func TestAccessCacheEntryKeptNowhereRemembersNothing(t *testing.T) {
	q := newQuestion(maphash.MakeSeed(), false, []string{"r"})
	load := func() (int, error) { return 1, nil }
	var off *accessCache[int]
	c := newAccessCache[int](1000)
	for _, tc := range []struct {
		name string
		use  func() *cacheEntry[int]
		kept bool
	}{
		{"no cache", func() *cacheEntry[int] { e, _ := off.user("o", "u", load, nil); return e }, false},
		{"first load", func() *cacheEntry[int] { e, _ := c.user("o", "u", load, nil); return e }, false},
		{"second load", func() *cacheEntry[int] { e, _ := c.user("o", "u", load, nil); return e }, false},
		{"third load, kept", func() *cacheEntry[int] { e, _ := c.user("o", "u", load, nil); return e }, true},
	} {
		e := tc.use()
		e.remember(q, "rev", time.Time{}, true)
		if _, ok := e.decision(q, "rev", time.Time{}); ok != tc.kept {
			t.Errorf("%s: the entry remembered the decision: %v, want %v", tc.name, ok, tc.kept)
		}
	}
	if n := c.len(); n != 1 {
		t.Errorf("the cache holds %d users, want the one loaded three times", n)
	}
}

func TestAccessCacheOff(t *testing.T) {
	var c *accessCache[int]
	loads := 0
	for range 3 {
		c.user("o", "u", func() (int, error) { loads++; return 0, nil }, nil)
	}
	c.invalidateUser("o", "u")
	c.invalidateOrg("o")
	if loads != 3 {
		t.Errorf("a nil cache loaded %d times for 3 uses, want every time", loads)
	}
}

func TestMemo(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	seed := maphash.MakeSeed()
	q := func(all bool, ids ...string) question { return newQuestion(seed, all, ids) }
	e := &cacheEntry[int]{}
	if _, ok := e.decision(q(false, "r1"), "rev1", now); ok {
		t.Fatal("an empty memo answered")
	}
	e.remember(q(false, "r1"), "rev1", time.Time{}, true)
	e.remember(q(false, "r2"), "rev1", now.Add(time.Minute), false)
	e.remember(q(true, "r1", "r2"), "rev1", time.Time{}, true)
	tests := []struct {
		name     string
		q        question
		revision string
		at       time.Time
		want, ok bool
	}{
		{"remembered", q(false, "r1"), "rev1", now, true, true},
		{"a day later", q(false, "r1"), "rev1", now.Add(24 * time.Hour), true, true},
		{"before its grant expires", q(false, "r2"), "rev1", now.Add(59 * time.Second), false, true},
		{"once its grant expired", q(false, "r2"), "rev1", now.Add(time.Minute), false, false},
		{"another policy", q(false, "r1"), "rev2", now, false, false},
		{"never asked", q(false, "r3"), "rev1", now, false, false},
		{"allow_all of the same ids", q(true, "r1", "r2"), "rev1", now, true, true},
		{"allow_all in another order", q(true, "r2", "r1"), "rev1", now, false, false},
		{"allow of an id asked by allow_all", q(true, "r1"), "rev1", now, false, false},
		// Two questions with one hash: the ids are compared, so it is a miss.
		{"a hash collision", question{ids: []string{"r9"}, hash: q(false, "r1").hash}, "rev1", now, false, false},
	}
	for _, tc := range tests {
		got, ok := e.decision(tc.q, tc.revision, tc.at)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: decision = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	ids := []string{"r5"}
	e.remember(q(false, ids...), "rev1", time.Time{}, true)
	ids[0] = "changed"
	if _, ok := e.decision(q(false, "r5"), "rev1", now); !ok {
		t.Error("the memo kept the caller's slice instead of a copy")
	}
	for i := range maxMemo + 10 {
		e.remember(q(false, fmt.Sprint("q", i)), "rev1", time.Time{}, true)
	}
	if len(e.memo) > maxMemo {
		t.Errorf("memo holds %d decisions, want at most %d", len(e.memo), maxMemo)
	}
}

func TestAccessCacheResources(t *testing.T) {
	c := newAccessCache[int](1000)
	stored := map[string]policy.Resource{"r1": {Kind: "model", Name: "a"}, "r2": {Kind: "dataset", Name: "b"}}
	var asked [][]string
	load := func(ids []string) (map[string]policy.Resource, error) {
		asked = append(asked, slices.Clone(ids))
		out := map[string]policy.Resource{}
		for _, id := range ids {
			if r, ok := stored[id]; ok {
				out[id] = r
			}
		}
		return out, nil
	}
	get := func(ids ...string) map[string]policy.Resource {
		t.Helper()
		got, err := c.resources("o", ids, load)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := get("r1", "gone"); !maps.Equal(got, map[string]policy.Resource{"r1": stored["r1"]}) {
		t.Errorf("first read = %v", got)
	}
	if got := get("r1", "r2", "gone"); len(got) != 2 || len(asked) != 2 || !slices.Equal(asked[1], []string{"r2"}) {
		t.Errorf("second read = %v after loading %v; want only r2 loaded (r1 and the absent one remembered)", got, asked)
	}
	stored["gone"] = policy.Resource{Kind: "function", Name: "new"}
	c.invalidateOrg("o")
	if got := get("gone"); got["gone"].Name != "new" {
		t.Errorf("after invalidating the org = %v, want the new resource", got)
	}
}
