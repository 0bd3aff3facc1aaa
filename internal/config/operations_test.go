package config

import (
	"strings"
	"testing"
	"time"
)

func TestOperationSettings(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    func(c Config) bool
		wantErr string // a variable Validate must name, or "" for valid settings
	}{
		{"defaults", nil, func(c Config) bool {
			return c.RequestTimeout == 5*time.Second && c.ShutdownTimeout == 15*time.Second && c.RateLimit == 0 && c.RateBurst == 0
		}, ""},
		{"set", map[string]string{"GRANTRY_REQUEST_TIMEOUT": "250ms", "GRANTRY_SHUTDOWN_TIMEOUT": "1m", "GRANTRY_RATE_LIMIT": "12.5", "GRANTRY_RATE_BURST": "40"},
			func(c Config) bool {
				return c.RequestTimeout == 250*time.Millisecond && c.ShutdownTimeout == time.Minute && c.RateLimit == 12.5 && c.RateBurst == 40
			}, ""},
		{"rate limit off explicitly", map[string]string{"GRANTRY_RATE_LIMIT": "0"}, func(c Config) bool { return c.RateLimit == 0 }, ""},
		{"timeout without a unit", map[string]string{"GRANTRY_REQUEST_TIMEOUT": "5"}, nil, "GRANTRY_REQUEST_TIMEOUT"},
		{"zero timeout", map[string]string{"GRANTRY_SHUTDOWN_TIMEOUT": "0s"}, nil, "GRANTRY_SHUTDOWN_TIMEOUT"},
		{"negative timeout", map[string]string{"GRANTRY_REQUEST_TIMEOUT": "-1s"}, nil, "GRANTRY_REQUEST_TIMEOUT"},
		{"rate not a number", map[string]string{"GRANTRY_RATE_LIMIT": "fast"}, nil, "GRANTRY_RATE_LIMIT"},
		{"rate infinite", map[string]string{"GRANTRY_RATE_LIMIT": "Inf"}, nil, "GRANTRY_RATE_LIMIT"},
		{"negative rate", map[string]string{"GRANTRY_RATE_LIMIT": "-3"}, nil, "GRANTRY_RATE_LIMIT"},
		{"burst not whole", map[string]string{"GRANTRY_RATE_BURST": "2.5"}, nil, "GRANTRY_RATE_BURST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := FromEnv(env(tc.env))
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if !tc.want(c) {
					t.Errorf("settings = %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
