package config

import (
	"errors"
	"flag"
)

// DefaultCacheEntries is how many users (and as many groups) the decision engine holds in
// memory when GRANTRY_CACHE_ENTRIES is not set: every user of most deployments.
const DefaultCacheEntries = 1_000_000

// DefaultPreload is whether the embedded store's file is read into memory at start when
// GRANTRY_PRELOAD is not set.
const DefaultPreload = true

// readCache reads GRANTRY_CACHE_ENTRIES and GRANTRY_PRELOAD. A value that does not parse
// becomes -1, or is kept for Validate (readBool), which reports it by the variable's name.
func (c *Config) readCache(getenv func(string) string) {
	readInt(getenv, "GRANTRY_CACHE_ENTRIES", &c.CacheEntries)
	c.readBool(getenv, "GRANTRY_PRELOAD", &c.Preload)
}

func (c *Config) registerCacheFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.CacheEntries, "cache-entries", c.CacheEntries, "users (and as many groups) the decision engine holds in memory, read in at start; 0 = none (GRANTRY_CACHE_ENTRIES)")
	fs.BoolVar(&c.Preload, "preload", c.Preload, "read the embedded store's file into memory at start, so that no check waits on the disk (GRANTRY_PRELOAD)")
}

// validateCache reports what is wrong with the settings of what the engine holds in memory.
func (c Config) validateCache() []error {
	if c.CacheEntries < 0 {
		return []error{errors.New("GRANTRY_CACHE_ENTRIES must be a whole number, 0 (hold nothing) or more")}
	}
	return nil
}
