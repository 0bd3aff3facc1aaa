package journal

import (
	"os"
	"syscall"
)

// fdatasync writes f's data to the disk, and of its metadata only what reading the data back
// needs (its size), as bbolt syncs its own file.
func fdatasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
