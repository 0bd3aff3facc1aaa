//go:build !linux

package bolt

// populateFlag is nothing where mmap cannot read a file in at once (Preload).
const populateFlag = 0
