package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ceilingCmd is `grantry-bench ceiling`: the least any server can do for a check — decode the same
// JSON body with encoding/json and answer true — served by a bare net/http server. Its figures are
// the ceiling Grantry's are compared with.
func ceilingCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("ceiling: %w", err)
	}
	hs := &http.Server{Handler: ceilingHandler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("ceiling: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ceiling: %w", err)
	}
	return nil
}

// ceilingHandler answers every POST whose body is a JSON object with true, and GET /healthz
// with 200 so that the harness knows it is up.
func ceilingHandler() http.Handler {
	answer := []byte("true")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			return
		}
		var req struct {
			UserID string `json:"user_id"`
			SvcID  string `json:"svc_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "body is not a JSON object", http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
}
