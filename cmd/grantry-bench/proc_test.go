package main

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    time.Duration
		wantErr bool
	}{
		// utime 150 and stime 50 ticks are fields 14 and 15.
		{name: "plain", raw: "42 (grantry) S 1 42 42 0 -1 4194560 1000 0 0 0 150 50 0 0 20 0 8 0 100 0 0",
			want: 2 * time.Second},
		{name: "command name with spaces and parentheses", raw: "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0",
			want: 100 * time.Millisecond},
		{name: "no command name", raw: "42 grantry S 1", wantErr: true},
		{name: "too few fields", raw: "42 (grantry) S 1 2 3", wantErr: true},
		{name: "not a number", raw: "42 (grantry) S 1 42 42 0 -1 0 0 0 0 0 x 3 0 0", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.raw))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseMachineCPU(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    time.Duration
		wantErr bool
	}{
		// user nice system idle iowait irq softirq steal: idle, iowait, irq and softirq are left out.
		{name: "busy time", raw: "cpu  100 1 50 9000 30 2 7 49 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n", want: 2 * time.Second},
		{name: "not the cpu line", raw: "intr 1 2 3 4 5 6 7 8 9\n", wantErr: true},
		{name: "short", raw: "cpu 1 2 3\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMachineCPU([]byte(tc.raw))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseMachineCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	raw := "Name:\tgrantry\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t   512 kB\nRssFile:\t 512 kB\n"
	got, err := parseStatus([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := (memory{RSS: 1 << 20, HWM: 2 << 20, RSSAnon: 512 << 10, RSSFile: 512 << 10}); got != want {
		t.Errorf("parseStatus = %+v, want %+v", got, want)
	}
	if _, err := parseStatus([]byte("Name:\tx\nVmRSS:\t1 kB\n")); err == nil {
		t.Error("parseStatus of a status without VmHWM succeeded")
	}
	if _, err := parseStatus([]byte("VmHWM:\t2 kB\nVmRSS:\t1 kB\nRssAnon:\t1 kB\n")); err == nil {
		t.Error("parseStatus of a status without RssFile succeeded")
	}
	if sum := (memory{RSS: 1, HWM: 2, RSSAnon: 3, RSSFile: 4}).plus(memory{RSS: 10, HWM: 20, RSSAnon: 30, RSSFile: 40}); sum != (memory{RSS: 11, HWM: 22, RSSAnon: 33, RSSFile: 44}) {
		t.Errorf("plus = %+v, want each field added", sum)
	}
}

// TestProcOfThisProcess reads this very process, which is alive and has used some CPU and memory.
func TestProcOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// The kernel counts CPU time in ticks: read it (which takes some) until one has passed.
	d, err := cpuTime(os.Getpid())
	for deadline := time.Now().Add(10 * time.Second); err == nil && d == 0 && time.Now().Before(deadline); {
		d, err = cpuTime(os.Getpid())
	}
	if err != nil || d <= 0 {
		t.Errorf("cpuTime(this process) = %v, %v; want some CPU time", d, err)
	}
	if d, err := machineCPU(); err != nil || d <= 0 {
		t.Errorf("machineCPU() = %v, %v; want some CPU time", d, err)
	}
	m, err := memoryOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("memory = %+v, want RSS > 0 and HWM ≥ RSS", m)
	}
	children, err := childrenOf(os.Getppid())
	if err != nil || !slices.Contains(children, os.Getpid()) {
		t.Errorf("childrenOf(parent) = %v, %v; want this process among them", children, err)
	}
}

func TestParseStatParent(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    int
		wantErr bool
	}{
		{name: "plain", raw: "43 (nginx) S 42 42 42 0 -1 4194560 1000 0 0 0 150 50", want: 42},
		{name: "command name with spaces and parentheses", raw: "43 (a (b) c) R 7 42 42", want: 7},
		{name: "no command name", raw: "43 nginx S 42", wantErr: true},
		{name: "too few fields", raw: "43 (nginx) S", wantErr: true},
		{name: "not a number", raw: "43 (nginx) S x 42", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatParent([]byte(tc.raw))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStatParent = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
