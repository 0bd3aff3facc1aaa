package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Watch keeps l running the .rego files below dir until ctx ends. It reloads them whenever
// reload receives (the service sends SIGHUP there), and when they change: it looks at the
// files' names, sizes and modification times every interval, and reloads once a change has
// held still for one more look, so that a folder caught mid-copy is not loaded half-written.
// Every reload goes through Replace: a policy that does not compile or fails its own tests is
// logged and counted, and the running one stays. Files that fail once are not tried again
// until they change again or reload receives.
func (l *Live) Watch(ctx context.Context, dir string, interval time.Duration, reload <-chan struct{}, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// loaded sums up the files last loaded. It starts unknown, so that the first looks load the
	// files once more: they may have changed since the running policy was read from them.
	loaded, pending := "", ""
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			loaded, _ = fingerprint(dir)
			pending = ""
			l.reloadDir(ctx, dir, "signal", log)
		case <-tick.C:
			fp, err := fingerprint(dir)
			if err != nil {
				fp = "error: " + err.Error()
			}
			switch {
			case fp == loaded:
				pending = ""
			case fp != pending:
				pending = fp // changed: wait for it to hold still
			default:
				loaded, pending = fp, ""
				l.reloadDir(ctx, dir, "change", log)
			}
		}
	}
}

// reloadDir reads dir and replaces the running policy with it, logging the outcome.
func (l *Live) reloadDir(ctx context.Context, dir, trigger string, log *slog.Logger) {
	old := l.Revision()
	mods, err := LoadDir(dir)
	if err != nil {
		l.failed.Add(1)
		log.Error("policy reload failed; the running policy stays", "trigger", trigger, "revision", old, "error", err.Error())
		return
	}
	e, err := l.Replace(ctx, mods)
	switch {
	case errors.Is(err, ErrUnchanged):
		// Someone who sent a signal wants an answer; a look that found nothing new does not.
		level := slog.LevelDebug
		if trigger == "signal" {
			level = slog.LevelInfo
		}
		log.Log(ctx, level, "policy unchanged", "trigger", trigger, "revision", old)
	case err != nil:
		log.Error("policy reload failed; the running policy stays", "trigger", trigger, "dir", dir, "revision", old, "error", err.Error())
	default:
		log.Info("policy reloaded", "trigger", trigger, "dir", dir, "previous_revision", old, "revision", e.Revision())
	}
}

// fingerprint sums up the names, sizes and modification times of the .rego files below dir,
// as LoadDir finds them. It follows symbolic links, so that swapping the folder a link points
// to (as Kubernetes updates a mounted ConfigMap) is a change.
func fingerprint(dir string) (string, error) {
	h := sha256.New()
	err := walkRego(dir, func(path string) error {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", path, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
