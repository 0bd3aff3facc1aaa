package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// summary is a series reduced to one figure each: the median over the runs, taken metric by
// metric; mismatches and errors are summed, since any is too many.
type summary struct {
	rps        float64
	p50, p99   time.Duration
	cpu        time.Duration // server CPU per request
	serverUtil float64       // server CPU time / elapsed time: 1.0 is one CPU kept busy
	loadUtil   float64
	otherUtil  float64
	mismatches int64
	errors     int64
	firstError string
	rpsRuns    []float64
}

func summarize(runs []loadResult) summary {
	var s summary
	var rps, p50, p99, cpu, su, lu, ou []float64
	for _, r := range runs {
		rps = append(rps, r.rps())
		p50 = append(p50, float64(r.P50))
		p99 = append(p99, float64(r.P99))
		cpu = append(cpu, float64(r.cpuPerRequest()))
		su = append(su, r.ServerCPU.Seconds()/r.Elapsed.Seconds())
		lu = append(lu, r.LoadCPU.Seconds()/r.Elapsed.Seconds())
		ou = append(ou, r.OtherCPU.Seconds()/r.Elapsed.Seconds())
		s.mismatches += r.Mismatches
		s.errors += r.Errors
		if s.firstError == "" {
			s.firstError = r.FirstError
		}
	}
	s.rpsRuns = rps
	s.rps = median(rps)
	s.p50, s.p99, s.cpu = time.Duration(median(p50)), time.Duration(median(p99)), time.Duration(median(cpu))
	s.serverUtil, s.loadUtil, s.otherUtil = median(su), median(lu), median(ou)
	return s
}

// median is the middle value, or the mean of the two middle values of an even count.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// report is what `grantry-bench run` prints.
type report struct {
	machine  string
	workload params
	seeded   seeding
	h        *harness
	series   []series
}

// disturbedAbove is the share of one CPU that other work may take during a run before the report
// warns that the figures were disturbed.
const disturbedAbove = 0.25

var disturbedWarning = fmt.Sprintf("WARNING: other work kept the machine busy during some runs (other CPU above %s of one CPU); their figures are low. Run again on a quiet machine.", pct(disturbedAbove))

// labels name each target in the table.
var labels = map[string]string{
	targetCeiling:     "ceiling (bare net/http)",
	targetOPA:         "OPA server",
	targetGrantry:     "Grantry can_user_access",
	targetWrites:      "Grantry grant+revoke",
	targetForwardAuth: "Grantry forward-auth",
}

// label names a series in the table.
func (s series) label() string {
	if s.system == systemGrantryLogsOff {
		return "Grantry, logs off"
	}
	return labels[s.target]
}

func (r report) write(w io.Writer) {
	p, h := r.workload, r.h
	fmt.Fprintf(w, "\nGrantry side-by-side benchmark\n")
	fmt.Fprintf(w, "machine:  %d CPUs, %s; %s %s/%s\n", runtime.NumCPU(), r.machine, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "workload: seed %d; %s users × %d grants over %s resources (grantry.db %s, OPA data.json %s, seeded in %s);\n",
		p.Seed, thousands(p.Users), p.Grants, thousands(p.Resources), mib(r.seeded.storeSize), mib(r.seeded.dataSize), r.seeded.took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "          checks 50/50 granted/not granted, %s pre-generated, the same sequence for every server\n", thousands(p.Checks))
	fmt.Fprintf(w, "load:     %d keep-alive connections from a separate process; %s warm-up + %s measured; %d runs each, median shown\n",
		h.conns, h.warmup, h.duration, h.runs)
	if h.taskset != "" {
		fmt.Fprintf(w, "pinned:   server on CPU 0, load generator on CPU 1 (taskset); unpinned: both free on every CPU\n")
	} else {
		fmt.Fprintf(w, "pinning:  not available (needs taskset and 2 CPUs); unpinned figures only\n")
	}
	fmt.Fprintln(w)

	const row = "%-9s %-24s %8s %8s %8s %7s %6s %6s %6s %7s %5s %6s  %s\n"
	fmt.Fprintf(w, row, "mode", "system", "req/s", "p50", "p99", "µs/req", "server", "load", "other", "RSS", "wrong", "errors", "req/s of each run")
	fmt.Fprintf(w, row, "", "", "", "", "", "srv CPU", "CPU", "CPU", "CPU", "", "", "", "")
	disturbed := false
	for _, s := range r.series {
		sum := summarize(s.runs)
		wrong := strconv.FormatInt(sum.mismatches, 10)
		if s.target == targetCeiling {
			wrong = "-" // the ceiling answers true to everything; there is nothing to check
		}
		var each []string
		for _, v := range sum.rpsRuns {
			each = append(each, thousands(int(v+0.5)))
		}
		fmt.Fprintf(w, row, s.placement, s.label(), thousands(int(sum.rps+0.5)), ms(sum.p50), ms(sum.p99),
			fmt.Sprintf("%.1f", float64(sum.cpu)/float64(time.Microsecond)), pct(sum.serverUtil), pct(sum.loadUtil), pct(sum.otherUtil),
			mib(s.mem.RSS), wrong, strconv.FormatInt(sum.errors, 10), strings.Join(each, " "))
		disturbed = disturbed || sum.otherUtil > disturbedAbove
	}
	for _, s := range r.series {
		if sum := summarize(s.runs); sum.firstError != "" {
			fmt.Fprintf(w, "first error, %s %s: %s\n", s.placement, s.label(), sum.firstError)
		}
	}
	if disturbed {
		fmt.Fprintln(w, disturbedWarning)
	}

	fmt.Fprintln(w)
	places := h.placements()
	head := []any{"ratios"}
	for _, pl := range places {
		head = append(head, pl.name)
	}
	fmt.Fprintf(w, "%-34s", head[0])
	for _, c := range head[1:] {
		fmt.Fprintf(w, "%12s", c)
	}
	fmt.Fprintf(w, "   issue 8 target\n")
	// summaries are what one placement's ratios are made of.
	type summaries struct{ grantry, opa, ceiling, writes, logsOff summary }
	ratio := func(name, target string, f func(m summaries) string) {
		fmt.Fprintf(w, "%-34s", name)
		for _, pl := range places {
			fmt.Fprintf(w, "%12s", f(summaries{
				grantry: r.find(pl.name, systemGrantry, targetGrantry),
				opa:     r.find(pl.name, systemOPA, targetOPA),
				ceiling: r.find(pl.name, systemCeiling, targetCeiling),
				writes:  r.find(pl.name, systemGrantry, targetWrites),
				logsOff: r.find(pl.name, systemGrantryLogsOff, targetGrantry),
			}))
		}
		fmt.Fprintf(w, "   %s\n", target)
	}
	times := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	ratio("Grantry / OPA, req/s", "≥ 2.5×", func(m summaries) string { return times(m.grantry.rps, m.opa.rps) })
	ratio("Grantry / ceiling, req/s", "≥ 0.70×", func(m summaries) string { return times(m.grantry.rps, m.ceiling.rps) })
	ratio("Grantry / ceiling, CPU µs/req", "≤ 1.4×", func(m summaries) string { return times(float64(m.grantry.cpu), float64(m.ceiling.cpu)) })
	ratio("Grantry / OPA, p99", "< 1×", func(m summaries) string { return times(float64(m.grantry.p99), float64(m.opa.p99)) })
	ratio("Grantry grant+revoke, req/s", "≥ 5,000", func(m summaries) string {
		if m.writes.rps == 0 {
			return "-"
		}
		return thousands(int(m.writes.rps + 0.5))
	})
	// The same ratios for Grantry logging as OPA's server does here (no decision log, no
	// access log): what its logs cost, not what the targets are measured on.
	ratio("logs off / OPA, req/s", "(information)", func(m summaries) string { return times(m.logsOff.rps, m.opa.rps) })
	ratio("logs off / ceiling, req/s", "(information)", func(m summaries) string { return times(m.logsOff.rps, m.ceiling.rps) })
	ratio("logs off / ceiling, CPU µs/req", "(information)", func(m summaries) string { return times(float64(m.logsOff.cpu), float64(m.ceiling.cpu)) })
}

// find returns the summary of one system's target in one placement, zero if it was not
// measured.
func (r report) find(placement, system, target string) summary {
	for _, s := range r.series {
		if s.placement == placement && s.system == system && s.target == target {
			return summarize(s.runs)
		}
	}
	return summary{}
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

func mib(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
}
