package main

import (
	"slices"
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
