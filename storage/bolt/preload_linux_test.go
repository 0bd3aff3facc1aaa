package bolt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// TestPreloadReadsTheFileIn drops the data file from the page cache, then opens it with and
// without Preload: only with it is every page of the file in memory once Open returns.
func TestPreloadReadsTheFileIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grantry.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 2)
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		opts    []Option
		preload bool
	}{
		{"without", nil, false},
		{"with", []Option{Preload()}, true},
	} {
		dropFromPageCache(t, path)
		if in := residentFraction(t, path); in > 0.1 {
			t.Skipf("the page cache keeps %.0f%% of the file after FADV_DONTNEED here", 100*in)
		}
		s, err := Open(t.Context(), path, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		in := residentFraction(t, path)
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if tc.preload && in < 1 {
			t.Errorf("%s Preload: %.0f%% of the file in memory after Open, want all of it", tc.name, 100*in)
		}
		if !tc.preload && in > 0.5 {
			t.Errorf("%s Preload: %.0f%% of the file in memory after Open, want only the pages Open reads", tc.name, 100*in)
		}
	}
}

// TestPreloadMapsRoomToGrow: a data file opened with Preload is mapped with mapRoom to spare,
// new or reopened, so that writing it larger does not map it (and read it in) again; without
// Preload bbolt maps it again as it grows.
func TestPreloadMapsRoomToGrow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []Option
		wantRoom bool
	}{
		{"with", []Option{Preload()}, true},
		{"without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grantry.db")
			for _, open := range []string{"new", "reopened"} {
				size := 0 // of the file as Open finds it
				if info, err := os.Stat(path); err == nil {
					size = int(info.Size())
				}
				s, err := Open(t.Context(), path, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				before := mappedSize(t, path)
				if tc.wantRoom && before-size < mapRoom {
					t.Errorf("a %s file of %d bytes is mapped to %d; want at least %d to spare", open, size, before, mapRoom)
				}
				fill(t, s, 4)
				if after := mappedSize(t, path); (after == before) != tc.wantRoom {
					t.Errorf("a %s file was mapped to %d bytes before writing 4 MB and %d after; want the map kept %v", open, before, after, tc.wantRoom)
				}
				if err := s.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// fill writes mb MB more into s's data file.
func fill(t *testing.T, s *Store, mb int) {
	t.Helper()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("filler"))
		if err != nil {
			return err
		}
		from := b.Stats().KeyN
		for i := range mb * 1000 {
			if err := b.Put(fmt.Appendf(nil, "k%08d", from+i), bytes.Repeat([]byte{'v'}, 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mappedSize is the size of this process's mappings of the file at path (/proc/self/maps,
// which names the file by its path with no symbolic links).
func mappedSize(t *testing.T, path string) int {
	t.Helper()
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for line := range strings.Lines(string(maps)) {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[5] != path {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
			t.Fatal(err)
		}
		size += int(hi - lo)
	}
	return size
}

// dropFromPageCache asks the kernel to forget the file's pages, which are clean once the store
// that wrote them is closed.
func dropFromPageCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// residentFraction is the share of the file's pages that are in the page cache.
func residentFraction(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	pages := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	// x/sys/unix has no Mincore; the call takes the mapping and a byte per page.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&pages[0]))); errno != 0 {
		t.Fatal(errno)
	}
	resident := 0
	for _, p := range pages {
		resident += int(p & 1)
	}
	return float64(resident) / float64(len(pages))
}
