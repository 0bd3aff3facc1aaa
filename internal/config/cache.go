package config

import (
	"errors"
	"flag"
)

// DefaultCacheEntries is how many users the check path keeps in memory when
// GRANTRY_CACHE_ENTRIES is not set.
const DefaultCacheEntries = 100_000

// readCache reads GRANTRY_CACHE_ENTRIES. A value that does not parse becomes -1, which Validate
// reports by the variable's name.
func (c *Config) readCache(getenv func(string) string) {
	readInt(getenv, "GRANTRY_CACHE_ENTRIES", &c.CacheEntries)
}

func (c *Config) registerCacheFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.CacheEntries, "cache-entries", c.CacheEntries, "users whose facts and decisions the check path keeps in memory; 0 = none (GRANTRY_CACHE_ENTRIES)")
}

// validateCache reports what is wrong with the cache's setting.
func (c Config) validateCache() []error {
	if c.CacheEntries < 0 {
		return []error{errors.New("GRANTRY_CACHE_ENTRIES must be a whole number, 0 (no cache) or more")}
	}
	return nil
}
