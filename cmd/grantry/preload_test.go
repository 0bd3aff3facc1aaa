package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/grantry/grantry/internal/config"
)

func TestFitsInMemory(t *testing.T) {
	const meminfo = "MemTotal:       24684148 kB\nMemFree:        20000000 kB\nMemAvailable:    8388608 kB\n" // 8 GiB available
	tests := []struct {
		name    string
		size    int64
		meminfo string
		want    bool
	}{
		{"small file", 169 << 20, meminfo, true},
		{"half exactly", 4 << 30, meminfo, true},
		{"over half", 4<<30 + 1, meminfo, false},
		{"larger than memory", 6 << 30, "MemAvailable:  1048576 kB\n", false},
		{"no MemAvailable (an old kernel)", 100 << 30, "MemTotal: 1024 kB\nMemFree: 512 kB\n", true},
		{"unreadable figure", 100 << 30, "MemAvailable: lots kB\n", true},
		{"other unit", 100 << 30, "MemAvailable: 1024 MB\n", true},
		{"empty", 100 << 30, "", true},
	}
	for _, tc := range tests {
		if got, _ := fitsInMemory(tc.size, tc.meminfo); got != tc.want {
			t.Errorf("%s: fitsInMemory(%d) = %v, want %v", tc.name, tc.size, got, tc.want)
		}
	}
}

func TestStoreOptions(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	small := filepath.Join(dir, "grantry.db")
	if err := os.WriteFile(small, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	on, off := config.Default(), config.Default()
	off.Preload = false
	if !on.Preload {
		t.Fatal("GRANTRY_PRELOAD is not on by default")
	}
	for _, tc := range []struct {
		name string
		cfg  config.Config
		path string
		want int
	}{
		{"on, a small file", on, small, 1},
		{"on, a file not made yet", on, filepath.Join(dir, "new.db"), 1},
		{"off", off, small, 0},
	} {
		if got := len(storeOptions(tc.cfg, tc.path, discard)); got != tc.want {
			t.Errorf("%s: %d options, want %d", tc.name, got, tc.want)
		}
	}
}
