//go:build !linux

package journal

import "os"

// fdatasync writes f to the disk.
func fdatasync(f *os.File) error { return f.Sync() }
