package bolt

import "syscall"

// populateFlag makes mmap read the mapped file in at once (Preload).
const populateFlag = syscall.MAP_POPULATE
