package config

import (
	"strings"
	"testing"
)

func TestDecisionLogSettings(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantLog  bool
		wantDays int
		wantErr  string // the variable an error names; "" = valid
	}{
		{"defaults", nil, DefaultDecisionLog, DefaultDecisionLogDays, ""},
		{"days set", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "7"}, true, 7, ""},
		{"one day", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "1"}, true, 1, ""},
		{"zero days", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "0"}, true, 0, "GRANTRY_DECISION_LOG_DAYS"},
		{"negative days", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "-3"}, true, -3, "GRANTRY_DECISION_LOG_DAYS"},
		{"days not a number", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "thirty"}, true, -1, "GRANTRY_DECISION_LOG_DAYS"},
		{"a duration is not days", map[string]string{"GRANTRY_DECISION_LOG_DAYS": "30d"}, true, -1, "GRANTRY_DECISION_LOG_DAYS"},
		{"off", map[string]string{"GRANTRY_DECISION_LOG": "false"}, false, DefaultDecisionLogDays, ""},
		{"off as a number", map[string]string{"GRANTRY_DECISION_LOG": "0"}, false, DefaultDecisionLogDays, ""},
		{"on", map[string]string{"GRANTRY_DECISION_LOG": "true"}, true, DefaultDecisionLogDays, ""},
		{"off, days kept for what was logged", map[string]string{"GRANTRY_DECISION_LOG": "false", "GRANTRY_DECISION_LOG_DAYS": "2"}, false, 2, ""},
		{"not a boolean", map[string]string{"GRANTRY_DECISION_LOG": "off"}, DefaultDecisionLog, DefaultDecisionLogDays, "GRANTRY_DECISION_LOG must"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := FromEnv(env(tt.env))
			if c.DecisionLog != tt.wantLog || c.DecisionLogDays != tt.wantDays {
				t.Errorf("DecisionLog, DecisionLogDays = %v, %d; want %v, %d", c.DecisionLog, c.DecisionLogDays, tt.wantLog, tt.wantDays)
			}
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error about %s", err, tt.wantErr)
			}
		})
	}
}
