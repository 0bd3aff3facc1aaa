// Package logbuf gathers log lines into few writes. Grantry logs every request, and at
// thousands of checks a second a write to stderr per line costs more than the check: lines
// are held for a moment and written together, and a record at warning level or above is
// written at once, with everything before it.
package logbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The most a Writer holds before it writes, and the longest it holds a line.
const (
	maxHeld  = 64 << 10
	maxDelay = 100 * time.Millisecond
)

// Writer holds what is written to it and passes it on to the underlying writer at most
// maxDelay later, or at once when maxHeld bytes are waiting. It is safe for concurrent use;
// each Write is passed on whole and in order. Close writes what is held.
type Writer struct {
	mu      sync.Mutex
	out     io.Writer
	held    []byte
	pending bool // a flush is scheduled
	closed  bool
}

// New returns a Writer that passes what it holds on to out.
func New(out io.Writer) *Writer {
	return &Writer{out: out}
}

// Write holds p, to be written with the lines around it. It never fails: an error of the
// underlying writer is returned by the next Flush or Close.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	if len(w.held)+len(p) > maxHeld {
		_ = w.flushLocked()
	}
	if w.held == nil {
		// Lines are held up to maxHeld, flushed before they would pass it: a buffer of that
		// size, made once and kept, never grows. Grown from empty after every flush, as
		// append grows it, it cost about 440 bytes of garbage a request under make bench's
		// load.
		w.held = make([]byte, 0, max(maxHeld, len(p)))
	}
	w.held = append(w.held, p...)
	if !w.pending {
		w.pending = true
		time.AfterFunc(maxDelay, func() { _ = w.Flush() })
	}
	return len(p), nil
}

// Flush writes what is held now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	w.pending = false
	if len(w.held) == 0 {
		return nil
	}
	_, err := w.out.Write(w.held)
	if cap(w.held) > maxHeld {
		w.held = nil // a line longer than maxHeld does not keep its buffer for good
	} else {
		w.held = w.held[:0]
	}
	return err
}

// Close writes what is held; what is written later goes straight to the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.flushLocked()
}

// Urgent returns a handler that handles records with h and flushes w after every record at
// warning level or above, so that trouble is never held back: h must write to w.
func Urgent(h slog.Handler, w *Writer) slog.Handler {
	return urgent{Handler: h, w: w}
}

type urgent struct {
	slog.Handler
	w *Writer
}

func (u urgent) Handle(ctx context.Context, r slog.Record) error {
	err := u.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := u.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (u urgent) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgent{Handler: u.Handler.WithAttrs(attrs), w: u.w}
}

func (u urgent) WithGroup(name string) slog.Handler {
	return urgent{Handler: u.Handler.WithGroup(name), w: u.w}
}
