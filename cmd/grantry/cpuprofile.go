package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// recordCPUProfile starts recording the process's CPU profile into a new file at path, and
// returns the function that stops recording and closes the file. Only a binary built for
// `make pgo` calls it (cpuprofile_pgo.go, built with -tags cpuprofile): the profile it records
// under make bench's load is cmd/grantry/default.pgo, which go build optimizes the service for.
func recordCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("record CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("record CPU profile: %w", err)
		}
		return nil
	}, nil
}
