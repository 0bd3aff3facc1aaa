package config

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Defaults of the operational settings.
const (
	DefaultRequestTimeout  = 5 * time.Second
	DefaultShutdownTimeout = 15 * time.Second
)

// readOperations reads the settings that bound requests and shutdown. FromEnv cannot fail, so a
// value that does not parse becomes -1, which Validate reports by the variable's name.
func (c *Config) readOperations(getenv func(string) string) {
	for name, field := range map[string]*time.Duration{
		"GRANTRY_REQUEST_TIMEOUT":  &c.RequestTimeout,
		"GRANTRY_SHUTDOWN_TIMEOUT": &c.ShutdownTimeout,
	} {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				d = -1
			}
			*field = d
		}
	}
	if v := getenv("GRANTRY_RATE_LIMIT"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
			r = -1
		}
		c.RateLimit = r
	}
	readInt(getenv, "GRANTRY_RATE_BURST", &c.RateBurst)
}

func (c *Config) registerOperationFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "deadline of every request (GRANTRY_REQUEST_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may take to finish on shutdown (GRANTRY_SHUTDOWN_TIMEOUT)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "requests a second allowed per API key or SCIM token; 0 = no limit (GRANTRY_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "requests allowed at once per API key or SCIM token; 0 = one second's worth (GRANTRY_RATE_BURST)")
}

// validateOperations reports what is wrong with the operational settings.
func (c Config) validateOperations() []error {
	var errs []error
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("GRANTRY_REQUEST_TIMEOUT must be a positive duration such as 5s or 500ms"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("GRANTRY_SHUTDOWN_TIMEOUT must be a positive duration such as 15s"))
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		errs = append(errs, errors.New("GRANTRY_RATE_LIMIT must be a number of requests a second, 0 or more (0 = no limit)"))
	}
	if c.RateBurst < 0 {
		errs = append(errs, errors.New("GRANTRY_RATE_BURST must be a whole number of requests, 0 or more (0 = one second's worth)"))
	}
	return errs
}

// readBool sets *dst from the boolean variable name when it is set (strconv.ParseBool). A value
// that does not parse leaves *dst as it was and is kept for Validate, which reports it by name.
func (c *Config) readBool(getenv func(string) string, name string, dst *bool) {
	if v := getenv(name); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.unparsed = append(c.unparsed, fmt.Errorf("%s must be true or false", name))
			return
		}
		*dst = b
	}
}

// readInt sets *dst from the variable name when it is set. A value that does not parse becomes
// -1, which every whole-number setting refuses, so that Validate reports it by name.
func readInt(getenv func(string) string, name string, dst *int) {
	if v := getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			n = -1
		}
		*dst = n
	}
}
