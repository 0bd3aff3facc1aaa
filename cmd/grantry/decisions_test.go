package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecisionLogSetting checks GRANTRY_DECISION_LOG end to end: on, a check's decision is
// stored by the time serve has stopped, and the log's counters are on /metrics; off, neither.
func TestDecisionLogSetting(t *testing.T) {
	tests := []struct {
		name    string
		value   string // "" = not set
		logged  int
		metrics bool
	}{
		{"default", "", 1, true},
		{"on", "true", 1, true},
		{"off", "false", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"GRANTRY_DATA_DIR": dir, "GRANTRY_BOOTSTRAP_API_KEY": "boot-key"}
			if tt.value != "" {
				env["GRANTRY_DECISION_LOG"] = tt.value
			}
			url := ""
			call := func(method, path string, body any) string {
				t.Helper()
				return string(mustSend(t, method, url+path, "boot-key", body))
			}

			url, _, stop := startServer(t, env)
			var model struct{ Model struct{ ID string } }
			json.Unmarshal([]byte(call("POST", "/llm_integration/custom_model", map[string]string{"model_name": "gpt"})), &model)
			if got := call("POST", "/provisions/can_user_access", map[string]string{"user_id": "ada", "svc_id": model.Model.ID}); got != "false" {
				t.Fatalf("check = %s, want false", got)
			}
			if got := strings.Contains(call("GET", "/metrics", nil), "grantry_decision_log_written_total"); got != tt.metrics {
				t.Errorf("/metrics has the decision log's counters: %v, want %v", got, tt.metrics)
			}
			if err := stop(); err != nil { // flushes the log, if on
				t.Fatal(err)
			}

			// What the store kept, read by a server started afresh with the defaults.
			delete(env, "GRANTRY_DECISION_LOG")
			url, _, _ = startServer(t, env)
			var logged struct {
				Decisions []struct {
					UserID string `json:"user_id"`
					Result bool   `json:"result"`
				}
			}
			json.Unmarshal([]byte(call("GET", "/audit/decisions", nil)), &logged)
			if len(logged.Decisions) != tt.logged {
				t.Fatalf("the decision log holds %d decisions, want %d: %+v", len(logged.Decisions), tt.logged, logged)
			}
			if tt.logged > 0 && (logged.Decisions[0].UserID != "ada" || logged.Decisions[0].Result) {
				t.Errorf("logged %+v, want ada's denied check", logged.Decisions[0])
			}
		})
	}
}
