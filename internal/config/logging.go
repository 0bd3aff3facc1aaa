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
// slog.Level parses it. A value that does not parse is kept for Validate, which reports it by
// the variable's name.
func (c *Config) readLogging(getenv func(string) string) {
	if v := getenv("GRANTRY_LOG_LEVEL"); v != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(v)); err != nil {
			c.unparsed = append(c.unparsed, errors.New("GRANTRY_LOG_LEVEL must be debug, info, warn or error"))
			return
		}
		c.LogLevel = level
	}
}

func (c *Config) registerLoggingFlags(fs *flag.FlagSet) {
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "least severe level logged: debug, info, warn or error; warn drops the access log (GRANTRY_LOG_LEVEL)")
}
