package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"
)

// scaleCmd is `grantry-bench scale`, what `make bench-large` runs: Grantry's check throughput and
// memory with a million users × 20 grants, beside the same figures for the 10,000-user workload
// of `make bench`, measured in the same way in the same invocation. Both workloads are seeded
// first; then a server of each is started and their runs take turns (interleave), so that the
// ratio compares runs made in the same spells of a shared machine, which one workload measured
// after the other, minutes apart, would not.
func scaleCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var hf harnessFlags
	fs, err := hf.flagSet("scale", getenv, stderr)
	if err != nil {
		return err
	}
	large := defaultParams()
	large.Users, large.Grants = 1_000_000, 20
	fs.IntVar(&large.Users, "users", large.Users, "users of the large workload")
	fs.IntVar(&large.Grants, "grants", large.Grants, "grants per user of the large workload")
	fs.Uint64Var(&large.Seed, "seed", large.Seed, "seed of both workloads")
	h, dir, cleanup, err := hf.setUp(fs, args, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	base := defaultParams()
	base.Seed = large.Seed
	pl := h.placements()[0]

	type result struct {
		p      params
		seeded seeding
		s      series
	}
	var measuredRuns []result
	var systems []measured
	for i, p := range []params{base, large} {
		d := filepath.Join(dir, strconv.Itoa(i))
		seeded, err := seedAll(ctx, d, p, seedWhat{grantry: true}, stderr)
		if err != nil {
			return err
		}
		measuredRuns = append(measuredRuns, result{p: p, seeded: seeded})
		systems = append(systems, measured{systemGrantry, []string{targetGrantry}, d, p})
	}
	s, err := h.measureAll(ctx, systems, pl)
	if err != nil {
		return err
	}
	for i := range measuredRuns {
		measuredRuns[i].s = s[i]
	}

	fmt.Fprintf(stdout, "\nGrantry at scale: can_user_access over HTTP, %s\n", pl.name)
	fmt.Fprintf(stdout, "%d keep-alive connections; %s warm-up + %s measured; %d runs each, the two servers in turn, median shown; RSS read after the runs\n\n",
		h.conns, h.warmup, h.duration, h.runs)
	const row = "%10s %6s %10s %9s %8s %8s %8s %7s %6s %6s %8s %8s %8s %5s %6s\n"
	fmt.Fprintf(stdout, row, "users", "grants", "grantry.db", "seeded in", "req/s", "p50", "p99", "µs/req", "server", "other", "VmRSS", "VmHWM", "RssAnon", "wrong", "errors")
	fmt.Fprintf(stdout, row, "", "", "", "", "", "", "", "srv CPU", "CPU", "CPU", "", "", "", "", "")
	disturbed := false
	for _, r := range measuredRuns {
		sum := summarize(r.s.runs)
		fmt.Fprintf(stdout, row, thousands(r.p.Users), strconv.Itoa(r.p.Grants), mib(r.seeded.storeSize),
			r.seeded.took.Round(time.Second).String(), thousands(int(sum.rps+0.5)), ms(sum.p50), ms(sum.p99),
			fmt.Sprintf("%.1f", float64(sum.cpu)/float64(time.Microsecond)), pct(sum.serverUtil), pct(sum.otherUtil),
			mib(r.s.mem.RSS), mib(r.s.mem.HWM), mib(r.s.mem.RSSAnon),
			strconv.FormatInt(sum.mismatches, 10), strconv.FormatInt(sum.errors, 10))
		disturbed = disturbed || sum.otherUtil > disturbedAbove
	}
	if disturbed {
		fmt.Fprintln(stdout, disturbedWarning)
	}
	b, l := summarize(measuredRuns[0].s.runs), summarize(measuredRuns[1].s.runs)
	rt := ratio{name: thousands(large.Users) + " users / " + thousands(base.Users) + " users, req/s", target: "≥ 0.80×",
		values: map[string]float64{pl.name: l.rps / b.rps}}
	fmt.Fprintf(stdout, "\n%s: %s   (target %s)\n", rt.name, rt.format(pl.name), rt.target)
	fmt.Fprintf(stdout, "VmRSS counts the pages of grantry.db that bbolt has mapped and touched; RssAnon is the process's own heap and stacks.\n")
	res := results{Benchmark: "bench-large", Machine: machine(""), Load: h.loadInfo(),
		Ratios: []ratioResult{{Name: rt.name, Target: rt.target, Values: rt.values}}}
	for _, r := range measuredRuns {
		res.Workloads = append(res.Workloads, workloadOf(r.p, r.seeded))
		res.Rows = append(res.Rows, rowOf(r.s, "Grantry can_user_access", r.p.Users))
	}
	if err := hf.saveResults(res, stderr); err != nil {
		return err
	}
	if hf.keep || hf.dir != "" {
		fmt.Fprintf(stderr, "work folder kept: %s\n", dir)
	}
	return nil
}
