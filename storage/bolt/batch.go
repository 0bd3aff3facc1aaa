package bolt

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// maxBatch bounds the calls one batch commits, so that a burst of writers does not build one
// huge transaction: bbolt's default MaxBatchSize.
const maxBatch = 1000

// batcher commits the calls of concurrent writers in shared transactions: one commit, and its
// two fsyncs, for many grants. It is db.Batch without the wait. db.Batch holds each batch open
// for MaxBatchDelay and then queues it behind the commit under way, so that while commits are
// slower than the delay every batch is small and waits twice; here the first call commits at
// once, and the calls that arrive while a commit is under way make up the next one, so batches
// grow exactly as commits fall behind.
type batcher struct {
	db      *bbolt.DB
	journal *journal.Journal // applied before each batch, whose commit holds its changes back
	mu      sync.Mutex
	queue   []batchCall
	running bool // a goroutine is committing the queue
}

type batchCall struct {
	fn    func(*bbolt.Tx) error
	apart bool // fn writes nothing the journal writes or reads: it need not be applied first
	done  chan error
}

// errTrySolo tells a caller that its fn failed in a batch, which then went on without it: the
// caller runs fn again in a transaction of its own, for its own error.
var errTrySolo = errors.New("batch call failed; run it alone")

// do runs fn in a write transaction shared with other callers and returns when that has been
// committed. fn may run more than once, so it must have no effect outside tx. Unless apart,
// the journal is applied first, and its changes held back until the commit.
func (b *batcher) do(fn func(*bbolt.Tx) error, apart bool) error {
	c := batchCall{fn: fn, apart: apart, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.commitQueue()
	}
	b.mu.Unlock()
	if err := <-c.done; !errors.Is(err, errTrySolo) {
		return err
	}
	if !apart {
		done, err := b.journal.Exclusive()
		if err != nil {
			return err
		}
		defer done()
	}
	return b.db.Update(fn)
}

// commitQueue commits batches from the queue until it is empty.
func (b *batcher) commitQueue() {
	for {
		// Let the goroutines that are ready run first: the writers just answered, and the
		// requests just read, whose calls then join this batch. On one CPU the loop would
		// otherwise take the queue at once and commit batches of one while they wait.
		runtime.Gosched()
		b.mu.Lock()
		n := min(len(b.queue), maxBatch)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		calls := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		b.mu.Unlock()
		b.commit(calls)
	}
}

// commit runs calls in one transaction. A call that fails is taken out and told to run alone,
// and the transaction is tried again without it, as db.Batch does.
func (b *batcher) commit(calls []batchCall) {
	if !allApart(calls) {
		done, err := b.journal.Exclusive()
		if err != nil {
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		defer done()
	}
	for len(calls) > 0 {
		failed := -1
		err := b.db.Update(func(tx *bbolt.Tx) error {
			for i, c := range calls {
				if err := safelyCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		calls[failed].done <- errTrySolo
		calls = append(calls[:failed], calls[failed+1:]...)
	}
}

func allApart(calls []batchCall) bool {
	return !slices.ContainsFunc(calls, func(c batchCall) bool { return !c.apart })
}

// safelyCall turns a panic of fn into an error, so that it fails only its own call: the caller
// runs fn again alone and panics in its own goroutine.
func safelyCall(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(tx)
}
