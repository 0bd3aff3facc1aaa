package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// affinity moves every thread of this process between CPUs: onto the load generator's CPU
// while servers are pinned, so that the FerretDB it runs stays off the server's, and back.
type affinity struct {
	all unix.CPUSet // what the process was first allowed
}

func newAffinity() (*affinity, error) {
	var a affinity
	if err := unix.SchedGetaffinity(0, &a.all); err != nil {
		return nil, fmt.Errorf("CPU affinity: %w", err)
	}
	return &a, nil
}

// pin runs every thread of this process on cpu, one of taskset's CPU numbers, or on every CPU
// it was first allowed when cpu is empty. Threads started later inherit the setting of the
// thread that starts them; a thread that was being started meanwhile is caught by a second
// pass.
func (a *affinity) pin(cpu string) error {
	set := a.all
	if cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err != nil {
			return fmt.Errorf("CPU affinity: %q is not a CPU number", cpu)
		}
		set.Zero()
		set.Set(n)
	}
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("CPU affinity: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// A thread that ended since the listing is no longer there to move.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("CPU affinity of thread %d: %w", tid, err)
			}
		}
	}
	return nil
}
