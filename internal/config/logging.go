package config

import (
	"errors"
	"flag"
	"log/slog"
)

// DefaultLogLevel is the least severe level logged when GRANTRY_LOG_LEVEL is not set: info, the
// level of the access log's line a request and of the start-up and shutdown lines.
const DefaultLogLevel = slog.LevelInfo

// readLogging reads GRANTRY_LOG_LEVEL: debug, info, warn or error, in any case, as
// slog.Level parses it. A value that does not parse is kept as not understood, and Validate
// reports it by the variable's name.
func (c *Config) readLogging(getenv func(string) string) {
	if v := getenv("GRANTRY_LOG_LEVEL"); v != "" {
		c.logLevelInvalid = c.LogLevel.UnmarshalText([]byte(v)) != nil
	}
}

func (c *Config) registerLoggingFlags(fs *flag.FlagSet) {
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "least severe level logged: debug, info, warn or error; warn drops the access log (GRANTRY_LOG_LEVEL)")
}

// validateLogging reports what is wrong with the logging settings.
func (c Config) validateLogging() []error {
	if c.logLevelInvalid {
		return []error{errors.New("GRANTRY_LOG_LEVEL must be debug, info, warn or error")}
	}
	return nil
}
