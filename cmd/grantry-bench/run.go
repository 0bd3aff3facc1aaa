package main

import (
	"context"
	"errors"
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
// placement (pinned, unpinned) start a server of each row's system — the ceiling, OPA's server
// and OPA's at its lightest, Grantry (whose server also answers the gateways' checks and the
// writes), Grantry with the ABAC policy, Grantry on MongoDB — load them in turn for the given
// runs, and print one table. In the first placement it also measures Grantry's writes, its
// checks with its decision log and access log off, and Grantry on MongoDB; unpinned, what
// Grantry's authorization step adds behind nginx (the nginx row); in the last, two Grantry
// replicas sharing the MongoDB store. -systems picks the rows.
func runCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var hf harnessFlags
	fs, err := hf.flagSet("run", getenv, stderr)
	if err != nil {
		return err
	}
	opa := fs.String("opa", "bin/opa", "the opa binary (go build -o bin/opa github.com/open-policy-agent/opa)")
	systems := fs.String("systems", "all", "the rows to run, comma-separated: all, or some of "+strings.Join(allRows, ","))
	p := defaultParams()
	p.register(fs)
	h, dir, cleanup, err := hf.setUp(fs, args, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	sel, err := parseSystems(*systems)
	if err != nil {
		return err
	}
	if sel[rowOPA] || sel[rowOPALight] {
		if h.opa, err = binary(*opa); err != nil {
			return err
		}
	}
	ng, skipped, err := prepareNginx(sel, exec.LookPath, gatewaysDoc, stderr)
	if err != nil {
		return err
	}

	seeded, err := seedAll(ctx, dir, p, seedWhat{grantry: sel.embeddedStore(), opa: sel[rowOPA], opaLight: sel[rowOPALight]}, stderr)
	if err != nil {
		return err
	}
	if sel[rowABAC] {
		if err := prepareABAC(dir); err != nil {
			return err
		}
	}
	rep := report{workload: p, seeded: seeded, h: h, skipped: skipped}
	var mongoRow, replicasRow mongoRun
	if sel.mongoStore() {
		db, err := openMongo(getenv, dir, hf.keep || hf.dir != "")
		if err != nil {
			return err
		}
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := db.close(closeCtx); err != nil {
				fmt.Fprintf(stderr, "grantry-bench: %v\n", err)
			}
		}()
		h.mongo = db
		if rep.mongo, mongoRow, replicasRow, err = seedMongoRows(ctx, db, sel, dir, p, stderr); err != nil {
			return err
		}
		h.replicasDB = replicasRow.db
	}
	// FerretDB runs in this process: while servers are pinned, it moves to the load
	// generator's CPU with the rest of the process.
	var aff *affinity
	if h.mongo.ferret && h.taskset != "" {
		if aff, err = newAffinity(); err != nil {
			return err
		}
	}

	places := h.placements()
	for i, pl := range places {
		first, last := i == 0, i == len(places)-1
		if aff != nil {
			if err := aff.pin(pl.loadCPU); err != nil {
				return err
			}
		}
		// The rows' servers are measured in turn, run by run (interleave); the logs-off
		// Grantry, which opens the same store, and the replicas, which take two servers and a
		// prober, after them.
		var group []measured
		add := func(system string, targets ...string) {
			if len(targets) > 0 {
				group = append(group, measured{system, targets, dir, p})
			}
		}
		for _, m := range []struct{ row, system, target string }{
			{rowCeiling, systemCeiling, targetCeiling}, {rowOPA, systemOPA, targetOPA}, {rowOPALight, systemOPALight, targetOPALight},
		} {
			if sel[m.row] {
				add(m.system, m.target)
			}
		}
		// Writes are measured once, first (pinned), to keep make bench short; they wait on
		// fsync as well as on the CPU.
		add(systemGrantry, sel.grantryTargets(first)...)
		if sel[rowABAC] {
			add(systemGrantryABAC, targetABAC)
		}
		if sel[rowMongo] && first {
			group = append(group, measured{systemGrantryMongo, []string{targetGrantry}, mongoRow.dir, mongoRow.p})
		}
		if len(group) > 0 {
			s, err := h.measureAll(ctx, group, pl)
			if err != nil {
				return err
			}
			rep.series = append(rep.series, s...)
		}
		if sel[rowLogsOff] && first {
			s, err := h.measure(ctx, systemGrantryLogsOff, []string{targetGrantry}, pl, dir, p)
			if err != nil {
				return err
			}
			rep.series = append(rep.series, s...)
		}
		// nginx runs workers of its own, which no CPU of the pinned placement is kept for.
		if sel[rowNginx] && pl.name == unpinned.name {
			s, err := h.measureNginx(ctx, ng, dir, p, pl)
			if err != nil {
				return err
			}
			rep.series = append(rep.series, s...)
		}
		if sel[rowReplicas] && last {
			s, err := h.measureReplicas(ctx, measured{systemGrantryReplicas, []string{targetReplicas}, replicasRow.dir, replicasRow.p}, pl)
			if err != nil {
				return err
			}
			rep.series = append(rep.series, s)
		}
	}
	rep.machine = machine(h.opa)
	rep.write(stdout)
	if err := hf.saveResults(rep.results(), stderr); err != nil {
		return err
	}
	if hf.keep || hf.dir != "" {
		fmt.Fprintf(stderr, "work folder kept: %s\n", dir)
	}
	return nil
}

// prepareABAC makes what the grantry-abac server runs on: a copy of the seeded store in
// dir/grantry-abac, and the ABAC policy folder.
func prepareABAC(dir string) error {
	if _, err := writeABACPolicy(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, grantryABACDir), 0o700); err != nil {
		return fmt.Errorf("ABAC store: %w", err)
	}
	if err := copyFile(filepath.Join(dir, grantryDir, "grantry.db"), filepath.Join(dir, grantryABACDir, "grantry.db")); err != nil {
		return fmt.Errorf("ABAC store: %w", err)
	}
	return nil
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}

// seeding is what seeding took, for the report.
type seeding struct {
	took      time.Duration
	storeSize int64 // grantry.db
	dataSize  int64 // OPA's data.json
	lightSize int64 // OPA-lightest's data.json
}

// seedWhat says which data seedAll writes.
type seedWhat struct{ grantry, opa, opaLight bool }

// seedAll draws the workload and writes it into dir: for Grantry's embedded store, OPA and
// OPA at its lightest, as what says.
func seedAll(ctx context.Context, dir string, p params, what seedWhat, progress io.Writer) (seeding, error) {
	fmt.Fprintf(progress, "seeding %d users × %d grants over %d resources into %s\n", p.Users, p.Grants, p.Resources, dir)
	start := time.Now()
	w, err := newWorkload(p)
	if err != nil {
		return seeding{}, err
	}
	steps := []struct {
		do   bool
		seed func(string, *workload) error
	}{
		{what.grantry, func(dir string, w *workload) error { return seedGrantry(ctx, dir, w) }},
		{what.opa, seedOPA},
		{what.opaLight, seedOPALight},
	}
	for _, st := range steps {
		if st.do {
			if err := st.seed(dir, w); err != nil {
				return seeding{}, err
			}
		}
	}
	s := seeding{took: time.Since(start)}
	for path, size := range map[string]*int64{
		filepath.Join(dir, grantryDir, "grantry.db"): &s.storeSize,
		filepath.Join(dir, opaDir, opaDataFile):      &s.dataSize,
		filepath.Join(dir, opaLightDir, opaDataFile): &s.lightSize,
	} {
		if fi, err := os.Stat(path); err == nil {
			*size = fi.Size()
		}
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
