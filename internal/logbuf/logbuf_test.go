package logbuf_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/grantry/grantry/internal/logbuf"
)

// syncBuffer is a bytes.Buffer safe for the Writer's timer to write to while a test reads it.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// The tests that say when something is written run in a synctest bubble, whose clock moves
// only when every goroutine in it waits: the Writer's timer fires exactly MaxDelay after the
// first line, however busy the machine is.

func TestWriterHoldsLinesThenWritesThemTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &syncBuffer{}
		w := logbuf.New(out)
		defer w.Close()
		for i := range 3 {
			fmt.Fprintf(w, "line %d\n", i)
		}
		time.Sleep(logbuf.MaxDelay - time.Nanosecond)
		synctest.Wait()
		if out.String() != "" {
			t.Fatalf("written before the delay: %q", out.String())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got, want := out.String(), "line 0\nline 1\nline 2\n"; got != want {
			t.Fatalf("after the delay: %q, want %q", got, want)
		}
		if out.Writes() != 1 {
			t.Errorf("%d writes, want the lines in one", out.Writes())
		}
	})
}

func TestWriterFlushesWhenFullAndOnClose(t *testing.T) {
	synctest.Test(t, testWriterFlushesWhenFullAndOnClose)
}

func testWriterFlushesWhenFullAndOnClose(t *testing.T) {
	out := &syncBuffer{}
	w := logbuf.New(out)
	line := strings.Repeat("x", 1023) + "\n"
	for range 64 { // exactly the most held
		w.Write([]byte(line))
	}
	if out.String() != "" {
		t.Fatalf("wrote %d bytes before it was full", len(out.String()))
	}
	w.Write([]byte("next\n"))
	if len(out.String()) != 64*1024 {
		t.Fatalf("wrote %d bytes when full, want the 65536 held", len(out.String()))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), line+"next\n") {
		t.Fatalf("Close did not write what was held")
	}
	w.Write([]byte("late\n"))
	if !strings.HasSuffix(out.String(), "next\nlate\n") {
		t.Errorf("a write after Close was held")
	}
}

// countingHandler is a text handler that counts the records it has handled.
type countingHandler struct {
	slog.Handler
	handled *atomic.Int64
}

func newCountingHandler(w io.Writer) countingHandler {
	return countingHandler{slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), new(atomic.Int64)}
}

func (c countingHandler) Handle(ctx context.Context, r slog.Record) error {
	c.handled.Add(1)
	return c.Handler.Handle(ctx, r)
}

func (c countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return countingHandler{c.Handler.WithAttrs(attrs), c.handled}
}

func (c countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{c.Handler.WithGroup(name), c.handled}
}

func TestDeferredFlushesWarningsWithWhatCameBefore(t *testing.T) {
	tests := []struct {
		level   slog.Level
		flushed bool
	}{
		{slog.LevelDebug, false}, {slog.LevelInfo, false}, {slog.LevelWarn, true}, {slog.LevelError, true},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &syncBuffer{}
				w := logbuf.New(out)
				defer w.Close()
				log := slog.New(logbuf.Deferred(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), w)).With("k", "v").WithGroup("g")
				log.Info("before", "a", 1)
				log.Log(t.Context(), tt.level, "this")
				got := out.String()
				if flushed := strings.Contains(got, "msg=this"); flushed != tt.flushed {
					t.Fatalf("flushed = %v, want %v: %q", flushed, tt.flushed, got)
				}
				if tt.flushed && (!strings.Contains(got, "msg=before k=v g.a=1") || strings.Index(got, "before") > strings.Index(got, "this")) {
					t.Errorf("the earlier line was not written first, whole: %q", got)
				}
			})
		})
	}
}

// TestDeferredHoldsRecordsUntilTheFlush: a record below warning level is not made into a line
// while it is logged, but at the flush, at most maxDelay later, with the others, in the order
// they were logged, whichever handler derived from the logger logged them.
func TestDeferredHoldsRecordsUntilTheFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &syncBuffer{}
		w := logbuf.New(out)
		defer w.Close()
		h := newCountingHandler(w)
		log := slog.New(logbuf.Deferred(h, w))
		other := log.With("from", "other")
		for i := range 3 {
			log.Info("line", "i", i)
			other.Debug("line", "i", i)
		}
		time.Sleep(logbuf.MaxDelay - time.Nanosecond)
		synctest.Wait()
		if n := h.handled.Load(); n != 0 {
			t.Fatalf("%d records made into lines before the flush, want none", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		var want []string
		for i := range 3 {
			want = append(want, fmt.Sprintf("level=INFO msg=line i=%d", i), fmt.Sprintf("level=DEBUG msg=line from=other i=%d", i))
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != len(want) {
			t.Fatalf("after the delay: %q, want %d lines", out.String(), len(want))
		}
		for i, l := range lines {
			if !strings.HasSuffix(l, want[i]) {
				t.Errorf("line %d = %q, want it to end %q", i, l, want[i])
			}
		}
		if out.Writes() != 1 {
			t.Errorf("%d writes, want the lines in one", out.Writes())
		}
	})
}

// TestFlushAndCloseHandleHeldRecords: Flush and Close make the records held into lines and
// write them; a record logged after Close is written at once.
func TestFlushAndCloseHandleHeldRecords(t *testing.T) {
	for _, end := range []string{"Flush", "Close"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &syncBuffer{}
				w := logbuf.New(out)
				defer w.Close()
				log := slog.New(logbuf.Deferred(slog.NewTextHandler(w, nil), w))
				log.Info("first")
				log.Info("second")
				if end == "Flush" {
					w.Flush()
				} else {
					w.Close()
				}
				got := out.String()
				if strings.Count(got, "\n") != 2 || !strings.Contains(got, "msg=first\n") || !strings.HasSuffix(got, "msg=second\n") {
					t.Fatalf("after %s: %q, want first, then second", end, got)
				}
				log.Info("third")
				if written, want := strings.Contains(out.String(), "msg=third"), end == "Close"; written != want {
					t.Errorf("after %s, a record logged was written at once: %v, want %v", end, written, want)
				}
			})
		})
	}
}

// TestDeferredBoundsHeldRecords: beyond 4,096 records held, the logger that logs the next makes
// them into lines itself, so that a logger faster than the flushes cannot hold without bound.
func TestDeferredBoundsHeldRecords(t *testing.T) {
	synctest.Test(t, testDeferredBoundsHeldRecords)
}

func testDeferredBoundsHeldRecords(t *testing.T) {
	w := logbuf.New(&syncBuffer{})
	defer w.Close()
	h := newCountingHandler(w)
	log := slog.New(logbuf.Deferred(h, w))
	for i := range 4095 {
		log.Info("line", "i", i)
	}
	if n := h.handled.Load(); n != 0 {
		t.Fatalf("%d records made into lines below the bound, want none", n)
	}
	log.Info("line", "i", 4095)
	if n := h.handled.Load(); n != 4096 {
		t.Fatalf("%d records made into lines at the bound, want all 4096", n)
	}
}

// TestDeferredKeepsConcurrentRecords: records logged from many goroutines are all written,
// each whole, and each goroutine's in the order it logged them.
func TestDeferredKeepsConcurrentRecords(t *testing.T) {
	out := &syncBuffer{}
	w := logbuf.New(out)
	log := slog.New(logbuf.Deferred(slog.NewTextHandler(w, nil), w))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				if i%250 == 249 {
					log.Warn("line", "g", g, "i", i)
				} else {
					log.Info("line", "g", g, "i", i)
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	next := make(map[string]int)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines {
		var level, g string
		var i int
		if _, err := fmt.Sscanf(l[strings.Index(l, "level="):], "level=%s msg=line g=%s i=%d", &level, &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("goroutine %s: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if len(lines) != 8*1000 {
		t.Fatalf("%d lines, want %d", len(lines), 8*1000)
	}
}

func TestWriterKeepsConcurrentLinesWhole(t *testing.T) {
	out := &syncBuffer{}
	w := logbuf.New(out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				fmt.Fprintf(w, "%d-%d-%s\n", g, i, strings.Repeat("y", 200))
			}
		}()
	}
	wg.Wait()
	w.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, strings.Repeat("y", 200)) || strings.Count(l, "-") != 2 {
			t.Fatalf("torn line %q", l)
		}
	}
}

// buffersWriter records which buffers it was given to write.
type buffersWriter struct {
	mu      sync.Mutex
	buffers map[*byte]bool // the first byte of each; kept, so no two buffers share an address
	writes  int
}

func (b *buffersWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buffers[&p[0]] = true
	b.writes++
	return len(p), nil
}

// TestWriterKeepsItsBuffer: the buffer is made once and reused after every flush (with one
// spare, to hold lines while the other is written out), so holding lines makes no garbage;
// grown from empty again after each flush, it would make garbage on every request.
func TestWriterKeepsItsBuffer(t *testing.T) {
	out := &buffersWriter{buffers: map[*byte]bool{}}
	w := logbuf.New(out)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 10 * (64 << 10) / len(line) { // ten flushes' worth
		w.Write(line)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.writes < 10 || len(out.buffers) > 2 {
		t.Errorf("%d flushes wrote %d buffers, want at least ten flushes of two buffers in turn", out.writes, len(out.buffers))
	}
}

// BenchmarkWrite writes 100-byte lines, a flush every 655 of them: run with -benchmem, it
// should show no allocation a line.
func BenchmarkWrite(b *testing.B) {
	w := logbuf.New(io.Discard)
	defer w.Close()
	line := []byte(strings.Repeat("x", 99) + "\n")
	b.ReportAllocs()
	for b.Loop() {
		w.Write(line)
	}
}

// blockingWriter blocks every Write until release is closed, and tells started when one has
// begun.
type blockingWriter struct {
	syncBuffer
	started chan struct{}
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-b.release
	return b.syncBuffer.Write(p)
}

// TestWriteDoesNotWaitForTheUnderlyingWriter: while a flush is stuck in the underlying
// writer, lines are still taken at once, and are written after what that flush took, in
// order. With one buffer held under one lock, every request's log line would wait for each
// flush.
func TestWriteDoesNotWaitForTheUnderlyingWriter(t *testing.T) {
	out := &blockingWriter{started: make(chan struct{}, 1), release: make(chan struct{})}
	w := logbuf.New(out)
	w.Write([]byte("first\n"))
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }()
	<-out.started // the flush is now inside the underlying writer, with "first" taken

	wrote := make(chan struct{})
	go func() {
		for i := range 100 {
			fmt.Fprintf(w, "line %d\n", i)
		}
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(5 * time.Second):
		close(out.release)
		t.Fatal("Write waited for a flush stuck in the underlying writer")
	}
	close(out.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "first\n"
	for i := range 100 {
		want += fmt.Sprintf("line %d\n", i)
	}
	if got := out.String(); got != want {
		t.Errorf("written %q, want %q", got, want)
	}
}
