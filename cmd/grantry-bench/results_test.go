package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestResultsFile: make bench's results file holds what produced the run and every figure of
// every row and ratio, as the printed table shows them, and is named so that files sort by date.
func TestResultsFile(t *testing.T) {
	three := func(r loadResult) []loadResult { return []loadResult{r, r, r} }
	grantry := three(result(5_000, 200*time.Microsecond, 24*time.Millisecond))
	grantry[1].Requests = 4_000 // the median stays 5,000; the run's own figure is kept
	grantry[2].Mismatches = 1
	rep := report{
		machine:  machineInfo{CPU: "Test CPU", CPUs: 2, OS: "linux", Arch: "amd64", Go: "go1.26.8", OPA: "1.22.2"},
		workload: defaultParams(),
		seeded:   seeding{took: 7 * time.Second, storeSize: 169 << 20, dataSize: 40 << 20},
		h:        &harness{conns: 32, runs: 3, duration: 10 * time.Second, warmup: time.Second},
		series: []series{
			{system: systemCeiling, target: targetCeiling, placement: "unpinned", runs: three(result(30_000, 25*time.Microsecond, 2*time.Millisecond))},
			{system: systemOPA, target: targetOPA, placement: "unpinned", runs: three(result(10_000, 100*time.Microsecond, 12*time.Millisecond))},
			{system: systemGrantry, target: targetGrantry, placement: "unpinned", runs: grantry, mem: memory{RSS: 800 << 20, HWM: 810 << 20, RSSAnon: 500 << 20, RSSFile: 300 << 20}},
			{system: systemGrantry, target: targetWrites, placement: "unpinned", runs: three(result(6_000, 50*time.Microsecond, 9*time.Millisecond))},
			{system: systemGrantryReplicas, target: targetReplicas, placement: "unpinned", users: 50, runs: three(result(4_000, 250*time.Microsecond, 30*time.Millisecond)),
				visibility: &visibility{times: []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 200 * time.Millisecond}, notVisible: 1, errors: 2, firstError: "boom"}},
		},
		mongo: &mongoReport{describe: "FerretDB v1.24.2 on SQLite", seedings: []mongoSeeding{
			{p: defaultParams(), took: 40 * time.Second, systems: []string{rowMongo}},
			{p: params{Seed: 1, Users: 50, Resources: 1000, Grants: 50, Checks: 1 << 20}, took: time.Second, systems: []string{rowReplicas}},
		}},
	}
	res := rep.results()
	res.Commit = "0123456789abcdef0123456789abcdef01234567"
	res.Date = time.Date(2026, 11, 27, 15, 30, 12, 0, time.UTC)
	dir := t.TempDir()
	path, err := writeResults(filepath.Join(dir, "results"), res)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "results", "2026-11-27T1530Z-0123456789ab-bench.json"); path != want {
		t.Errorf("written to %s, want %s", path, want)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	check := func(field string, want any) {
		t.Helper()
		if diff := cmp.Diff(want, got[field]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", field, diff)
		}
	}
	check("benchmark", "bench")
	check("commit", res.Commit)
	check("modified", false)
	check("date", "2026-11-27T15:30:12Z")
	check("machine", map[string]any{"cpu": "Test CPU", "cpus": 2.0, "os": "linux", "arch": "amd64", "go": "go1.26.8", "opa": "1.22.2"})
	check("load", map[string]any{"connections": 32.0, "warmup_s": 1.0, "duration_s": 10.0, "runs": 3.0, "pinned": false})
	check("workloads", []any{
		map[string]any{"store": "bolt", "seed": 1.0, "users": 10000.0, "resources": 1000.0, "grants_per_user": 50.0,
			"checks": float64(1 << 20), "store_bytes": float64(169 << 20), "opa_data_bytes": float64(40 << 20), "seeded_s": 7.0},
		map[string]any{"store": "mongodb", "seed": 1.0, "users": 10000.0, "resources": 1000.0, "grants_per_user": 50.0,
			"checks": float64(1 << 20), "store_bytes": 0.0, "seeded_s": 40.0, "mongodb": "FerretDB v1.24.2 on SQLite", "systems": []any{"grantry-mongo"}},
		map[string]any{"store": "mongodb", "seed": 1.0, "users": 50.0, "resources": 1000.0, "grants_per_user": 50.0,
			"checks": float64(1 << 20), "store_bytes": 0.0, "seeded_s": 1.0, "mongodb": "FerretDB v1.24.2 on SQLite", "systems": []any{"grantry-replicas"}},
	})
	rows, _ := got["rows"].([]any)
	if len(rows) != len(rep.series) {
		t.Fatalf("%d rows, want one per series (%d)", len(rows), len(rep.series))
	}
	if diff := cmp.Diff(map[string]any{
		"placement": "unpinned", "system": "grantry", "target": "grantry", "label": "Grantry can_user_access", "users": 10000.0,
		"req_per_s": 5000.0, "req_per_s_runs": []any{5000.0, 4000.0, 5000.0}, "p50_ms": 12.0, "p99_ms": 24.0,
		"server_cpu_us_per_req": 200.0, "server_cpu": 1.0, "load_cpu": 0.3, "other_cpu": 0.0,
		"rss_bytes": float64(800 << 20), "hwm_bytes": float64(810 << 20), "rss_anon_bytes": float64(500 << 20), "rss_file_bytes": float64(300 << 20),
		"wrong": 1.0, "errors": 0.0,
	}, rows[2]); diff != "" {
		t.Errorf("Grantry's row (-want +got):\n%s", diff)
	}
	replicas := rows[4].(map[string]any)
	if diff := cmp.Diff(map[string]any{"changes": 3.0, "p50_ms": 200.0, "p99_ms": 300.0, "not_visible": 1.0, "errors": 2.0, "first_error": "boom"},
		replicas["visibility"]); diff != "" || replicas["users"] != 50.0 || replicas["label"] != "Grantry, 2 replicas" {
		t.Errorf("the replicas' row: users %v, label %v, visibility (-want +got):\n%s", replicas["users"], replicas["label"], diff)
	}
	if _, ok := rows[2].(map[string]any)["visibility"]; ok {
		t.Error("Grantry's row has a visibility; only the replicas' has")
	}
	if ceiling := rows[0].(map[string]any); ceiling["wrong"] != nil {
		t.Errorf("the ceiling's wrong = %v, want null: its answers are not checked", ceiling["wrong"])
	}
	ratios, _ := got["ratios"].([]any)
	want := map[string]any{
		"Grantry / OPA, req/s":            map[string]any{"unpinned": 0.5},
		"Grantry grant+revoke, req/s":     map[string]any{"unpinned": 6000.0},
		"logs off / OPA, req/s":           map[string]any{}, // not measured
		"replicas: change seen on B, p99": map[string]any{"unpinned": 300.0},
	}
	for _, r := range ratios {
		r := r.(map[string]any)
		if w, ok := want[r["name"].(string)]; ok {
			if diff := cmp.Diff(w, r["values"]); diff != "" {
				t.Errorf("ratio %s (-want +got):\n%s", r["name"], diff)
			}
			delete(want, r["name"].(string))
		}
	}
	if len(want) > 0 {
		t.Errorf("ratios missing: %v", want)
	}
}

// TestSaveResults: the results folder is a flag; empty writes nothing, and a file written is
// stamped with a commit and a date.
func TestSaveResults(t *testing.T) {
	rep := report{workload: defaultParams(), h: &harness{conns: 1, runs: 1, duration: time.Second}}
	if err := (&harnessFlags{}).saveResults(rep.results(), os.Stderr); err != nil {
		t.Fatalf("with no results folder: %v", err)
	}
	dir := t.TempDir()
	if err := (&harnessFlags{results: dir}).saveResults(rep.results(), os.Stderr); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*-bench.json"))
	if len(files) != 1 || !regexp.MustCompile(`/\d{4}-\d\d-\d\dT\d{4}Z-([0-9a-f]{12}|unknown)-bench\.json$`).MatchString(files[0]) {
		t.Fatalf("files written: %v", files)
	}
	var res results
	raw, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(raw, &res); err != nil || res.Commit == "" || res.Date.IsZero() {
		t.Errorf("results = %+v, %v; want a commit and a date", res, err)
	}
}
