// Package decisionlog records access decisions off the request path. Record puts an entry in a
// bounded in-memory queue and returns at once; a background writer hands the entries to a sink
// in batches, when a batch is full or a flush interval has passed. When the queue is full, the
// oldest waiting entries are dropped and counted: a check is never slowed, blocked or failed
// because its decision could not be logged, and memory stays bounded when the sink is slow or
// down.
package decisionlog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one decision. It never holds a key or a token: the API key is named by its id.
type Entry struct {
	// ID identifies the entry for the sink, which may be handed a batch again after a failure.
	ID        string
	Time      time.Time
	RequestID string
	OrgID     string
	APIKeyID  string
	// Endpoint is the check asked: "can_user_access" or "can_user_access_all".
	Endpoint    string
	UserID      string
	ResourceIDs []string
	Allowed     bool
	// PolicyRevision is the revision of the policy that decided.
	PolicyRevision string
	// Duration is how long the check took to answer.
	Duration time.Duration
}

// Sink writes a batch of entries durably. The log calls it from one goroutine at a time.
type Sink func(ctx context.Context, batch []Entry) error

// Config tunes a Log. Zero fields take the defaults.
type Config struct {
	// QueueSize is how many entries may wait; beyond it the oldest are dropped. Default 50,000.
	QueueSize int
	// BatchSize is the most entries handed to the sink at once; a full batch is written at
	// once. Default 4,000: each batch is a commit of the store, fsyncs included, so that
	// under heavy load smaller batches take CPU from the checks; much larger ones gain little
	// more and would hold the store's write lock longer.
	BatchSize int
	// FlushInterval is the longest an entry waits for its batch to fill. Default 1s.
	FlushInterval time.Duration
	// WriteTimeout bounds one call of the sink. Default 10s.
	WriteTimeout time.Duration
	// Retries is how many more times a failed batch is tried before it is given up and
	// counted as failed. Default 2; a negative value means none.
	Retries int
	// Logger receives sink errors; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.QueueSize <= 0 {
		c.QueueSize = 50_000
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 4000
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.Retries == 0 {
		c.Retries = 2
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Log is a decision log. Record is safe for concurrent use.
type Log struct {
	cfg  Config
	sink Sink

	mu     sync.Mutex
	queue  []Entry // a ring of cfg.QueueSize entries
	head   int     // index of the oldest waiting entry
	n      int     // how many are waiting
	closed bool

	wake chan struct{} // a full batch is waiting
	stop chan struct{} // Close was called
	done chan struct{} // the writer has finished

	dropped atomic.Uint64
	written atomic.Uint64
	failed  atomic.Uint64
}

// New starts a log that writes to sink. Call Close to flush and stop it.
func New(cfg Config, sink Sink) *Log {
	cfg = cfg.withDefaults()
	l := &Log{
		cfg:   cfg,
		sink:  sink,
		queue: make([]Entry, cfg.QueueSize),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go l.run()
	return l
}

// Record queues e for writing and returns at once. When the queue is full, the oldest waiting
// entry makes room and is counted as dropped. After Close, e is dropped.
func (l *Log) Record(e Entry) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.dropped.Add(1)
		return
	}
	if l.n == len(l.queue) {
		l.queue[l.head] = Entry{}
		l.head = (l.head + 1) % len(l.queue)
		l.n--
		l.dropped.Add(1)
	}
	l.queue[(l.head+l.n)%len(l.queue)] = e
	l.n++
	full := l.n >= l.cfg.BatchSize
	l.mu.Unlock()
	if full {
		select {
		case l.wake <- struct{}{}:
		default: // the writer is already woken
		}
	}
}

// Dropped is how many entries were dropped because the queue was full (or the log closed).
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// Written is how many entries the sink has accepted.
func (l *Log) Written() uint64 { return l.written.Load() }

// Failed is how many entries were lost because the sink kept failing.
func (l *Log) Failed() uint64 { return l.failed.Load() }

// Waiting is how many entries are queued and not yet handed to the sink.
func (l *Log) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Close stops taking entries, writes those still waiting, and stops the writer. It returns
// ctx's error if ctx ends first, leaving the writer to finish in the background.
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	l.mu.Unlock()
	if !already {
		close(l.stop)
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer: it writes full batches as soon as they are, everything waiting every
// flush interval, and at Close everything until nothing waits.
func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(l.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-l.wake:
			l.flush(l.cfg.BatchSize, false)
		case <-tick.C:
			l.flush(1, false)
		case <-l.stop:
			l.flush(1, true)
			return
		}
	}
}

// flush writes batches for as long as at least least entries wait.
func (l *Log) flush(least int, closing bool) {
	for {
		batch := l.take(least)
		if len(batch) == 0 {
			return
		}
		l.write(batch, closing)
	}
}

// take removes up to BatchSize of the oldest waiting entries from the queue, if at least
// least entries wait.
func (l *Log) take(least int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 || l.n < least {
		return nil
	}
	n := min(l.n, l.cfg.BatchSize)
	batch := make([]Entry, n)
	for i := range n {
		j := (l.head + i) % len(l.queue)
		batch[i] = l.queue[j]
		l.queue[j] = Entry{}
	}
	l.head = (l.head + n) % len(l.queue)
	l.n -= n
	return batch
}

// write hands batch to the sink, retrying with a growing pause. While closing, a failed batch
// is tried only once more, so that shutdown is not held up by a store that is down.
func (l *Log) write(batch []Entry, closing bool) {
	retries := max(l.cfg.Retries, 0)
	if closing {
		retries = min(retries, 1)
	}
	var err error
	for try := 0; try <= retries; try++ {
		if try > 0 {
			l.pause(time.Duration(try*try)*100*time.Millisecond, closing)
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.WriteTimeout)
		err = l.sink(ctx, batch)
		cancel()
		if err == nil {
			l.written.Add(uint64(len(batch)))
			return
		}
	}
	l.failed.Add(uint64(len(batch)))
	l.cfg.Logger.LogAttrs(context.Background(), slog.LevelError, "decision log: batch lost",
		slog.Int("entries", len(batch)), slog.String("error", err.Error()))
}

// pause waits d, or less when Close is called meanwhile, and not at all while closing.
func (l *Log) pause(d time.Duration, closing bool) {
	if closing {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.stop:
	}
}
