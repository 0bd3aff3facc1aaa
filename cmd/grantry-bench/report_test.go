package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd count, unsorted", []float64{9, 1, 5}, 5},
		{"even count: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.xs); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 31234: "31,234", 1000000: "1,000,000", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// result makes a loadResult of n requests in one second.
func result(n int64, cpuPerReq, p99 time.Duration) loadResult {
	return loadResult{Requests: n, Elapsed: time.Second, P50: p99 / 2, P99: p99, ServerCPU: time.Duration(n) * cpuPerReq, LoadCPU: 300 * time.Millisecond}
}

// TestSummarizeTakesEachMetricsMedian checks that one bad run moves no figure of the table.
func TestSummarizeTakesEachMetricsMedian(t *testing.T) {
	s := summarize([]loadResult{
		result(10_000, 100*time.Microsecond, 10*time.Millisecond),
		result(1_000, 900*time.Microsecond, 90*time.Millisecond), // disturbed
		result(12_000, 80*time.Microsecond, 8*time.Millisecond),
	})
	if s.rps != 10_000 || s.cpu != 100*time.Microsecond || s.p99 != 10*time.Millisecond {
		t.Errorf("summary = %v req/s, %v/req, p99 %v; want the middle run's 10000, 100µs, 10ms", s.rps, s.cpu, s.p99)
	}
}

// TestReportRatios checks the ratio lines against figures worked out by hand.
func TestReportRatios(t *testing.T) {
	three := func(r loadResult) []loadResult { return []loadResult{r, r, r} }
	rep := report{
		workload: defaultParams(),
		h:        &harness{conns: 32, runs: 3, duration: time.Second},
		series: []series{
			{system: systemCeiling, target: targetCeiling, placement: "unpinned", runs: three(result(30_000, 25*time.Microsecond, 2*time.Millisecond))},
			{system: systemOPA, target: targetOPA, placement: "unpinned", runs: three(result(10_000, 100*time.Microsecond, 12*time.Millisecond))},
			{system: systemGrantry, target: targetGrantry, placement: "unpinned", runs: three(result(5_000, 200*time.Microsecond, 24*time.Millisecond))},
			{system: systemGrantry, target: targetWrites, placement: "unpinned", runs: three(result(6_000, 50*time.Microsecond, 9*time.Millisecond))},
			{system: systemGrantryLogsOff, target: targetGrantry, placement: "unpinned", runs: three(result(15_000, 40*time.Microsecond, 5*time.Millisecond))},
			{system: systemOPALight, target: targetOPALight, placement: "unpinned", runs: three(result(20_000, 50*time.Microsecond, 3*time.Millisecond))},
			{system: systemGrantryABAC, target: targetABAC, placement: "unpinned", runs: three(result(4_000, 250*time.Microsecond, 30*time.Millisecond)),
				mem: memory{RSSAnon: 300 << 20, RSSFile: 170 << 20}},
			{system: systemGrantryMongo, target: targetGrantry, placement: "unpinned", runs: three(result(2_500, 400*time.Microsecond, 40*time.Millisecond))},
			{system: systemGrantry, target: targetExtAuthz, placement: "unpinned", runs: three(result(3_000, 330*time.Microsecond, 20*time.Millisecond))},
			{system: systemGrantryReplicas, target: targetReplicas, placement: "unpinned", runs: three(result(7_000, 140*time.Microsecond, 20*time.Millisecond)),
				visibility: &visibility{times: []time.Duration{120 * time.Millisecond, 80 * time.Millisecond, 450 * time.Millisecond}}},
		},
	}
	var out bytes.Buffer
	rep.write(&out)
	for _, want := range []string{
		`Grantry / OPA, req/s\s+0\.50×`,
		`Grantry / ceiling, req/s\s+0\.17×`,
		`Grantry / ceiling, CPU µs/req\s+8\.00×`,
		`Grantry / OPA, p99\s+2\.00×`,
		`Grantry grant\+revoke, req/s\s+6,000`,
		`unpinned\s+Grantry can_user_access\s+5,000\s+12\.00ms\s+24\.00ms\s+200\.0`,
		`unpinned\s+Grantry, logs off\s+15,000\s+2\.50ms\s+5\.00ms\s+40\.0`,
		`logs off / OPA, req/s\s+1\.50×`,
		`logs off / ceiling, req/s\s+0\.50×`,
		`logs off / ceiling, CPU µs/req\s+1\.60×`,
		`Grantry / OPA-lightest, req/s\s+0\.25×`,
		`ABAC / shipped policy, req/s\s+0\.80×`,
		`MongoDB / embedded, req/s\s+0\.50×`,
		`replicas: change seen on B, p99\s+450\.0ms\s+≤ 1 s`,
		`Grantry / OPA, req/s\s+0\.50×\s+≥ 4×`,
		`ABAC / shipped policy, req/s\s+0\.80×\s+≥ 0\.85×`,
		`unpinned\s+OPA server, lightest\s+20,000`,
		`unpinned\s+Grantry, ABAC policy\s+4,000\s+15\.00ms\s+30\.00ms\s+250\.0\s+100%\s+30%\s+0%\s+300MiB\s+170MiB\s+0\s+0`,
		`unpinned\s+Grantry on MongoDB\s+2,500`,
		`unpinned\s+Grantry ext_authz gRPC\s+3,000`,
		`unpinned\s+Grantry, 2 replicas\s+7,000`,
		`Grantry, 2 replicas \(unpinned, the load split between A and B\): 3 changes made on A seen on B after p50 120\.00ms, p99 450\.00ms; 0 not seen`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "WARNING") {
		t.Errorf("report warns of a disturbed machine, but no run had other CPU:\n%s", out.String())
	}
}

// TestReportWarnsOfADisturbedMachine: a run during which other work took half a CPU makes the
// report say its figures are low.
func TestReportWarnsOfADisturbedMachine(t *testing.T) {
	busy := result(5_000, 200*time.Microsecond, 24*time.Millisecond)
	busy.OtherCPU = 500 * time.Millisecond
	rep := report{
		workload: defaultParams(),
		h:        &harness{conns: 32, runs: 1, duration: time.Second},
		series:   []series{{system: systemGrantry, target: targetGrantry, placement: "unpinned", runs: []loadResult{busy}}},
	}
	var out bytes.Buffer
	rep.write(&out)
	if !strings.Contains(out.String(), disturbedWarning) || !regexp.MustCompile(`Grantry can_user_access .* 50% `).MatchString(out.String()) {
		t.Errorf("report of a disturbed run lacks the other CPU figure or the warning:\n%s", out.String())
	}
}

// TestMongoLine: the heading says where the MongoDB rows ran, and why their workload is smaller
// than make bench's when it is.
func TestMongoLine(t *testing.T) {
	full := defaultParams()
	small := full
	small.Users = smallMongoUsers
	tests := []struct {
		name string
		m    mongoReport
		want string
	}{
		{"MongoDB", mongoReport{describe: "GRANTRY_BENCH_MONGO_URI, database grantry_bench_1",
			seedings: []mongoSeeding{{p: full, took: 30 * time.Second, systems: []string{rowMongo, rowReplicas}}}},
			"GRANTRY_BENCH_MONGO_URI, database grantry_bench_1; grantry-mongo, grantry-replicas: 10,000 users × 50 grants over 1,000 resources, seeded in 30s"},
		{"FerretDB", mongoReport{describe: "FerretDB", ferret: true, seedings: []mongoSeeding{
			{p: full, took: 40 * time.Second, systems: []string{rowMongo}}, {p: small, took: 2 * time.Second, systems: []string{rowReplicas}}}},
			"FerretDB (the servers' decision log off); grantry-mongo: 10,000 users × 50 grants over 1,000 resources, seeded in 40s; " +
				"grantry-replicas: 50 users × 50 grants over 1,000 resources, the first of make bench's 10,000 in a database of their own " +
				"(FerretDB reads a user's grants by scanning every grant, as a replica does after each change), seeded in 2s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.line(full); got != tc.want {
				t.Errorf("line =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
