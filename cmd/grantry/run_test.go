package main

import (
	"runtime/debug"
	"testing"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/config"
)

// TestCacheEntries checks the translation of GRANTRY_CACHE_ENTRIES into api.Config, and that
// the two packages agree on the default (config cannot import api, so each names it).
func TestCacheEntries(t *testing.T) {
	if config.DefaultCacheEntries != api.DefaultCacheEntries {
		t.Errorf("config.DefaultCacheEntries = %d, api.DefaultCacheEntries = %d; they must agree", config.DefaultCacheEntries, api.DefaultCacheEntries)
	}
	for _, tc := range []struct{ setting, want int }{{0, -1}, {1, 1}, {config.DefaultCacheEntries, config.DefaultCacheEntries}} {
		if got := cacheEntries(tc.setting); got != tc.want {
			t.Errorf("cacheEntries(%d) = %d, want %d", tc.setting, got, tc.want)
		}
	}
}

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	if got := tuneGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] }); got != "50" {
		t.Errorf("with GOGC=50, tuneGC reports %q", got)
	}
	if was := debug.SetGCPercent(100); was != 100 {
		t.Errorf("with GOGC set, tuneGC changed the goal to %d", was)
	}
	if got := tuneGC(func(string) string { return "" }); got != "200" {
		t.Errorf("without GOGC, tuneGC reports %q", got)
	}
	if was := debug.SetGCPercent(100); was != gcPercent {
		t.Errorf("without GOGC, the goal is %d, want %d", was, gcPercent)
	}
}
