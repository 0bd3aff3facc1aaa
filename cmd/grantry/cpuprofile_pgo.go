//go:build cpuprofile

package main

import (
	"fmt"
	"os"
)

// With GRANTRY_CPU_PROFILE set to a file, a binary built with -tags cpuprofile records its CPU
// profile there from start to exit: what `make pgo` builds and runs. The service as shipped has
// no way to write one.
func init() {
	path := os.Getenv("GRANTRY_CPU_PROFILE")
	if path == "" {
		return
	}
	stop, err := recordCPUProfile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grantry: GRANTRY_CPU_PROFILE:", err)
		os.Exit(1)
	}
	atExit = func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "grantry: GRANTRY_CPU_PROFILE:", err)
		}
	}
}
