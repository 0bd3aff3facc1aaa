// Package logbuf gathers log lines into few writes. Grantry logs every request, and at
// thousands of checks a second a write to stderr per line costs more than the check: lines
// are held for a moment and written together, and a record at warning level or above is
// written at once, with everything before it. Records below warning level are held as records
// and made into lines together at the flush, rather than one by one while a request is served.
package logbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The most a Writer holds before it writes (bytes of lines, and records not yet made into
// lines), and the longest it holds either.
const (
	maxHeld    = 64 << 10
	maxRecords = 4096
	maxDelay   = 100 * time.Millisecond
)

// Writer holds what is written to it and passes it on to the underlying writer at most
// maxDelay later, or at once when maxHeld bytes are waiting. It is safe for concurrent use;
// each Write is passed on whole and in order. It also holds the records of Deferred handlers
// until a flush makes them into lines (so a line written to it directly may come before a
// record logged earlier). Flush and Close make what is held into lines and write it.
//
// Lines are held in one buffer while the other is being written out, so that a Write waits
// for the underlying writer only when maxHeld bytes have piled up behind a write still under
// way: with one buffer, every request's access-log line would wait behind each write of
// maxHeld bytes to stderr, under a lock that every request takes.
type Writer struct {
	// handleMu is held while records taken from records are handled, so that they are
	// handled in the order they were logged; it is taken before outMu.
	handleMu sync.Mutex
	// outMu is held while writing to out, and taken before mu, so that what is taken from
	// held is written in the order it was taken.
	outMu sync.Mutex
	out   io.Writer

	mu           sync.Mutex
	held         []byte   // lines not yet taken to be written
	spare        []byte   // the buffer last written out, empty, to hold lines again
	records      []record // records logged through Deferred, not yet handled
	spareRecords []record // the slice of records last handled, empty, to hold them again
	pending      bool     // a flush is scheduled
	closed       bool
}

// record is a record held by a Deferred handler, with what handles it.
type record struct {
	ctx context.Context
	h   slog.Handler
	r   slog.Record
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
		_ = w.flushLines() // full: what is held goes first
	}
	defer w.mu.Unlock()
	if w.held == nil {
		// Lines are held up to maxHeld, flushed before they would pass it: a buffer of that
		// size, made once and kept (with its spare), never grows. Grown from empty after every
		// flush, as append grows it, it would make garbage on every request.
		w.held = make([]byte, 0, max(maxHeld, len(p)))
	}
	w.held = append(w.held, p...)
	w.schedule()
	return len(p), nil
}

// schedule makes sure a flush will come within maxDelay. The caller holds mu.
func (w *Writer) schedule() {
	if !w.pending {
		w.pending = true
		time.AfterFunc(maxDelay, func() { _ = w.Flush() })
	}
}

// Flush handles the records held, and writes what is held then.
func (w *Writer) Flush() error {
	w.handleMu.Lock()
	defer w.handleMu.Unlock()
	w.handleHeld()
	return w.flushLines()
}

// Close writes what is held and handles the records held; what is logged or written later
// goes straight to the underlying writer.
func (w *Writer) Close() error {
	w.handleMu.Lock()
	defer w.handleMu.Unlock()
	w.mu.Lock()
	w.closed = true
	recs := w.takeRecords()
	w.mu.Unlock()
	err := w.flushLines() // the lines held were made of records logged before these
	w.handle(recs)
	return err
}

// flushLines writes the lines held now.
func (w *Writer) flushLines() error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	buf := w.take()
	w.mu.Unlock()
	return w.writeOut(buf)
}

// take returns the lines held, to be written, and holds the next lines in the spare buffer.
// The caller holds outMu and mu.
func (w *Writer) take() []byte {
	w.pending = false
	if len(w.records) > 0 {
		w.schedule() // records held since the last were taken to be handled
	}
	buf := w.held
	if len(buf) == 0 {
		return nil
	}
	w.held, w.spare = w.spare, nil
	return buf
}

// hold holds a record to be handled by h at the next flush, and reports false, holding
// nothing, once the Writer is closed. Beyond maxRecords, the caller handles what is held
// itself before it goes on, so that a logger faster than the flushes waits for them rather
// than holding without bound.
func (w *Writer) hold(ctx context.Context, h slog.Handler, r slog.Record) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	if w.records == nil {
		w.records = w.spareRecords[:0]
		w.spareRecords = nil
	}
	w.records = append(w.records, record{ctx, h, r.Clone()})
	full := len(w.records) >= maxRecords
	w.schedule()
	w.mu.Unlock()
	if full {
		w.handleMu.Lock()
		w.handleHeld()
		w.handleMu.Unlock()
	}
	return true
}

// handleHeld handles the records held, in the order they were logged; each handler writes its
// line to w. The caller holds handleMu.
func (w *Writer) handleHeld() {
	for {
		w.mu.Lock()
		recs := w.takeRecords()
		w.mu.Unlock()
		if len(recs) == 0 {
			return
		}
		w.handle(recs)
	}
}

// takeRecords returns the records held, to be handled. The caller holds mu.
func (w *Writer) takeRecords() []record {
	recs := w.records
	w.records = nil
	return recs
}

// handle handles recs, in order, and keeps their slice to hold records again. The caller
// holds handleMu.
func (w *Writer) handle(recs []record) {
	if len(recs) == 0 {
		return
	}
	for i := range recs {
		// An error is the Writer's own once closed, or the handler's, which Grantry's never
		// return; handled at once, it would have gone to slog.Logger, which drops it.
		_ = recs[i].h.Handle(recs[i].ctx, recs[i].r)
		recs[i] = record{} // the spare slice keeps no record alive
	}
	w.mu.Lock()
	w.spareRecords = recs[:0]
	w.mu.Unlock()
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

// Deferred returns a handler that makes records into lines with h, which must write to w, and
// that does so for a record below warning level when w next flushes (at most maxDelay later),
// in the order they were logged, rather than at once. A record at warning level or above is
// handled at once, after every record held before it, and w is flushed, so that trouble is
// never held back.
//
// Grantry logs a line per request, and the lines cost a loaded server's checks much less CPU
// made together at the flush than made one by one as each request ends.
//
// h gets the record's context as logged, maxDelay later for a record held: Grantry's handlers
// read nothing from it.
func Deferred(h slog.Handler, w *Writer) slog.Handler {
	return deferred{Handler: h, w: w}
}

type deferred struct {
	slog.Handler
	w *Writer
}

func (d deferred) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && d.w.hold(ctx, d.Handler, r) {
		return nil
	}
	d.w.handleMu.Lock()
	defer d.w.handleMu.Unlock()
	d.w.handleHeld()
	err := d.Handler.Handle(ctx, r)
	if ferr := d.w.flushLines(); err == nil {
		err = ferr
	}
	return err
}

func (d deferred) WithAttrs(attrs []slog.Attr) slog.Handler {
	return deferred{Handler: d.Handler.WithAttrs(attrs), w: d.w}
}

func (d deferred) WithGroup(name string) slog.Handler {
	return deferred{Handler: d.Handler.WithGroup(name), w: d.w}
}
