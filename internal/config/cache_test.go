package config

import (
	"strings"
	"testing"
)

// TestCacheSettings reads GRANTRY_CACHE_ENTRIES and GRANTRY_PRELOAD, and refuses, by name,
// what they cannot be.
func TestCacheSettings(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		wantEntries int
		wantPreload bool
		wantErr     string // a variable Validate must name, or "" for valid settings
	}{
		{"defaults", nil, DefaultCacheEntries, DefaultPreload, ""},
		{"no cache", map[string]string{"GRANTRY_CACHE_ENTRIES": "0"}, 0, DefaultPreload, ""},
		{"set", map[string]string{"GRANTRY_CACHE_ENTRIES": "5000", "GRANTRY_PRELOAD": "false"}, 5000, false, ""},
		{"preload as a number", map[string]string{"GRANTRY_PRELOAD": "0"}, DefaultCacheEntries, false, ""},
		{"negative entries", map[string]string{"GRANTRY_CACHE_ENTRIES": "-1"}, -1, DefaultPreload, "GRANTRY_CACHE_ENTRIES"},
		{"entries not a number", map[string]string{"GRANTRY_CACHE_ENTRIES": "many"}, -1, DefaultPreload, "GRANTRY_CACHE_ENTRIES"},
		{"preload not a boolean", map[string]string{"GRANTRY_PRELOAD": "sometimes"}, DefaultCacheEntries, DefaultPreload, "GRANTRY_PRELOAD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := FromEnv(env(tc.env))
			if c.CacheEntries != tc.wantEntries || c.Preload != tc.wantPreload {
				t.Errorf("CacheEntries, Preload = %d, %v; want %d, %v", c.CacheEntries, c.Preload, tc.wantEntries, tc.wantPreload)
			}
			err := c.Validate()
			if tc.wantErr == "" && err != nil {
				t.Errorf("Validate: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
