package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRecordCPUProfile: the file holds a profile (gzip-compressed, as pprof writes them, even
// with no samples) once recording stops, a second recording cannot start while one runs, and a
// file that cannot be made is an error.
func TestRecordCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := recordCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recordCPUProfile(filepath.Join(t.TempDir(), "second.pprof")); err == nil {
		t.Error("a second recording started while the first ran")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the profile is not gzip data: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Errorf("the profile reads %d bytes, error %v; want some", len(raw), err)
	}
	if _, err := recordCPUProfile(filepath.Join(t.TempDir(), "dir-missing", "x.pprof")); err == nil {
		t.Error("recording into a folder that does not exist did not fail")
	}
}
