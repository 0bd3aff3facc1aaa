package config

import (
	"strings"
	"testing"
)

func TestCacheEntries(t *testing.T) {
	tests := []struct {
		env     string
		want    int
		wantErr bool
	}{
		{"", DefaultCacheEntries, false},
		{"0", 0, false},
		{"5000", 5000, false},
		{"-1", -1, true},
		{"many", -1, true},
	}
	for _, tc := range tests {
		c := FromEnv(func(k string) string {
			if k == "GRANTRY_CACHE_ENTRIES" {
				return tc.env
			}
			return ""
		})
		err := c.Validate()
		if c.CacheEntries != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("GRANTRY_CACHE_ENTRIES=%q: %d, %v; want %d and error=%v", tc.env, c.CacheEntries, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "GRANTRY_CACHE_ENTRIES") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}

func TestPreload(t *testing.T) {
	tests := []struct {
		env     string
		want    bool
		wantErr bool
	}{
		{"", DefaultPreload, false},
		{"true", true, false},
		{"false", false, false},
		{"0", false, false},
		{"sometimes", false, true},
	}
	for _, tc := range tests {
		c := FromEnv(func(k string) string {
			if k == "GRANTRY_PRELOAD" {
				return tc.env
			}
			return ""
		})
		err := c.Validate()
		if c.Preload != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("GRANTRY_PRELOAD=%q: %v, %v; want %v and error=%v", tc.env, c.Preload, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "GRANTRY_PRELOAD") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}
