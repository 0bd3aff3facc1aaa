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
