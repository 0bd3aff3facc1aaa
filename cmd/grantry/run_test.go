package main

import (
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
