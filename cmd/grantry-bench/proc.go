package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat. Linux fixes it at 100 for user space
// whatever the kernel's own tick rate, so it needs no sysconf (and no cgo) to learn.
const userHZ = 100

// cpuTime returns the CPU time, user plus system, that process pid has used so far, all its
// threads together (fields 14 and 15 of /proc/<pid>/stat). Its resolution is 10 ms, which over
// a run of seconds is well under one percent.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	return parseStatCPU(raw)
}

func parseStatCPU(raw []byte) (time.Duration, error) {
	// The command name, field 2, is in parentheses and may hold spaces and parentheses itself;
	// the fields after the last ')' are plain.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc stat %q: no command name", raw)
	}
	fields := strings.Fields(string(raw[end+1:]))
	// fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse /proc stat: %d fields", len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// childrenOf returns the processes whose parent is pid (field 4 of /proc/<pid>/stat), such as
// nginx's workers, whose CPU time their master's own does not include.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", pid, err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A process that ended since the listing is no child any more.
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		if parent, err := parseStatParent(raw); err == nil && parent == pid {
			out = append(out, child)
		}
	}
	return out, nil
}

func parseStatParent(raw []byte) (int, error) {
	// As in parseStatCPU: fields[0] is field 3 (state), so the parent, field 4, is fields[1].
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc stat %q: no command name", raw)
	}
	fields := strings.Fields(string(raw[end+1:]))
	if len(fields) < 2 {
		return 0, fmt.Errorf("parse /proc stat: %d fields", len(fields)+2)
	}
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, fmt.Errorf("parse /proc stat: %w", err)
	}
	return n, nil
}

// machineCPU returns the CPU time the processes of the machine have used so far, from the first
// line of /proc/stat: user, nice and system, plus steal (time the hypervisor gave to another
// machine, which is lost to this one just the same). Interrupt and softirq time are left out:
// they are mostly the kernel carrying the benchmark's own loopback traffic, a fifth of a CPU at
// the ceiling's rate, which is not a disturbance. Idle and iowait are not busy.
func machineCPU() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("machine cpu time: %w", err)
	}
	return parseMachineCPU(raw)
}

func parseMachineCPU(raw []byte) (time.Duration, error) {
	first, _, _ := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(first))
	// cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("parse /proc/stat: first line %q", first)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 8} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// memory is what /proc/<pid>/status says of a process's memory, in bytes.
type memory struct {
	RSS     int64 // VmRSS: resident now, anonymous and file-backed (bbolt's mmap) together
	HWM     int64 // VmHWM: the most ever resident
	RSSAnon int64 // RssAnon: the resident heap and stacks, without mapped files
	RSSFile int64 // RssFile: resident pages of mapped files: the binary, and bbolt's store file
}

// plus is the memory of two processes together, as of the replicas.
func (m memory) plus(o memory) memory {
	return memory{RSS: m.RSS + o.RSS, HWM: m.HWM + o.HWM, RSSAnon: m.RSSAnon + o.RSSAnon, RSSFile: m.RSSFile + o.RSSFile}
}

// memoryOf reads /proc/<pid>/status.
func memoryOf(pid int) (memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("memory of %d: %w", pid, err)
	}
	return parseStatus(raw)
}

func parseStatus(raw []byte) (memory, error) {
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM, "RssAnon:": &m.RSSAnon, "RssFile:": &m.RSSFile}
	found := 0
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" || fields[f[0]] == nil {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parse /proc status %s: %w", f[0], err)
		}
		*fields[f[0]] = kb << 10
		found++
	}
	if found != len(fields) {
		return memory{}, fmt.Errorf("parse /proc status: found %d of VmRSS, VmHWM, RssAnon, RssFile", found)
	}
	return m, nil
}
