package config

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	got := FromEnv(env(map[string]string{
		"GRANTRY_ADDR":        "0.0.0.0:9000",
		"GRANTRY_MONGO_URI":   "mongodb://db:27017",
		"GRANTRY_ADMIN_TOKEN": "admin-token",
		"GRANTRY_POLICY_DIR":  "/etc/grantry/policy",
	}))
	want := Default()
	want.Addr, want.MongoURI, want.AdminToken, want.PolicyDir = "0.0.0.0:9000", "mongodb://db:27017", "admin-token", "/etc/grantry/policy"
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("FromEnv (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestFlagsOverrideEnv sets each group of settings by environment, then by flags, which win.
func TestFlagsOverrideEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want func(*Config) // what the flags change of the settings from env
	}{
		{"address and data", map[string]string{"GRANTRY_ADDR": "127.0.0.1:1"}, []string{"--addr", "127.0.0.1:2", "--data-dir", "/tmp/x"},
			func(c *Config) { c.Addr, c.DataDir = "127.0.0.1:2", "/tmp/x" }},
		{"operations", map[string]string{"GRANTRY_RATE_LIMIT": "5", "GRANTRY_REQUEST_TIMEOUT": "1s"},
			[]string{"--rate-limit", "7", "--rate-burst", "3", "--request-timeout", "2s", "--shutdown-timeout", "30s"},
			func(c *Config) {
				c.RateLimit, c.RateBurst, c.RequestTimeout, c.ShutdownTimeout = 7, 3, 2*time.Second, 30*time.Second
			}},
		{"cache", map[string]string{"GRANTRY_CACHE_ENTRIES": "5000", "GRANTRY_PRELOAD": "true"}, []string{"--cache-entries", "7", "--preload=false"},
			func(c *Config) { c.CacheEntries, c.Preload = 7, false }},
		{"decision log", map[string]string{"GRANTRY_DECISION_LOG": "true", "GRANTRY_DECISION_LOG_DAYS": "9"}, []string{"--decision-log=false", "--decision-log-days", "3"},
			func(c *Config) { c.DecisionLog, c.DecisionLogDays = false, 3 }},
		{"log level", map[string]string{"GRANTRY_LOG_LEVEL": "debug"}, []string{"--log-level", "error"},
			func(c *Config) { c.LogLevel = slog.LevelError }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := FromEnv(env(tt.env))
			want := c
			tt.want(&want)
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			c.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, c, cmp.AllowUnexported(Config{})); diff != "" {
				t.Errorf("after %v (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestFlagsRefuseWhatEnvWould(t *testing.T) {
	c := Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	for _, args := range [][]string{{"--log-level", "loud"}, {"--preload=sometimes"}, {"--cache-entries", "many"}} {
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}

func TestSecretsAreNotFlags(t *testing.T) {
	c := Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if fs.Lookup("admin-token") != nil || fs.Lookup("secret-key") != nil || fs.Lookup("bootstrap-api-key") != nil {
		t.Error("secrets must not be flags (they would show in ps)")
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Addr = "nonsense"
	c.MongoDB = "a.b"
	c.SecretKey = "bm90IDMyIGJ5dGVz"
	c.AdminToken = "has space"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate passed bad settings")
	}
	for _, want := range []string{"GRANTRY_ADDR", "GRANTRY_MONGO_DB", "GRANTRY_SECRET_KEY", "GRANTRY_ADMIN_TOKEN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "has space") || strings.Contains(err.Error(), c.SecretKey) {
		t.Errorf("Validate error %q shows a secret", err)
	}
}

func TestMasterKey(t *testing.T) {
	c := Default()
	if k, err := c.MasterKey(); k != nil || err != nil {
		t.Errorf("empty setting: %v, %v", k, err)
	}
	// A key read from a mounted secret file often ends with a newline, as the key file does.
	for _, text := range []string{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"} {
		c.SecretKey = text
		k, err := c.MasterKey()
		if err != nil || len(k) != 32 || k[31] != 31 {
			t.Errorf("MasterKey(%q) = %v, %v", text, k, err)
		}
	}
	c.SecretKey = "AAECAw=="
	if k, err := c.MasterKey(); err == nil || !strings.Contains(err.Error(), "GRANTRY_SECRET_KEY") {
		t.Errorf("MasterKey of 4 bytes = %v, %v; want an error naming the variable", k, err)
	}
}

func TestLogValueHidesSecrets(t *testing.T) {
	c := Default()
	c.AdminToken, c.BootstrapAPIKey, c.SecretKey = "admin-secret-1", "gry_bootstrap-secret", "c2VjcmV0LWtleS1zZWNyZXQta2V5LXNlY3JldC1rZXk="
	c.MongoURI = "mongodb://user:pw-secret@db/"
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "config", c)
	for _, secret := range []string{"admin-secret-1", "bootstrap-secret", c.SecretKey, "pw-secret"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("log line %s shows %q", buf.String(), secret)
		}
	}
	if !strings.Contains(buf.String(), `"admin_api":true`) {
		t.Errorf("log line %s does not say the admin API is on", buf.String())
	}
}
