package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLogLevelWarn runs serve with GRANTRY_LOG_LEVEL=warn: its warnings are logged (a first
// start without GRANTRY_SECRET_KEY warns of the key file it made), its info lines are not —
// neither the start-up lines nor an access line a request.
func TestLogLevelWarn(t *testing.T) {
	addr := unusedAddr(t)
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_ADDR": addr, "GRANTRY_LOG_LEVEL": "warn"}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		log := stderr.String()
		if !strings.Contains(log, `"level":"WARN"`) {
			t.Errorf("no warning logged:\n%s", log)
		}
		if strings.Contains(log, `"level":"INFO"`) {
			t.Errorf("info lines logged at GRANTRY_LOG_LEVEL=warn:\n%s", log)
		}
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return // one request answered, and logged or not
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /healthz within a minute:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
