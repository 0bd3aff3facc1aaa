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
//
// Lines are held in one buffer while the other is being written out, so that a Write waits
// for the underlying writer only when maxHeld bytes have piled up behind a write still under
// way: with one buffer, every request's access-log line waited behind each 64 KiB write to
// stderr, and that lock was nearly all of the contention a mutex profile of a loaded server
// showed.
type Writer struct {
	// outMu is held while writing to out, and taken before mu, so that what is taken from
	// held is written in the order it was taken.
	outMu sync.Mutex
	out   io.Writer

	mu      sync.Mutex
	held    []byte // lines not yet taken to be written
	spare   []byte // the buffer last written out, empty, to hold lines again
	pending bool   // a flush is scheduled
	closed  bool
}

// New returns a Writer that passes what it holds on to out.
func New(out io.Writer) *Writer {
	return &Writer{out: out}
}

// Write holds p, to be written with the lines around it. It fails only once closed, with the
// underlying writer's error; an error of a flush is returned by Flush or Close.
func (w *Writer) Write(p []byte) (int, error) {
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			w.outMu.Lock()
			defer w.outMu.Unlock()
			return w.out.Write(p)
		}
		if len(w.held) == 0 || len(w.held)+len(p) <= maxHeld {
			break
		}
		w.mu.Unlock()
		_ = w.Flush() // full: what is held goes first
	}
	defer w.mu.Unlock()
	if w.held == nil {
		// Lines are held up to maxHeld, flushed before they would pass it: a buffer of that
		// size, made once and kept (with its spare), never grows. Grown from empty after every
		// flush, as append grows it, it cost about 440 bytes of garbage a request under make
		// bench's load.
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
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	buf := w.take()
	w.mu.Unlock()
	return w.writeOut(buf)
}

// Close writes what is held; what is written later goes straight to the underlying writer.
func (w *Writer) Close() error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	w.closed = true
	buf := w.take()
	w.mu.Unlock()
	return w.writeOut(buf)
}

// take returns what is held, to be written, and holds the next lines in the spare buffer. The
// caller holds outMu and mu.
func (w *Writer) take() []byte {
	w.pending = false
	buf := w.held
	if len(buf) == 0 {
		return nil
	}
	w.held, w.spare = w.spare, nil
	return buf
}

// writeOut writes buf, taken from held, and keeps it as the spare buffer. The caller holds
// outMu, not mu.
func (w *Writer) writeOut(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	_, err := w.out.Write(buf)
	if cap(buf) <= maxHeld { // a line longer than maxHeld does not keep its buffer for good
		w.mu.Lock()
		w.spare = buf[:0]
		w.mu.Unlock()
	}
	return err
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
