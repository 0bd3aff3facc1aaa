package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "10s", want: 10 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "5", want: 5 * time.Second},
		{in: "2.5", want: 2500 * time.Millisecond},
		{in: "0", wantErr: true},
		{in: "-1s", wantErr: true},
		{in: "soon", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDuration(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestServerEnvDropsSettingsThatChangeWhatIsMeasured: a GRANTRY_MONGO_URI in the shell must not
// send the benchmark to a MongoDB, nor GOMAXPROCS undo the pinning.
func TestServerEnvDropsSettingsThatChangeWhatIsMeasured(t *testing.T) {
	got := serverEnv([]string{"PATH=/bin", "GRANTRY_MONGO_URI=mongodb://x", "GOMAXPROCS=8", "HOME=/root", "GRANTRY_ADDR=:1"})
	if want := []string{"PATH=/bin", "HOME=/root"}; !slices.Equal(got, want) {
		t.Errorf("serverEnv = %v, want %v", got, want)
	}
}

// TestInterleave: the systems' first targets take turns run by run, so that a drift of the
// machine's speed falls on each alike, and the other targets (writes) follow every check.
func TestInterleave(t *testing.T) {
	systems := []measured{
		{system: systemCeiling, targets: []string{targetCeiling}},
		{system: systemOPA, targets: []string{targetOPA}},
		{system: systemGrantry, targets: []string{targetGrantry, targetWrites}},
	}
	got := interleave(systems, 3)
	want := []step{
		{0, targetCeiling, 0}, {1, targetOPA, 0}, {2, targetGrantry, 0},
		{0, targetCeiling, 1}, {1, targetOPA, 1}, {2, targetGrantry, 1},
		{0, targetCeiling, 2}, {1, targetOPA, 2}, {2, targetGrantry, 2},
		{2, targetWrites, 0}, {2, targetWrites, 1}, {2, targetWrites, 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("interleave =\n%v\nwant\n%v", got, want)
	}
	if got := interleave(systems[2:], 2); !slices.Equal(got, []step{{0, targetGrantry, 0}, {0, targetGrantry, 1}, {0, targetWrites, 0}, {0, targetWrites, 1}}) {
		t.Errorf("interleave of one system = %v, want its checks, then its writes", got)
	}
}

func TestKeyFileArgs(t *testing.T) {
	seeded, bare := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(seeded, keyFile), []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, target string
		want        bool // whether -key-file is given
	}{
		{seeded, targetGrantry, true},
		{seeded, targetOPA, true},
		{seeded, targetCeiling, true},
		{bare, targetOPA, false},
		{bare, targetOPALight, false},
		{bare, targetCeiling, false},
		// A Grantry target is always given the file, so that its load fails loudly without one.
		{bare, targetGrantry, true},
		{bare, targetWrites, true},
	}
	for _, tc := range tests {
		got := keyFileArgs(tc.dir, tc.target)
		if want := []string{"-key-file", filepath.Join(tc.dir, keyFile)}; tc.want != slices.Equal(got, want) || (!tc.want && got != nil) {
			t.Errorf("keyFileArgs(%s, %s) = %q; want -key-file: %v", tc.dir, tc.target, got, tc.want)
		}
	}
}

func TestSettle(t *testing.T) {
	const window = time.Millisecond
	tests := []struct {
		name      string
		busyFor   int           // windows busy (a whole CPU) before the machine goes quiet; -1: never
		limit     time.Duration // of the wait
		wantReads int           // reads of the CPU time; 0: not counted
		wantLine  string        // in the progress output
	}{
		{name: "quiet", busyFor: 0, limit: time.Minute, wantReads: 3},
		{name: "settles", busyFor: 5, limit: time.Minute, wantReads: 8},
		{name: "busy once between quiet windows", busyFor: 1, limit: time.Minute, wantReads: 4},
		{name: "never settles", busyFor: -1, limit: 30 * time.Millisecond, wantLine: "still busy (100% of a CPU)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var used time.Duration
			reads := 0
			busy := func() (time.Duration, error) {
				if reads > 0 && (tc.busyFor < 0 || reads <= tc.busyFor) {
					used += window // a whole CPU over the window
				}
				reads++
				return used, nil
			}
			var out strings.Builder
			settle(context.Background(), busy, window, tc.limit, &out)
			if tc.wantReads != 0 && reads != tc.wantReads {
				t.Errorf("read the CPU time %d times, want %d", reads, tc.wantReads)
			}
			if !strings.Contains(out.String(), tc.wantLine) || (tc.wantLine == "" && strings.Contains(out.String(), "still busy")) {
				t.Errorf("progress %q, want it to say %q", out.String(), tc.wantLine)
			}
		})
	}
}
