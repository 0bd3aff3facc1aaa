package config

import (
	"log/slog"
	"strings"
	"testing"
)

func TestLogLevel(t *testing.T) {
	tests := []struct {
		value   string // "" = not set
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"info", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"WARN", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"loud", slog.LevelInfo, true},
		{"warning", slog.LevelInfo, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c := FromEnv(env(map[string]string{"GRANTRY_LOG_LEVEL": tt.value}))
			if c.LogLevel != tt.want {
				t.Errorf("LogLevel = %v, want %v", c.LogLevel, tt.want)
			}
			err := c.Validate()
			if got := err != nil && strings.Contains(err.Error(), "GRANTRY_LOG_LEVEL"); got != tt.wantErr {
				t.Errorf("Validate() = %v; want an error about GRANTRY_LOG_LEVEL: %v", err, tt.wantErr)
			}
		})
	}
}
