package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/internal/config"
	"github.com/grantry/grantry/internal/jsonlog"
	"github.com/grantry/grantry/internal/logbuf"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/mongo"
)

const usage = `usage:
  grantry serve [flags]              start the service
  grantry org create NAME            create an organization and its first API key
  grantry org list                   list organizations
  grantry apikey create ORG_ID [--scope admin|manage|check]
                                     add an API key to an organization (default scope: admin)
  grantry apikey revoke KEY_ID       revoke an API key
  grantry scim-token rotate ORG_ID INTEGRATION_ID
                                     give a SCIM integration a new token (the old one is refused)
  grantry scim-token revoke ORG_ID INTEGRATION_ID
                                     leave a SCIM integration without a token
  grantry secrets rotate             re-seal every stored third-party secret under GRANTRY_SECRET_KEY
  grantry healthcheck                exit 0 if the service at GRANTRY_ADDR answers /healthz
  grantry policy test DIR            run the Rego tests of a policy folder; fail if any fails
  grantry version                    print the version, the revision and the Go version
Run "grantry COMMAND -h" for a command's usage and flags; every setting is also a GRANTRY_* variable.`

// run is the whole program, minus the process: tests call it with their own arguments,
// environment and output. A command asked for its usage (-h, --help) prints it to stdout and
// succeeds.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := command(ctx, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "org", "apikey", "scim-token":
		return admin(ctx, args, getenv, stdout)
	case "secrets":
		return secrets(ctx, args[1:], getenv, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, args[1:], getenv, stdout)
	case "policy":
		return policyCommand(ctx, args[1:], stdout)
	case "version":
		return version(args[1:], stdout)
	case "help", "-h", "--h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := settings("serve", serveUsage, args, getenv, stdout)
	if err != nil {
		return err
	}
	log, lines := newLogger(stderr, cfg.LogLevel)
	defer lines.Close()
	log.Info("starting", "config", cfg, "gogc", tuneGC(getenv))

	engine, err := loadPolicy(ctx, cfg.PolicyDir)
	if err != nil {
		return err
	}
	log.Info("policy loaded", "revision", engine.Revision(), "dir", cfg.PolicyDir)

	sealer, err := openSealer(cfg, log)
	if err != nil {
		return err
	}

	store, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	// Closed last, after everything added below, which may write to it.
	cs := &closers{log: log}
	defer cs.closeAll() // on the error paths; after a shutdown there is nothing left to close
	cs.add("store", store.Close)
	raw := store
	store = audit.New(store, time.Now, log)
	decisions := startDecisionLog(ctx, store, cfg.DecisionLog, cfg.DecisionLogDays, log, cs)
	live := policy.NewLive(engine)
	cs.add("policy watcher", watchPolicy(ctx, live, cfg.PolicyDir, log))

	key, err := api.Bootstrap(ctx, store, cfg.BootstrapAPIKey, time.Now())
	if errors.Is(err, api.ErrBootstrapKeyRevoked) {
		// An operator revoked it: bringing it back at every restart would undo that.
		log.Warn(err.Error())
		err = nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if key != "" {
		_ = lines.Flush() // the lines logged so far come before the key
		// The one time a key is ever printed: CONTRACT.md asks for it on a first start.
		fmt.Fprintf(stderr, "\nGrantry created organization %q with this API key, shown only this once; keep it now: %s\n\n", api.DefaultOrg, key)
	}

	// Every write goes through the engine's store, which keeps what the engine holds right;
	// other processes' writes arrive through the change feed.
	eng := authz.New(authz.Config{Store: store, Policies: live, Logger: log, MaxUsers: maxUsers(cfg.CacheEntries), Shared: cfg.MongoURI != ""})
	srv := api.New(api.Config{Store: eng.Store(), Decider: eng, Decisions: recorder(decisions), Logger: log, AdminToken: cfg.AdminToken,
		RequestTimeout: cfg.RequestTimeout, RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst,
		Integrations: integrations(cfg.Integrations, sealer), GatewayMaxBody: int64(cfg.Gateway.MaxBody)})
	if err := startGateway(cfg.Gateway, srv, log, cs); err != nil {
		return err
	}
	if err := exposeMetrics(srv, decisions, live, raw); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	watchChanges(ctx, store, eng, log, cs)
	readIn(ctx, eng, log, cs)
	startGrantCleanup(ctx, eng.Store(), log, cs)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := newHTTPServer(srv, cfg.RequestTimeout, log)
	// What net/http refuses itself (headers over maxHeaderBytes) is answered in JSON too.
	return serveUntilDone(ctx, log, hs, api.JSONErrors(ln), srv.SetReady, cfg.ShutdownTimeout, cs)
}

func loadPolicy(ctx context.Context, dir string) (*policy.Engine, error) {
	mods := policy.Embedded()
	if dir != "" {
		var err error
		if mods, err = policy.LoadDir(dir); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	// A folder's policy passes its own tests before it serves, as on every reload; the
	// embedded one passed them in make test.
	load := policy.Load
	if dir == "" {
		load = policy.New
	}
	engine, err := load(ctx, mods)
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

// settings reads the settings from the environment, then the flags of the command called
// name, and checks them. -h prints usage and the flags to stdout.
func settings(name, usage string, args []string, getenv func(string) string, stdout io.Writer) (config.Config, error) {
	cfg := config.FromEnv(getenv)
	fs := newFlags(name)
	cfg.RegisterFlags(fs)
	rest, err := parse(fs, args, usage, stdout)
	if err != nil {
		return cfg, err
	}
	if len(rest) > 0 {
		return cfg, fmt.Errorf("unexpected argument %q\nrun \"grantry %s -h\" for usage", rest[0], name)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid settings:\n%w", err)
	}
	return cfg, nil
}

func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (storage.Store, error) {
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if cfg.MongoURI != "" {
		s, err := mongo.Open(openCtx, cfg.MongoURI, cfg.MongoDB)
		if err != nil {
			return nil, fmt.Errorf("open MongoDB store: %w", err)
		}
		return s, nil
	}
	path := filepath.Join(cfg.DataDir, "grantry.db")
	s, err := bolt.Open(openCtx, path, storeOptions(cfg, path, log)...)
	if err != nil {
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	return s, nil
}

// gcPercent is the garbage collector's goal, GOGC, unless the environment sets one. The check
// path's cache keeps a large live heap that barely changes, which Go's default of 100 marks
// again each time the heap doubles; 200 spends less CPU on it, for a heap that may grow to
// three times the live data instead of two (docs/operations.md has the figures).
const gcPercent = 200

// tuneGC sets the garbage collector's goal to gcPercent unless GOGC is set, and returns the
// goal in force.
func tuneGC(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(gcPercent)
	return strconv.Itoa(gcPercent)
}

// newLogger logs records of level and above as JSON (slog.JSONHandler's lines, written faster
// by jsonlog), or as text when a person is watching the terminal, to w through the returned
// logbuf.Writer, which the caller closes last: lines below warning level reach w up to 100 ms
// late, in batches, so that logging every request costs few writes.
func newLogger(w io.Writer, level slog.Level) (*slog.Logger, *logbuf.Writer) {
	lines := logbuf.New(w)
	var h slog.Handler = jsonlog.New(lines, level)
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			h = slog.NewTextHandler(lines, &slog.HandlerOptions{Level: level})
		}
	}
	return slog.New(logbuf.Deferred(h, lines)), lines
}

// maxUsers turns GRANTRY_CACHE_ENTRIES, where 0 means hold nothing, into authz.Config's
// MaxUsers, where 0 means the default and a negative number nothing.
func maxUsers(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// readIn reads every user and group into the engine's memory in the background, while the
// server already answers (from the store, meanwhile), and logs what it held. Failing costs only
// speed: questions then load what they need.
func readIn(ctx context.Context, eng *authz.Engine, log *slog.Logger, cs *closers) {
	cs.goUntilStop(ctx, "read-in", func(ctx context.Context) {
		start := time.Now()
		read, err := eng.ReadIn(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Warn("users and groups not read into memory; questions read them from the store as they come", "error", err)
		default:
			log.Info("users and groups read into memory", "users", read.Users, "groups", read.Groups,
				"written_meanwhile", read.Skipped, "every_user", !read.Full, "took", time.Since(start).Round(time.Millisecond).String())
		}
	})
}
