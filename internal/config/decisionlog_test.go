package config

import (
	"strings"
	"testing"
)

func TestDecisionLogDays(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    int
		wantErr bool
	}{
		{"default", "", DefaultDecisionLogDays, false},
		{"set", "7", 7, false},
		{"one day", "1", 1, false},
		{"zero", "0", 0, true},
		{"negative", "-3", -3, true},
		{"not a number", "thirty", -1, true},
		{"a duration is not days", "30d", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := FromEnv(env(map[string]string{"GRANTRY_DECISION_LOG_DAYS": tt.value}))
			if c.DecisionLogDays != tt.want {
				t.Errorf("DecisionLogDays = %d, want %d", c.DecisionLogDays, tt.want)
			}
			err := c.Validate()
			if got := err != nil && strings.Contains(err.Error(), "GRANTRY_DECISION_LOG_DAYS"); got != tt.wantErr {
				t.Errorf("Validate() = %v; want an error about GRANTRY_DECISION_LOG_DAYS: %v", err, tt.wantErr)
			}
		})
	}
}
