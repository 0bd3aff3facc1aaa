package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// profileCmd is `grantry-bench profile`, what `make pgo` runs: it seeds make bench's workload,
// starts Grantry (a binary built with -tags cpuprofile) with GRANTRY_CPU_PROFILE set, drives it
// with make bench's checks and then its grants and revokes, as `run` does, stops it and writes
// the CPU profile of its whole life to -out: the profile go build optimizes the binary for.
func profileCmd(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	var hf harnessFlags
	fs, err := hf.flagSet("profile", getenv, stderr)
	if err != nil {
		return err
	}
	out := fs.String("out", filepath.Join("cmd", "grantry", "default.pgo"), "where to write the profile")
	h, dir, cleanup, err := hf.setUp(fs, args, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	p := defaultParams()
	if _, err := seedAll(ctx, dir, p, seedWhat{grantry: true}, stderr); err != nil {
		return err
	}
	recorded := filepath.Join(dir, "grantry.pprof")
	h.env = append(h.env, "GRANTRY_CPU_PROFILE="+recorded)
	pl := h.placements()[0]
	fmt.Fprintf(stderr, "grantry, %s, recording its CPU profile:\n", pl.name)
	if _, err := h.measure(ctx, systemGrantry, []string{targetGrantry, targetWrites}, pl, dir, p); err != nil {
		return err
	}
	profile, err := os.ReadFile(recorded)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(profile) == 0 {
		return fmt.Errorf("%s wrote no profile: build it with -tags cpuprofile (make pgo does)", hf.grantry)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, profile, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes)\n", *out, len(profile))
	return nil
}
