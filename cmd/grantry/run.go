package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/config"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/mongo"
)

const usage = `usage:
  grantry serve [flags]              start the service
  grantry org create NAME            create an organization and its first API key
  grantry org list                   list organizations
  grantry apikey create ORG_ID       add an API key to an organization
  grantry apikey revoke KEY_ID       revoke an API key
Run "grantry serve -h" for the flags; every setting is also a GRANTRY_* variable.`

// run is the whole program, minus the process: tests call it with their own arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "org", "apikey":
		return admin(ctx, args, getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// shutdownTimeout is how long in-flight requests may take to finish once shutdown begins.
const shutdownTimeout = 15 * time.Second

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg := config.FromEnv(getenv)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid settings:\n%w", err)
	}
	log := newLogger(stderr)
	log.Info("starting", "config", cfg)

	engine, err := loadPolicy(ctx, cfg.PolicyDir)
	if err != nil {
		return err
	}
	log.Info("policy loaded", "revision", engine.Revision(), "dir", cfg.PolicyDir)

	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := store.Close(closeCtx); err != nil {
			log.Error("close store", "error", err.Error())
		}
	}()

	key, err := api.Bootstrap(ctx, store, cfg.BootstrapAPIKey, time.Now())
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if key != "" {
		// The one time a key is ever printed: CONTRACT.md asks for it on a first start.
		fmt.Fprintf(stderr, "\nGrantry created organization %q with this API key, shown only this once; keep it now: %s\n\n", api.DefaultOrg, key)
	}

	srv := api.New(api.Config{Store: store, Decider: engine, Logger: log, AdminToken: cfg.AdminToken})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	srv.SetReady(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

func loadPolicy(ctx context.Context, dir string) (*policy.Engine, error) {
	mods := policy.Embedded()
	if dir != "" {
		var err error
		if mods, err = policy.LoadDir(dir); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	engine, err := policy.New(ctx, mods)
	if err != nil {
		return nil, fmt.Errorf("policy in %s: %w", policySource(dir), err)
	}
	return engine, nil
}

func policySource(dir string) string {
	if dir == "" {
		return "the embedded policy"
	}
	return dir
}

func openStore(ctx context.Context, cfg config.Config) (storage.Store, error) {
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if cfg.MongoURI != "" {
		s, err := mongo.Open(openCtx, cfg.MongoURI, cfg.MongoDB)
		if err != nil {
			return nil, fmt.Errorf("open MongoDB store: %w", err)
		}
		return s, nil
	}
	s, err := bolt.Open(openCtx, filepath.Join(cfg.DataDir, "grantry.db"))
	if err != nil {
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	return s, nil
}

// newLogger logs JSON, or text when a person is watching the terminal.
func newLogger(w io.Writer) *slog.Logger {
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return slog.New(slog.NewTextHandler(w, nil))
		}
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}
