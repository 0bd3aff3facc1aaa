package logbuf

// MaxDelay is the longest a Writer holds lines, for tests that run on synctest's clock.
const MaxDelay = maxDelay
