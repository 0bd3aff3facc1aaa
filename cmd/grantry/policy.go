package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/grantry/grantry/policy"
)

// policyCommand runs `grantry policy test DIR`: it compiles the .rego files below DIR, runs
// their tests, prints each result, and fails when the folder is not a policy Grantry could
// serve (it does not compile, or lacks allow or allow_all), has no tests, or any test fails:
// the gate a policy repository's CI can run. It is stricter than a reload, which also loads
// a folder without tests (nothing failed); a policy repository is expected to have some.
func policyCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, policyUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "test" {
		return errors.New(policyUsage)
	}
	rest, err := parse(newFlags("policy test"), args[1:], policyUsage, stdout)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errors.New(policyUsage)
	}
	dir := rest[0]
	mods, err := policy.LoadDir(dir)
	if err != nil {
		return err
	}
	results, err := policy.Test(ctx, mods)
	if err != nil {
		return fmt.Errorf("policy in %s: %w", dir, err)
	}
	failed := 0
	for _, r := range results {
		switch {
		case r.Passed:
			fmt.Fprintf(stdout, "PASS %s (%s)\n", r.Name, r.Duration.Round(time.Microsecond))
		case r.Err != nil:
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %v\n", r.Name, r.Err)
		default:
			failed++
			fmt.Fprintf(stdout, "FAIL %s\n", r.Name)
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed; revision %s\n", len(results)-failed, failed, policy.Revision(mods))
	if _, err := policy.New(ctx, mods); err != nil {
		return fmt.Errorf("policy in %s cannot serve Grantry: %w", dir, err)
	}
	switch {
	case len(results) == 0:
		return fmt.Errorf("policy in %s has no tests (test_* rules in *_test.rego files)", dir)
	case failed > 0:
		return fmt.Errorf("policy in %s: %d of %d tests failed", dir, failed, len(results))
	}
	return nil
}

// policyPollInterval is how often the policy folder is looked at for changed files.
const policyPollInterval = time.Second

// watchPolicy keeps live in step with dir: it reloads on SIGHUP and when the files change.
// Without a dir, SIGHUP is still caught, and logged, so that it never ends the process as it
// would by default. It stops when ctx ends or the returned function is called.
func watchPolicy(ctx context.Context, live *policy.Live, dir string, log *slog.Logger) (stop func(context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{})
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			if dir == "" {
				log.Warn("SIGHUP ignored: the embedded policy is running (set GRANTRY_POLICY_DIR to reload a policy)")
				continue
			}
			select {
			case reload <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	if dir != "" {
		go live.Watch(ctx, dir, policyPollInterval, reload, log)
	}
	return func(context.Context) error { cancel(); return nil }
}
