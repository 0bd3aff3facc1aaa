package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// results is what one run of `grantry-bench run` (make bench) or `grantry-bench scale` (make
// bench-large) writes into the results folder, besides the table it prints: every figure of
// every row, and what produced them, so that runs are compared as data rather than as prose.
// docs/benchmarks.md describes each field.
type results struct {
	Benchmark string         `json:"benchmark"` // "bench" or "bench-large"
	Commit    string         `json:"commit"`    // the git revision measured; "unknown" outside a checkout
	Modified  bool           `json:"modified"`  // the checkout had changes not committed
	Date      time.Time      `json:"date"`      // when the run ended, UTC
	Machine   machineInfo    `json:"machine"`
	Load      loadInfo       `json:"load"`
	Workloads []workloadInfo `json:"workloads"`
	Rows      []resultRow    `json:"rows"`
	Ratios    []ratioResult  `json:"ratios"`
	// Skipped are the rows that could not run on the machine, each with why.
	Skipped []string `json:"skipped,omitempty"`
}

// machineInfo is where the benchmark ran.
type machineInfo struct {
	CPU  string `json:"cpu"`  // the CPU's model name
	CPUs int    `json:"cpus"` // CPUs this process may run on
	OS   string `json:"os"`
	Arch string `json:"arch"`
	Go   string `json:"go"`            // the Go version grantry-bench was built with
	OPA  string `json:"opa,omitempty"` // OPA's version, when OPA was measured
}

func (m machineInfo) String() string {
	s := fmt.Sprintf("%d CPUs, %s; %s %s/%s", m.CPUs, m.CPU, m.Go, m.OS, m.Arch)
	if m.OPA != "" {
		s += "; OPA " + m.OPA
	}
	return s
}

// loadInfo is how every server was loaded.
type loadInfo struct {
	Connections int     `json:"connections"`
	WarmupS     float64 `json:"warmup_s"`
	DurationS   float64 `json:"duration_s"` // measured time of each run
	Runs        int     `json:"runs"`       // runs of each row; its figures are their medians
	Pinned      bool    `json:"pinned"`     // pinned runs were possible (taskset and two CPUs)
}

// workloadInfo is one seeded workload.
type workloadInfo struct {
	Store        string `json:"store"` // where Grantry held it: "bolt", or "mongodb" for the MongoDB rows
	Seed         uint64 `json:"seed"`
	Users        int    `json:"users"`
	Resources    int    `json:"resources"`
	Grants       int    `json:"grants_per_user"`
	Checks       int    `json:"checks"` // length of the check sequence
	StoreBytes   int64  `json:"store_bytes"`
	OPADataBytes int64  `json:"opa_data_bytes,omitempty"`
	// OPALightDataBytes is the data.json of OPA at its lightest.
	OPALightDataBytes int64   `json:"opa_lightest_data_bytes,omitempty"`
	SeededS           float64 `json:"seeded_s"`
	// MongoDB is where the MongoDB rows ran: FerretDB in process, or GRANTRY_BENCH_MONGO_URI's
	// database, never its URI.
	MongoDB string `json:"mongodb,omitempty"`
	// Systems are the rows run on a MongoDB workload.
	Systems []string `json:"systems,omitempty"`
}

// resultRow is one row of the table: the medians of one target's runs on one server.
type resultRow struct {
	Placement      string    `json:"placement"` // pinned or unpinned
	System         string    `json:"system"`    // ceiling, opa, opa-lightest, grantry, grantry-logs-off, …
	Target         string    `json:"target"`    // what was asked: check or writes
	Label          string    `json:"label"`     // the row's name in the printed table
	Users          int       `json:"users"`     // of the workload the server held
	ReqPerS        float64   `json:"req_per_s"`
	ReqPerSRuns    []float64 `json:"req_per_s_runs"`
	P50Ms          float64   `json:"p50_ms"`
	P99Ms          float64   `json:"p99_ms"`
	ServerCPUUsReq float64   `json:"server_cpu_us_per_req"`
	ServerCPU      float64   `json:"server_cpu"` // shares of one CPU over the measured time
	LoadCPU        float64   `json:"load_cpu"`
	OtherCPU       float64   `json:"other_cpu"`
	RSSBytes       int64     `json:"rss_bytes"`
	HWMBytes       int64     `json:"hwm_bytes"`
	RSSAnonBytes   int64     `json:"rss_anon_bytes"`
	RSSFileBytes   int64     `json:"rss_file_bytes"`
	Wrong          *int64    `json:"wrong"` // null where answers are not checked (the ceiling)
	Errors         int64     `json:"errors"`
	FirstError     string    `json:"first_error,omitempty"`
	// Visibility is what the replicas' prober measured; only on the grantry-replicas row.
	Visibility *visibilityResult `json:"visibility,omitempty"`
}

// visibilityResult is the replicas' prober's figures: changes made on replica A and how long
// after A's 200 replica B first answered as changed.
type visibilityResult struct {
	Changes    int     `json:"changes"` // seen on B
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	NotVisible int     `json:"not_visible"` // not seen within visibilityTimeout
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
}

// ratioResult is one line under the table.
type ratioResult struct {
	Name   string             `json:"name"`
	Target string             `json:"target"`
	Unit   string             `json:"unit,omitempty"` // empty for a quotient; "req/s" or "ms"
	Values map[string]float64 `json:"values"`         // by placement
}

// rowOf turns one series, on a server holding users, into a row.
func rowOf(s series, label string, users int) resultRow {
	sum := summarize(s.runs)
	row := resultRow{
		Placement: s.placement, System: s.system, Target: s.target, Label: label, Users: users,
		ReqPerS: sum.rps, ReqPerSRuns: sum.rpsRuns,
		P50Ms: millis(sum.p50), P99Ms: millis(sum.p99), ServerCPUUsReq: float64(sum.cpu) / float64(time.Microsecond),
		ServerCPU: sum.serverUtil, LoadCPU: sum.loadUtil, OtherCPU: sum.otherUtil,
		RSSBytes: s.mem.RSS, HWMBytes: s.mem.HWM, RSSAnonBytes: s.mem.RSSAnon, RSSFileBytes: s.mem.RSSFile,
		Errors: sum.errors, FirstError: sum.firstError,
	}
	if s.target != targetCeiling {
		row.Wrong = &sum.mismatches
	}
	if v := s.visibility; v != nil {
		p50, p99 := v.percentiles()
		row.Visibility = &visibilityResult{Changes: len(v.times), P50Ms: millis(p50), P99Ms: millis(p99),
			NotVisible: v.notVisible, Errors: v.errors, FirstError: v.firstError}
	}
	return row
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (h *harness) loadInfo() loadInfo {
	return loadInfo{Connections: h.conns, WarmupS: h.warmup.Seconds(), DurationS: h.duration.Seconds(), Runs: h.runs, Pinned: h.taskset != ""}
}

func workloadOf(p params, s seeding) workloadInfo {
	return workloadInfo{Store: "bolt", Seed: p.Seed, Users: p.Users, Resources: p.Resources, Grants: p.Grants, Checks: p.Checks,
		StoreBytes: s.storeSize, OPADataBytes: s.dataSize, OPALightDataBytes: s.lightSize, SeededS: s.took.Seconds()}
}

// results is the report as data.
func (r report) results() results {
	res := results{Benchmark: "bench", Machine: r.machine, Load: r.h.loadInfo(), Workloads: []workloadInfo{workloadOf(r.workload, r.seeded)},
		Skipped: r.skipped}
	if m := r.mongo; m != nil {
		for _, ms := range m.seedings {
			p := ms.p
			res.Workloads = append(res.Workloads, workloadInfo{Store: "mongodb", Seed: p.Seed, Users: p.Users, Resources: p.Resources,
				Grants: p.Grants, Checks: p.Checks, SeededS: ms.took.Seconds(), MongoDB: m.describe, Systems: ms.systems})
		}
	}
	for _, s := range r.series {
		users := s.users
		if users == 0 {
			users = r.workload.Users
		}
		res.Rows = append(res.Rows, rowOf(s, s.label(), users))
	}
	for _, rt := range r.ratios() {
		res.Ratios = append(res.Ratios, ratioResult{Name: rt.name, Target: rt.target, Unit: rt.unit, Values: rt.values})
	}
	return res
}

// saveResults stamps res with the commit and the time and writes it into the -results folder,
// unless that is empty.
func (f *harnessFlags) saveResults(res results, progress io.Writer) error {
	if f.results == "" {
		return nil
	}
	res.Commit, res.Modified = gitRevision()
	res.Date = time.Now().UTC()
	path, err := writeResults(f.results, res)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	fmt.Fprintf(progress, "results written to %s\n", path)
	return nil
}

// writeResults writes res into dir as DATE-COMMIT-BENCHMARK.json, so that the files sort by
// date, and returns the file's path.
func writeResults(dir string, res results) (string, error) {
	short := res.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	name := fmt.Sprintf("%s-%s-%s.json", res.Date.UTC().Format("2006-01-02T1504Z"), short, res.Benchmark)
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, append(raw, '\n'), 0o644)
}

// gitRevision is the checkout's revision and whether it has changes not committed; "unknown"
// when git or the checkout is missing.
func gitRevision() (string, bool) {
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(rev)), err == nil && len(bytes.TrimSpace(status)) > 0
}
