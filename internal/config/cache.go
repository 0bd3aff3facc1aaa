package config

import (
	"errors"
	"flag"
)

// DefaultCacheEntries is how many users the check path keeps in memory when
// GRANTRY_CACHE_ENTRIES is not set.
const DefaultCacheEntries = 100_000

// DefaultResidentGrants is how many grants the check path reads into memory at start when
// GRANTRY_RESIDENT_GRANTS is not set: about 100 MB for them, and some 100 bytes for each of
// their users.
const DefaultResidentGrants = 25_000_000

// DefaultPreload is whether the embedded store's file is read into memory at start when
// GRANTRY_PRELOAD is not set.
const DefaultPreload = true

// readCache reads GRANTRY_CACHE_ENTRIES, GRANTRY_RESIDENT_GRANTS and GRANTRY_PRELOAD. A value that does not parse
// becomes -1, or is kept for Validate (readBool), which reports it by the variable's name.
func (c *Config) readCache(getenv func(string) string) {
	readInt(getenv, "GRANTRY_CACHE_ENTRIES", &c.CacheEntries)
	readInt(getenv, "GRANTRY_RESIDENT_GRANTS", &c.ResidentGrants)
	c.readBool(getenv, "GRANTRY_PRELOAD", &c.Preload)
}

func (c *Config) registerCacheFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.CacheEntries, "cache-entries", c.CacheEntries, "users whose facts and decisions the check path keeps in memory; 0 = none (GRANTRY_CACHE_ENTRIES)")
	fs.IntVar(&c.ResidentGrants, "resident-grants", c.ResidentGrants, "users' and groups' grants the embedded store's check path reads into memory at start; 0 = none (GRANTRY_RESIDENT_GRANTS)")
	fs.BoolVar(&c.Preload, "preload", c.Preload, "read the embedded store's file into memory at start, so that no check waits on the disk (GRANTRY_PRELOAD)")
}

// validateCache reports what is wrong with the settings of what the check path keeps in memory.
func (c Config) validateCache() []error {
	var errs []error
	if c.CacheEntries < 0 {
		errs = append(errs, errors.New("GRANTRY_CACHE_ENTRIES must be a whole number, 0 (no cache) or more"))
	}
	if c.ResidentGrants < 0 {
		errs = append(errs, errors.New("GRANTRY_RESIDENT_GRANTS must be a whole number, 0 (none) or more"))
	}
	return errs
}
