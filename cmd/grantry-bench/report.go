package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// summary is a series reduced to one figure each: the median over the runs, taken metric by
// metric; mismatches and errors are summed, since any is too many.
type summary struct {
	mem        memory // of the server, read after its runs
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
	machine  machineInfo
	workload params
	seeded   seeding
	h        *harness
	series   []series
	mongo    *mongoReport // nil when no MongoDB row ran
	skipped  []string     // a line for each row that could not run here, and why
}

// mongoReport is where the MongoDB rows ran and what they were seeded with.
type mongoReport struct {
	describe string
	ferret   bool
	seedings []mongoSeeding
}

// line describes the MongoDB rows for the table's heading: where they ran, and the workload of
// each database, with why it is smaller than make bench's (full) when it is.
func (m mongoReport) line(full params) string {
	s := m.describe
	if m.ferret {
		s += " (the servers' decision log off)"
	}
	for _, ms := range m.seedings {
		s += fmt.Sprintf("; %s: %s users × %d grants over %s resources", strings.Join(ms.systems, ", "),
			thousands(ms.p.Users), ms.p.Grants, thousands(ms.p.Resources))
		if ms.p.Users < full.Users {
			s += fmt.Sprintf(", the first of make bench's %s in a database of their own (FerretDB reads a user's grants by scanning every grant, as a replica does after each change)", thousands(full.Users))
		}
		s += fmt.Sprintf(", seeded in %s", ms.took.Round(100*time.Millisecond))
	}
	return s
}

// disturbedAbove is the share of one CPU that other work may take during a run before the report
// warns that the figures were disturbed.
const disturbedAbove = 0.25

var disturbedWarning = fmt.Sprintf("WARNING: other work kept the machine busy during some runs (other CPU above %s of one CPU); their figures are low. Run again on a quiet machine.", pct(disturbedAbove))

// labels name each target in the table.
var labels = map[string]string{
	targetCeiling:      "ceiling (bare net/http)",
	targetOPA:          "OPA server",
	targetGrantry:      "Grantry can_user_access",
	targetWrites:       "Grantry grant+revoke",
	targetForwardAuth:  "Grantry forward-auth",
	targetExtAuthz:     "Grantry ext_authz gRPC",
	targetNginx:        "nginx → upstream",
	targetNginxGrantry: "nginx+Grantry → upstream",
}

// systemLabels name the rows of systems that answer another system's target.
var systemLabels = map[string]string{
	systemOPALight:        "OPA server, lightest",
	systemGrantryLogsOff:  "Grantry, logs off",
	systemGrantryABAC:     "Grantry, ABAC policy",
	systemGrantryMongo:    "Grantry on MongoDB",
	systemGrantryReplicas: "Grantry, 2 replicas",
}

// label names a series in the table.
func (s series) label() string {
	if l, ok := systemLabels[s.system]; ok {
		return l
	}
	return labels[s.target]
}

func (r report) write(w io.Writer) {
	p, h := r.workload, r.h
	fmt.Fprintf(w, "\nGrantry side-by-side benchmark\n")
	fmt.Fprintf(w, "machine:  %s\n", r.machine)
	fmt.Fprintf(w, "workload: seed %d; %s users × %d grants over %s resources (grantry.db %s, OPA data.json %s, OPA-lightest's %s, seeded in %s);\n",
		p.Seed, thousands(p.Users), p.Grants, thousands(p.Resources), mib(r.seeded.storeSize), mib(r.seeded.dataSize), mib(r.seeded.lightSize),
		r.seeded.took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "          checks 50/50 granted/not granted, %s pre-generated, the same sequence for every server\n", thousands(p.Checks))
	fmt.Fprintf(w, "load:     %d keep-alive connections from a separate process; %s warm-up + %s measured; %d runs each, median shown\n",
		h.conns, h.warmup, h.duration, h.runs)
	if h.taskset != "" {
		fmt.Fprintf(w, "pinned:   server on CPU 0, load generator on CPU 1 (taskset); unpinned: both free on every CPU\n")
	} else {
		fmt.Fprintf(w, "pinning:  not available (needs taskset and 2 CPUs); unpinned figures only\n")
	}
	if m := r.mongo; m != nil {
		fmt.Fprintf(w, "MongoDB:  %s\n", m.line(p))
	}
	fmt.Fprintln(w)

	const row = "%-9s %-24s %8s %8s %8s %7s %6s %6s %6s %7s %7s %5s %6s  %s\n"
	fmt.Fprintf(w, row, "mode", "system", "req/s", "p50", "p99", "µs/req", "server", "load", "other", "RssAnon", "RssFile", "wrong", "errors", "req/s of each run")
	fmt.Fprintf(w, row, "", "", "", "", "", "srv CPU", "CPU", "CPU", "CPU", "heap", "mapped", "", "", "")
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
			mib(s.mem.RSSAnon), mib(s.mem.RSSFile), wrong, strconv.FormatInt(sum.errors, 10), strings.Join(each, " "))
		disturbed = disturbed || sum.otherUtil > disturbedAbove
	}
	for _, s := range r.series {
		if sum := summarize(s.runs); sum.firstError != "" {
			fmt.Fprintf(w, "first error, %s %s: %s\n", s.placement, s.label(), sum.firstError)
		}
	}
	for _, s := range r.series {
		if v := s.visibility; v != nil {
			p50, p99 := v.percentiles()
			fmt.Fprintf(w, "%s (%s, the load split between A and B): %d changes made on A seen on B after p50 %s, p99 %s; %d not seen within %s; %d failed\n",
				s.label(), s.placement, len(v.times), ms(p50), ms(p99), v.notVisible, visibilityTimeout, v.errors)
			if v.firstError != "" {
				fmt.Fprintf(w, "first prober error: %s\n", v.firstError)
			}
		}
	}
	for _, line := range r.skipped {
		fmt.Fprintf(w, "skipped: %s\n", line)
	}
	if disturbed {
		fmt.Fprintln(w, disturbedWarning)
	}

	fmt.Fprintln(w)
	places := h.placements()
	fmt.Fprintf(w, "%-34s", "ratios")
	for _, pl := range places {
		fmt.Fprintf(w, "%12s", pl.name)
	}
	fmt.Fprintf(w, "   target\n")
	for _, rt := range r.ratios() {
		fmt.Fprintf(w, "%-34s", rt.name)
		for _, pl := range places {
			fmt.Fprintf(w, "%12s", rt.format(pl.name))
		}
		fmt.Fprintf(w, "   %s\n", rt.target)
	}
}

// ratio is one line under the table: a figure per placement, where it was measured.
type ratio struct {
	name, target string
	unit         string             // "" for a quotient; "req/s" for a rate; "ms" for a time
	values       map[string]float64 // by placement
}

func (rt ratio) format(placement string) string {
	v, ok := rt.values[placement]
	switch {
	case !ok:
		return "-"
	case rt.unit == "req/s":
		return thousands(int(v + 0.5))
	case rt.unit == "ms" && math.Abs(v) < 10:
		// What a step adds to a request is a fraction of a millisecond or a few.
		return fmt.Sprintf("%.2fms", v)
	case rt.unit == "ms":
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// ratios are Grantry's figures against the other systems', with the target each is held to;
// then, for information, the same for Grantry logging as OPA's server does here (no decision
// log, no access log), which shows what its logs cost, and what the production configurations
// cost against the embedded store and the shipped policy.
func (r report) ratios() []ratio {
	// summaries are what one placement's ratios are made of.
	type summaries struct{ grantry, opa, light, ceiling, writes, logsOff, abac, mongo, forward summary }
	of := func(name, target, unit string, f func(m summaries) (float64, float64)) ratio {
		rt := ratio{name: name, target: target, unit: unit, values: map[string]float64{}}
		for _, pl := range r.h.placements() {
			a, b := f(summaries{
				grantry: r.find(pl.name, systemGrantry, targetGrantry),
				opa:     r.find(pl.name, systemOPA, targetOPA),
				light:   r.find(pl.name, systemOPALight, targetOPALight),
				ceiling: r.find(pl.name, systemCeiling, targetCeiling),
				writes:  r.find(pl.name, systemGrantry, targetWrites),
				logsOff: r.find(pl.name, systemGrantryLogsOff, targetGrantry),
				abac:    r.find(pl.name, systemGrantryABAC, targetABAC),
				mongo:   r.find(pl.name, systemGrantryMongo, targetGrantry),
				forward: r.find(pl.name, systemGrantry, targetForwardAuth),
			})
			if a != 0 && b != 0 {
				rt.values[pl.name] = a / b
			}
		}
		return rt
	}
	cpu := func(s summary) float64 { return float64(s.cpu) }
	p99 := func(s summary) float64 { return float64(s.p99) }
	visible := ratio{name: "replicas: change seen on B, p99", target: "≤ 1 s", unit: "ms", values: map[string]float64{}}
	for _, s := range r.series {
		if s.visibility != nil && len(s.visibility.times) > 0 {
			_, p99 := s.visibility.percentiles()
			visible.values[s.placement] = millis(p99)
		}
	}
	// What the docs' nginx configuration adds to the straight proxy's latency: Grantry's
	// authorization step, with the hop to it.
	added := func(name string, of func(summary) time.Duration) ratio {
		rt := ratio{name: name, target: "(reported)", unit: "ms", values: map[string]float64{}}
		for _, pl := range r.h.placements() {
			auth, direct := r.find(pl.name, systemNginx, targetNginxGrantry), r.find(pl.name, systemNginx, targetNginx)
			if auth.rps > 0 && direct.rps > 0 {
				rt.values[pl.name] = millis(of(auth) - of(direct))
			}
		}
		return rt
	}
	// The heap against the whole resident memory of OPA at its lightest, which maps no file.
	heap := func(m summaries) (float64, float64) {
		return float64(m.grantry.mem.RSSAnon), float64(m.light.mem.RSSAnon + m.light.mem.RSSFile)
	}
	return []ratio{
		of("Grantry / OPA, req/s", "≥ 4×", "", func(m summaries) (float64, float64) { return m.grantry.rps, m.opa.rps }),
		of("Grantry / OPA-lightest, req/s", "≥ 3×", "", func(m summaries) (float64, float64) { return m.grantry.rps, m.light.rps }),
		of("Grantry / ceiling, req/s", "≥ 0.8×", "", func(m summaries) (float64, float64) { return m.grantry.rps, m.ceiling.rps }),
		of("Grantry / ceiling, CPU µs/req", "≤ 1.35×", "", func(m summaries) (float64, float64) { return cpu(m.grantry), cpu(m.ceiling) }),
		of("Grantry / OPA, p99", "< 1×", "", func(m summaries) (float64, float64) { return p99(m.grantry), p99(m.opa) }),
		of("ABAC / shipped policy, req/s", "≥ 0.85×", "", func(m summaries) (float64, float64) { return m.abac.rps, m.grantry.rps }),
		of("MongoDB / embedded, req/s", "≥ 0.8×", "", func(m summaries) (float64, float64) { return m.mongo.rps, m.grantry.rps }),
		visible,
		of("Grantry heap / OPA-lightest RSS", "≤ 2×", "", heap),
		of("forward-auth / can_user_access, req/s", "≥ 0.8×", "", func(m summaries) (float64, float64) { return m.forward.rps, m.grantry.rps }),
		of("Grantry grant+revoke, req/s", "≥ 5,000", "req/s", func(m summaries) (float64, float64) { return m.writes.rps, 1 }),
		added("nginx: authorization adds p50", func(s summary) time.Duration { return s.p50 }),
		added("nginx: authorization adds p99", func(s summary) time.Duration { return s.p99 }),
		of("logs off / OPA, req/s", "(information)", "", func(m summaries) (float64, float64) { return m.logsOff.rps, m.opa.rps }),
		of("logs off / ceiling, req/s", "(information)", "", func(m summaries) (float64, float64) { return m.logsOff.rps, m.ceiling.rps }),
		of("logs off / ceiling, CPU µs/req", "(information)", "", func(m summaries) (float64, float64) { return cpu(m.logsOff), cpu(m.ceiling) }),
	}
}

// find returns the summary of one system's target in one placement, zero if it was not
// measured.
func (r report) find(placement, system, target string) summary {
	for _, s := range r.series {
		if s.placement == placement && s.system == system && s.target == target {
			sum := summarize(s.runs)
			sum.mem = s.mem
			return sum
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
