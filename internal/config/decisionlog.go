package config

import (
	"errors"
	"flag"
)

// DefaultDecisionLogDays is how many days decisions are kept when GRANTRY_DECISION_LOG_DAYS is
// not set.
const DefaultDecisionLogDays = 30

// DefaultDecisionLog is whether checks are logged when GRANTRY_DECISION_LOG is not set.
const DefaultDecisionLog = true

// readDecisionLog reads GRANTRY_DECISION_LOG and GRANTRY_DECISION_LOG_DAYS. A value that does
// not parse becomes -1, or is kept for Validate (readBool), which reports it by the variable's
// name.
func (c *Config) readDecisionLog(getenv func(string) string) {
	c.readBool(getenv, "GRANTRY_DECISION_LOG", &c.DecisionLog)
	readInt(getenv, "GRANTRY_DECISION_LOG_DAYS", &c.DecisionLogDays)
}

func (c *Config) registerDecisionLogFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.DecisionLog, "decision-log", c.DecisionLog, "log every check's decision in the store, listed by GET /audit/decisions (GRANTRY_DECISION_LOG)")
	fs.IntVar(&c.DecisionLogDays, "decision-log-days", c.DecisionLogDays, "days the decision log keeps each decision (GRANTRY_DECISION_LOG_DAYS)")
}

// validateDecisionLog reports what is wrong with the decision log's settings.
func (c Config) validateDecisionLog() []error {
	if c.DecisionLogDays < 1 {
		return []error{errors.New("GRANTRY_DECISION_LOG_DAYS must be a whole number of days, 1 or more")}
	}
	return nil
}
