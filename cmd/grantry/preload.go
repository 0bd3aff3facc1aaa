package main

import (
	"bufio"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/grantry/grantry/internal/config"
	"github.com/grantry/grantry/storage/bolt"
)

// storeOptions returns how to open the embedded store's file at path: read into memory at
// start (bolt.Preload) when GRANTRY_PRELOAD is on, unless the file is larger than half the
// memory the kernel says is available, where reading it all in would only push out what was
// read before, and make the start as long as reading the whole file. Then it is read on
// demand, and a warning says why.
func storeOptions(cfg config.Config, path string, log *slog.Logger) []bolt.Option {
	if !cfg.Preload {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return []bolt.Option{bolt.Preload()} // a new file, or one bbolt will report on
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return []bolt.Option{bolt.Preload()} // not Linux, where Preload does nothing
	}
	if fits, available := fitsInMemory(info.Size(), string(meminfo)); !fits {
		log.Warn("the data file is larger than half the available memory: reading it on demand, not at start (GRANTRY_PRELOAD)",
			slog.Int64("file_mib", info.Size()>>20), slog.Int64("available_mib", available>>20))
		return nil
	}
	return []bolt.Option{bolt.Preload()}
}

// fitsInMemory reports whether a file of size bytes takes at most half the memory that the
// text of /proc/meminfo says is available, and that memory; without the figure, it fits.
func fitsInMemory(size int64, meminfo string) (fits bool, available int64) {
	available, ok := memAvailable(meminfo)
	return !ok || size <= available/2, available
}

// memAvailable reads MemAvailable, in bytes, from the text of /proc/meminfo.
func memAvailable(meminfo string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemAvailable:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil && kb >= 0
		}
	}
	return 0, false
}
