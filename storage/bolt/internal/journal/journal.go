// Package journal is the embedded store's grant journal: a grant or a revoke is acknowledged
// once it is written to a log file beside the data file and that file is synced, and it is
// applied to the data file later, with the changes that arrived meanwhile, in one step.
//
// What it promises:
//
//   - A record is durable once Append returns nil: it is in a synced file, and the next Open
//     applies it if the data file lacks it, however the process ended. A crash loses only
//     records whose Append had not returned, which were never acknowledged: one cut short
//     fails its checksum and ends the reading of its file.
//   - Records are applied in the order of their sequence numbers, and each once: the caller's
//     Apply records the last one's number in the same atomic step as their changes, and Open
//     applies only the records beyond it.
//   - Until a record is applied, Grant and Grants report the state it leaves its grant in, and
//     Settle and Exclusive apply it first, so that every reader can see the data file as if
//     each change had been written into it when it was acknowledged.
//   - An apply that fails loses nothing: its records stay pending, ApplyFailures counts it, and
//     it is tried again. The pending records are bounded: an Append that finds too many applies
//     them first, and fails if that fails, rather than let memory and the files grow without
//     end.
//
// The package knows nothing of the data file: Config.Apply says what applying records means,
// and Config.Applied reads back the number of the last one applied.
//
// There are two files, written in turn: when the one being written passes rotateAt and every
// record in the other has been applied, the next records go to the other, from its start, over
// what it held. On Open, the records of both beyond the last applied are applied. A reader of
// a file stops at the first record that is not whole (cut short by a crash: never
// acknowledged), and at the first that does not follow the one before in sequence (one left
// from the file's turn before, applied long since).
package journal

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantry/grantry/storage"
)

const (
	// applyAfter is how long a record waits in the journal before it is applied, with those
	// that arrive meanwhile.
	applyAfter = time.Second
	// rotateAt is the size past which the records go to the other file, once every record in
	// it is applied.
	rotateAt = 4 << 20
	// growBy is how much a file grows at once, in zeros, when a write would pass its end: a
	// record then overwrites bytes the file already has, and its sync writes only them,
	// where one that changed the file's size would also sync that through the file system's
	// own journal.
	growBy = 1 << 20
	// recordMax bounds a record's length, read back: anything longer is not a record.
	recordMax = 16 << 20
	// pendingMax bounds the records pending, and so the memory they take: an Append that finds
	// this many applies them first, and fails if that fails. Applies that keep failing (a full
	// disk) stop the changes there, rather than let the journal grow without end.
	pendingMax = 1 << 15
)

// Config says where the journal's files are and what applying its records means.
type Config struct {
	// Path names the two files, Path.0 and Path.1, created (mode 0600) if they do not exist.
	Path string
	// NoSync leaves out the sync after each write: a record is then acknowledged once it is
	// written, and survives a crash of the process but not of the machine.
	NoSync bool
	// ApplyAfter is how long a record waits before it is applied, with those that arrive
	// meanwhile; zero is a second.
	ApplyAfter time.Duration
	// Applied returns the sequence number of the last record applied to the data file, or 0
	// if none has been. Open calls it once.
	Applied func() (uint64, error)
	// Apply writes recs, in order, into the data file, and records the last one's sequence
	// number as applied, in one atomic step: all of it, or none. It is called by one
	// goroutine at a time.
	Apply func(recs []Record) error
}

// Grant is the state of a grant after the latest pending record that changed it.
type Grant struct {
	Held      bool // the grant exists
	CreatedAt int64
	ExpiresAt int64
}

// Journal is an open journal. Its methods are safe for concurrent use.
type Journal struct {
	apply  func([]Record) error
	files  [2]*os.File
	noSync bool
	// applyAfter, rotateAt, growBy and pendingMax, which tests change.
	delay      time.Duration
	rotateAt   int64
	growBy     int64
	pendingMax int64

	// op serializes the journal's changes, each decided against the data file and the changes
	// before it, and orders them against every other write, which holds op from the moment it
	// applies the journal until it commits (Exclusive): a change is never decided on a data
	// file that a write then changes under it (a grant to a user being deleted), nor applied
	// after a write that came later.
	op sync.Mutex
	// applying is held by whoever is applying the journal.
	applying sync.Mutex

	mu       sync.Mutex
	seq      uint64                         // the last sequence number given out
	pending  []Record                       // journaled, not yet applied, in order
	grants   map[userKey]map[string]pending // resource id → latest pending change
	timer    *time.Timer                    // the apply that is scheduled, if any
	closed   bool
	nPending atomic.Int64  // len(pending), read without mu
	applied  atomic.Uint64 // the sequence number of the last record applied
	failures atomic.Uint64 // applies that failed

	// The files' group commit: records queued while a write and sync is under way are written
	// and synced together by the next.
	wmu       sync.Mutex
	queued    []byte
	queuedSeq uint64 // the last sequence number in queued
	waiters   []chan error
	writing   bool           // a writeQueue goroutine is running
	writer    sync.WaitGroup // it, for Close
	failed    error          // a write or sync that failed: every later change fails with it
	cur       int            // the file being written
	off       int64          // where in it the next write goes
	last      [2]uint64      // the last sequence number written to each file
	size      [2]int64       // each file's size
	zeros     []byte         // growBy of them
}

type userKey struct{ orgID, userID string }

// pending is a grant's state after the latest pending record that changed it, seq.
type pending struct {
	seq   uint64
	grant Grant
}

// Open opens the journal's two files and applies, through cfg.Apply, the records they hold
// beyond the last one applied.
func Open(cfg Config) (*Journal, error) {
	j := &Journal{
		apply: cfg.Apply, noSync: cfg.NoSync,
		delay: cmp.Or(cfg.ApplyAfter, applyAfter), rotateAt: rotateAt, growBy: growBy, pendingMax: pendingMax,
		grants: map[userKey]map[string]pending{},
	}
	for i := range j.files {
		f, err := os.OpenFile(fmt.Sprintf("%s.%d", cfg.Path, i), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open journal: %w", err), j.closeFiles())
		}
		j.files[i] = f
		info, err := f.Stat()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open journal: %w", err), j.closeFiles())
		}
		j.size[i] = info.Size()
	}
	if err := j.recover(cfg.Applied); err != nil {
		return nil, errors.Join(fmt.Errorf("journal %s: %w", cfg.Path, err), j.closeFiles())
	}
	return j, nil
}

func (j *Journal) closeFiles() error {
	var errs []error
	for _, f := range j.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// recover applies the records of both files beyond the last one applied. The files are left
// as they are: the next records are written over the first from its start.
func (j *Journal) recover(lastApplied func() (uint64, error)) error {
	var recs []Record
	for _, f := range j.files {
		rs, err := readFile(bufio.NewReader(io.NewSectionReader(f, 0, 1<<62)))
		if err != nil {
			return err
		}
		recs = append(recs, rs...)
	}
	slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	applied, err := lastApplied()
	if err != nil {
		return fmt.Errorf("read the last record applied: %w", err)
	}
	var todo []Record
	for _, r := range recs {
		if r.Seq > applied {
			todo = append(todo, r)
		}
	}
	if len(todo) > 0 {
		if err := j.apply(todo); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
	}
	j.seq = max(applied, lastSeq(recs))
	j.applied.Store(j.seq)
	return nil
}

// Append journals the record that decide returns, and returns once it is durable. decide runs
// under the journal's lock, so that what it reads (the data file, Grant, Grants) changes under
// it neither by another Append nor by a write under Exclusive; it is let go however decide
// returns, a panic included. decide's error, if any, is returned and nothing is journaled; nor
// is a record that changes no grant and carries no events. Append gives the record its
// sequence number.
//
// An Append that finds too many records pending applies them first, and fails if that fails.
// Errors of the journal itself wrap storage.ErrUnavailable.
func (j *Journal) Append(decide func() (Record, error)) error {
	if j.nPending.Load() >= j.pendingMax {
		if err := j.Settle(); err != nil {
			return err
		}
	}
	wait, err := j.decideAndAppend(decide)
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// decideAndAppend is Append's part under op, which it lets go however decide returns: held
// on, it would stop every later change and write. wait is nil if nothing was journaled.
func (j *Journal) decideAndAppend(decide func() (Record, error)) (wait func() error, err error) {
	j.op.Lock()
	defer j.op.Unlock()
	rec, err := decide()
	if err != nil || (!rec.Changed && len(rec.Events) == 0) {
		return nil, err
	}
	return j.appendRecord(rec)
}

var errClosed = fmt.Errorf("%w: the journal is closed", storage.ErrUnavailable)

// appendRecord gives rec the next sequence number, keeps it as pending, and queues it to be
// written. It returns the wait for the sync that makes rec durable.
func (j *Journal) appendRecord(rec Record) (wait func() error, err error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, errClosed
	}
	j.seq++
	rec.Seq = j.seq
	j.pending = append(j.pending, rec)
	j.nPending.Store(int64(len(j.pending)))
	if rec.Changed {
		uk := userKey{rec.OrgID, rec.UserID}
		m := j.grants[uk]
		if m == nil {
			m = map[string]pending{}
			j.grants[uk] = m
		}
		m[rec.ResourceID] = pending{seq: rec.Seq, grant: Grant{Held: rec.Held, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt}}
	}
	if j.timer == nil {
		j.timer = time.AfterFunc(j.delay, j.applyLater)
	}
	j.mu.Unlock()

	done, err := j.queue(&rec)
	if err != nil {
		return nil, err
	}
	return func() error { return <-done }, nil
}

// Grants returns the pending state of the user's grants, by resource id: a copy the caller
// may change; nil if none of them is pending.
func (j *Journal) Grants(orgID, userID string) map[string]Grant {
	if j.nPending.Load() == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	m := j.grants[userKey{orgID, userID}]
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]Grant, len(m))
	for id, p := range m {
		out[id] = p.grant
	}
	return out
}

// Grant returns the pending state of one grant; ok is false if no pending record changes it.
func (j *Journal) Grant(orgID, userID, resourceID string) (g Grant, ok bool) {
	if j.nPending.Load() == 0 {
		return g, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	p, ok := j.grants[userKey{orgID, userID}][resourceID]
	return p.grant, ok
}

// Settle applies the pending records, if any, so that a read that follows sees every change
// acknowledged before it. An apply that fails is counted and its error, which wraps
// storage.ErrUnavailable, returned.
func (j *Journal) Settle() error {
	if j.nPending.Load() == 0 {
		return nil
	}
	return j.applyPending()
}

// Exclusive applies the pending records and holds every Append back until done is called:
// for a write of the data file that is not journaled, from before it reads until after it
// commits. On an error nothing is held.
func (j *Journal) Exclusive() (done func(), err error) {
	j.op.Lock()
	defer func() {
		if done == nil { // an error, or a panic on its way up
			j.op.Unlock()
		}
	}()
	if err := j.Settle(); err != nil {
		return nil, err
	}
	return j.op.Unlock, nil
}

// applyLater is the scheduled apply.
func (j *Journal) applyLater() {
	j.mu.Lock()
	j.timer = nil
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return
	}
	if err := j.applyPending(); err != nil {
		// The records stay pending; every Settle and Exclusive applies them first and reports
		// the error while it lasts. Try again later.
		j.mu.Lock()
		if j.timer == nil && !j.closed {
			j.timer = time.AfterFunc(j.delay, j.applyLater)
		}
		j.mu.Unlock()
	}
}

// applyPending applies every pending record in one step and forgets them.
func (j *Journal) applyPending() error {
	j.applying.Lock()
	defer j.applying.Unlock()
	j.mu.Lock()
	recs := j.pending
	j.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	if err := j.apply(recs); err != nil {
		j.failures.Add(1)
		return fmt.Errorf("%w: apply the journal: %w", storage.ErrUnavailable, err)
	}
	j.applied.Store(recs[len(recs)-1].Seq)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range recs {
		if !r.Changed {
			continue
		}
		uk := userKey{r.OrgID, r.UserID}
		if m := j.grants[uk]; m != nil && m[r.ResourceID].seq == r.Seq {
			delete(m, r.ResourceID)
			if len(m) == 0 {
				delete(j.grants, uk)
			}
		}
	}
	// Records appended meanwhile are after recs in pending.
	j.pending = append(j.pending[:0:0], j.pending[len(recs):]...)
	j.nPending.Store(int64(len(j.pending)))
	return nil
}

// Close applies what is pending and closes the files. Appends that come later fail with an
// error that wraps storage.ErrUnavailable.
func (j *Journal) Close() error {
	j.op.Lock()
	defer j.op.Unlock()
	err := j.applyPending()
	j.mu.Lock()
	j.closed = true
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	j.mu.Unlock()
	// Wait for the writer to finish what it has: its records are applied already, and none
	// can be queued since (op is held, closed is set).
	j.writer.Wait()
	return errors.Join(err, j.closeFiles())
}

// Pending is how many records are journaled and not yet applied: about ApplyAfter's worth at
// most, unless applying fails.
func (j *Journal) Pending() int { return int(j.nPending.Load()) }

// ApplyFailures counts the applies that failed. Their records stay pending, and every Settle
// and Exclusive fails until an apply succeeds.
func (j *Journal) ApplyFailures() uint64 { return j.failures.Load() }
