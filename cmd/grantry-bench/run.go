package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// runCmd is `grantry-bench run`, what `make bench` runs: seed one workload, then for each
// placement (pinned, unpinned) start the ceiling, OPA's server and Grantry one after another —
// never two at once, so that none disturbs another's CPU — load each for the given runs, and
// print one table. In the first placement it also measures Grantry's writes, and its checks
// with its decision log and access log off.
func runCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var hf harnessFlags
	fs, err := hf.flagSet("run", getenv, stderr)
	if err != nil {
		return err
	}
	opa := fs.String("opa", "bin/opa", "the opa binary (go build -o bin/opa github.com/open-policy-agent/opa)")
	writes := fs.Bool("writes", true, "also measure grant/revoke on Grantry")
	logsOff := fs.Bool("logs-off", true, "also measure Grantry's checks logging as OPA's server does here: no decision log, no access log (first placement only)")
	p := defaultParams()
	p.register(fs)
	h, dir, cleanup, err := hf.setUp(fs, args, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	if h.opa, err = binary(*opa); err != nil {
		return err
	}

	seeded, err := seedAll(ctx, dir, p, true, stderr)
	if err != nil {
		return err
	}
	var all []series
	for i, pl := range h.placements() {
		// Forward-auth is measured on the same server, in the same runs, as can_user_access.
		grantryTargets := []string{targetGrantry, targetForwardAuth}
		if *writes && i == 0 {
			// Writes are measured once, pinned, to keep `make bench` short; they wait on fsync as
			// well as on the CPU.
			grantryTargets = append(grantryTargets, targetWrites)
		}
		// The three are measured in turn, run by run (interleave); the logs-off Grantry, which
		// opens the same store, after them.
		s, err := h.measureAll(ctx, []measured{
			{systemCeiling, []string{targetCeiling}, dir, p},
			{systemOPA, []string{targetOPA}, dir, p},
			{systemGrantry, grantryTargets, dir, p},
		}, pl)
		if err != nil {
			return err
		}
		all = append(all, s...)
		if *logsOff && i == 0 {
			s, err := h.measure(ctx, systemGrantryLogsOff, []string{targetGrantry}, pl, dir, p)
			if err != nil {
				return err
			}
			all = append(all, s...)
		}
	}
	rep := report{
		machine:  machine(h.opa),
		workload: p,
		seeded:   seeded,
		h:        h,
		series:   all,
	}
	rep.write(stdout)
	if err := hf.saveResults(rep.results(), stderr); err != nil {
		return err
	}
	if hf.keep || hf.dir != "" {
		fmt.Fprintf(stderr, "work folder kept: %s\n", dir)
	}
	return nil
}

// seeding is what seeding took, for the report.
type seeding struct {
	took      time.Duration
	storeSize int64 // grantry.db
	dataSize  int64 // OPA's data.json
}

// seedAll draws the workload and writes it into dir for Grantry, and for OPA if withOPA.
func seedAll(ctx context.Context, dir string, p params, withOPA bool, progress io.Writer) (seeding, error) {
	fmt.Fprintf(progress, "seeding %d users × %d grants over %d resources into %s\n", p.Users, p.Grants, p.Resources, dir)
	start := time.Now()
	w, err := newWorkload(p)
	if err != nil {
		return seeding{}, err
	}
	if err := seedGrantry(ctx, dir, w); err != nil {
		return seeding{}, err
	}
	if withOPA {
		if err := seedOPA(dir, w); err != nil {
			return seeding{}, err
		}
	}
	s := seeding{took: time.Since(start)}
	if fi, err := os.Stat(filepath.Join(dir, grantryDir, "grantry.db")); err == nil {
		s.storeSize = fi.Size()
	}
	if fi, err := os.Stat(filepath.Join(dir, opaDir, opaDataFile)); err == nil {
		s.dataSize = fi.Size()
	}
	fmt.Fprintf(progress, "seeded in %s\n", s.took.Round(100*time.Millisecond))
	return s, nil
}

// machine describes where the benchmark ran: the CPU, and OPA's version when opa is given.
func machine(opa string) machineInfo {
	m := machineInfo{CPU: "unknown CPU", CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				m.CPU = strings.TrimSpace(value)
				break
			}
		}
	}
	if opa != "" {
		if out, err := exec.Command(opa, "version").Output(); err == nil {
			if first, _, _ := strings.Cut(string(out), "\n"); first != "" {
				m.OPA = strings.TrimSpace(strings.TrimPrefix(first, "Version:"))
			}
		}
	}
	return m
}
