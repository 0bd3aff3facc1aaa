package bolt

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// The journal. A grant or a revoke of a user's access is acknowledged once it is written to a
// log file beside the data file and that file is synced: a few hundred bytes written in
// sequence, one sync for every change that arrived while the last sync was under way. It is
// applied to the data file later, a second's changes in one transaction: a change undone before
// it was applied (a grant, then its revoke) writes no page of grants at all, and the events of
// a second share the pages of their indexes.
//
// Writing each change into the data file at once cost about nine pages of B+tree (the grant,
// its index by resource, the event and the event's indexes by user and by resource, each a leaf
// somewhere in a large tree, and their branches) and bbolt's two syncs: on the development
// machine's disk, about 1,700 grants and revokes a second, and no more than 2,700 with every
// index taken away (README, "Stores").
//
// What is journaled and not yet applied is also kept in memory: the changes in order, to apply,
// and the latest pending state of each grant, which the journal's own changes and the reads of
// one user's grants (UserGrants, UserFacts, AskedGrants) read over the data file. Every other
// read and every other write applies the journal first (Store.view, Store.update, the
// batcher), so it sees the data file as if each change had been written into it when it was
// acknowledged.
//
// There are two files, written in turn: when the one being written passes rotateAt and every
// record in the other has been applied, the next records go to the other, from its start, over
// what it held. On Open, the records of both beyond the last change applied (recorded in the
// data file, in the same transaction as the changes) are applied. A reader of a file stops at
// the first record that is not whole (cut short by a crash: never acknowledged), and at the
// first that does not follow the one before in sequence (one left from the file's turn before,
// applied long since).

var bucketJournal = []byte("journal") // "applied" → the sequence number of the last change applied, 8 bytes big-endian

var appliedKey = []byte("applied")

const (
	// applyAfter is how long a change waits in the journal before it is applied, with those
	// that arrive meanwhile.
	applyAfter = time.Second
	// rotateAt is the size past which the records go to the other file, once every record in
	// it is applied.
	rotateAt = 4 << 20
	// growBy is how much a file grows at once, in zeros, when a write would pass its end: a
	// record then overwrites bytes the file already has, and its sync writes only them,
	// where one that changed the file's size would also sync that through the file system's
	// own journal (a Go program on the development machine: 170–190 µs against 380–420 µs to
	// write 10 KiB and fdatasync).
	growBy = 1 << 20
	// recordMax bounds a record's length, read back: anything longer is not a record.
	recordMax = 16 << 20
	// pendingMax bounds the changes pending, and so the memory they take: a change that finds
	// this many applies them first, and fails if that fails. Applies that keep failing (a full
	// disk) stop the changes there, rather than let the journal grow without end.
	pendingMax = 1 << 15
)

// journalRecord is one journaled change: a user's grant of a resource as it is after the
// change, and the events that record it. A record that changes no grant carries only events.
type journalRecord struct {
	Seq        uint64
	OrgID      string
	UserID     string
	ResourceID string
	Changed    bool // the grant changed: it is now as Held says
	Held       bool // the grant exists after the change
	CreatedAt  int64
	ExpiresAt  int64
	Events     []journalEvent
}

// journalEvent is an event as it is stored (an eventRecord's JSON, encoded once, when the
// change is journaled), with the ids its keys are made of.
type journalEvent struct {
	OrgID, ID, UserID, SvcID string
	Data                     []byte
}

// A record is written as the format's version (a byte, recordFormat), its sequence number (8
// bytes), a flags byte (1: Changed, 2: Held), CreatedAt and ExpiresAt (8 bytes each), the three
// ids, the number of events (a uvarint), and each event's four ids and data; an id or data is
// its length (a uvarint) and its bytes. It was JSON at first, whose encoding took 6% of a
// loaded server's CPU, against below 1%. A record of another version ends a file's reading,
// like a damaged one: one of an earlier format can only be left from an earlier turn.
const recordFormat = 1

const (
	flagChanged = 1 << iota
	flagHeld
)

func (r *journalRecord) appendTo(b []byte) []byte {
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	var flags byte
	if r.Changed {
		flags |= flagChanged
	}
	if r.Held {
		flags |= flagHeld
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(r.CreatedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(r.ExpiresAt))
	b = appendField(appendField(appendField(b, r.OrgID), r.UserID), r.ResourceID)
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for _, e := range r.Events {
		b = appendField(appendField(appendField(appendField(b, e.OrgID), e.ID), e.UserID), e.SvcID)
		b = appendField(b, string(e.Data))
	}
	return b
}

func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errShortRecord = errors.New("record cut short")

// decodeRecord reads a record that appendTo wrote.
func decodeRecord(b []byte) (r journalRecord, err error) {
	if len(b) < 26 {
		return r, errShortRecord
	}
	b = b[1:] // recordFormat, which readJournal checked
	r.Seq = binary.BigEndian.Uint64(b)
	r.Changed, r.Held = b[8]&flagChanged != 0, b[8]&flagHeld != 0
	r.CreatedAt = int64(binary.BigEndian.Uint64(b[9:]))
	r.ExpiresAt = int64(binary.BigEndian.Uint64(b[17:]))
	b = b[25:]
	field := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			err = errShortRecord
			b = nil
			return ""
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	r.OrgID, r.UserID, r.ResourceID = field(), field(), field()
	n, k := binary.Uvarint(b)
	if err != nil || k <= 0 || n > uint64(len(b)) {
		return r, errShortRecord
	}
	b = b[k:]
	r.Events = make([]journalEvent, n)
	for i := range r.Events {
		e := &r.Events[i]
		e.OrgID, e.ID, e.UserID, e.SvcID = field(), field(), field(), field()
		e.Data = []byte(field())
	}
	if err == nil && len(b) != 0 {
		err = errors.New("bytes after the record")
	}
	return r, err
}

// pendingGrant is a grant's state after the latest journaled change not yet applied.
type pendingGrant struct {
	seq  uint64
	held bool
	rec  grantRecord
}

type journal struct {
	db     *bbolt.DB
	files  [2]*os.File
	noSync bool
	// applyAfter, rotateAt, growBy and pendingMax, which tests change.
	delay      time.Duration
	rotateAt   int64
	growBy     int64
	pendingMax int64
	// applyFault, when a test sets it, is called in each apply's transaction; an error it
	// returns fails the apply, as a full disk would.
	applyFault func() error

	// op serializes the journal's changes, each decided against the data file and the changes
	// before it, and orders them against every other write, which holds op from the moment it
	// applies the journal until it commits: a change is never decided on a data file that a
	// write then changes under it (a grant to a user being deleted), nor applied after a write
	// that came later.
	op sync.Mutex
	// apply is held by whoever is applying the journal.
	apply sync.Mutex

	mu       sync.Mutex
	seq      uint64                             // the last sequence number given out
	pending  []journalRecord                    // journaled, not yet applied, in order
	grants   map[string]map[string]pendingGrant // key(org, user) → resource id → latest pending
	timer    *time.Timer                        // the apply that is scheduled, if any
	closed   bool
	nPending atomic.Int64  // len(pending), read without mu
	applied  atomic.Uint64 // the sequence number of the last change applied
	failures atomic.Uint64 // applies that failed

	// The files' group commit: records queued while a write and sync is under way are written
	// and synced together by the next.
	wmu      sync.Mutex
	queue    []byte
	queueSeq uint64 // the last sequence number in queue
	waiters  []chan error
	writing  bool           // a writeQueue goroutine is running
	writer   sync.WaitGroup // it, for close
	failed   error          // a write or sync that failed: every later change fails with it
	cur      int            // the file being written
	off      int64          // where in it the next write goes
	last     [2]uint64      // the last sequence number written to each file
	size     [2]int64       // each file's size
	zeros    []byte         // growBy of them
}

// openJournal opens the journal's two files, path.0 and path.1, and applies what they hold
// beyond the last change applied.
func openJournal(db *bbolt.DB, path string, noSync bool) (*journal, error) {
	j := &journal{db: db, noSync: noSync, delay: applyAfter, rotateAt: rotateAt, growBy: growBy, pendingMax: pendingMax, grants: map[string]map[string]pendingGrant{}}
	for i := range j.files {
		f, err := os.OpenFile(fmt.Sprintf("%s.%d", path, i), os.O_RDWR|os.O_CREATE, 0o600)
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
	if err := j.recover(); err != nil {
		return nil, errors.Join(fmt.Errorf("journal %s: %w", path, err), j.closeFiles())
	}
	return j, nil
}

func (j *journal) closeFiles() error {
	var errs []error
	for _, f := range j.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// recover applies the records of both files beyond the last change applied. The files are
// left as they are: the next records are written over the first from its start.
func (j *journal) recover() error {
	var recs []journalRecord
	for _, f := range j.files {
		rs, err := readJournal(bufio.NewReader(io.NewSectionReader(f, 0, 1<<62)))
		if err != nil {
			return err
		}
		recs = append(recs, rs...)
	}
	slices.SortFunc(recs, func(a, b journalRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	var applied uint64
	err := j.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketJournal)
		if err != nil {
			return err
		}
		if v := b.Get(appliedKey); len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		}
		var todo []journalRecord
		for _, r := range recs {
			if r.Seq > applied {
				todo = append(todo, r)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		return applyRecords(tx, todo)
	})
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	j.seq = max(applied, lastSeq(recs))
	j.applied.Store(j.seq)
	return nil
}

// readJournal reads records until the end of r or the first record that is empty, cut short,
// fails its checksum, is of another format, or does not follow the one before in sequence: a
// file is written from its start at each turn, in sequence, so a record that does not is one
// left from the turn before. A record is its length (4 bytes), the CRC-32C of its encoding (4
// bytes), and the encoding (appendTo).
func readJournal(r *bufio.Reader) ([]journalRecord, error) {
	var recs []journalRecord
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return recs, nil // the end, or a header cut short
		}
		n, sum := binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint32(head[4:])
		if n == 0 || n > recordMax {
			return recs, nil
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil || crc32.Checksum(data, castagnoli) != sum {
			return recs, nil
		}
		if data[0] != recordFormat || len(data) < 9 || binary.BigEndian.Uint64(data[1:]) <= lastSeq(recs) {
			return recs, nil
		}
		rec, err := decodeRecord(data)
		if err != nil {
			return nil, fmt.Errorf("record after sequence number %d: %w", lastSeq(recs), err)
		}
		recs = append(recs, rec)
	}
}

func lastSeq(recs []journalRecord) uint64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord gives rec the next sequence number, keeps it as pending, and queues it to be
// written. The caller holds op, so records are queued in the order of their numbers. It
// returns the wait for the sync that makes rec durable.
func (j *journal) appendRecord(rec journalRecord) (wait func() error, err error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, errClosedJournal
	}
	j.seq++
	rec.Seq = j.seq
	j.pending = append(j.pending, rec)
	j.nPending.Store(int64(len(j.pending)))
	if rec.Changed {
		uk := string(key(rec.OrgID, rec.UserID))
		m := j.grants[uk]
		if m == nil {
			m = map[string]pendingGrant{}
			j.grants[uk] = m
		}
		m[rec.ResourceID] = pendingGrant{seq: rec.Seq, held: rec.Held, rec: grantRecord{
			OrgID: rec.OrgID, UserID: rec.UserID, ResourceID: rec.ResourceID, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
		}}
	}
	if j.timer == nil {
		j.timer = time.AfterFunc(j.delay, j.applyLater)
	}
	j.mu.Unlock()

	done := make(chan error, 1)
	j.wmu.Lock()
	if err := j.failed; err != nil {
		j.wmu.Unlock()
		return nil, err
	}
	start := len(j.queue)
	j.queue = rec.appendTo(append(j.queue, make([]byte, 8)...))
	data := j.queue[start+8:]
	binary.BigEndian.PutUint32(j.queue[start:], uint32(len(data)))
	binary.BigEndian.PutUint32(j.queue[start+4:], crc32.Checksum(data, castagnoli))
	j.queueSeq = rec.Seq
	j.waiters = append(j.waiters, done)
	if !j.writing {
		j.writing = true
		j.writer.Go(j.writeQueue)
	}
	j.wmu.Unlock()
	return func() error { return <-done }, nil
}

var errClosedJournal = fmt.Errorf("%w: the journal is closed", storage.ErrUnavailable)

// writeQueue writes and syncs the queued records until none are left, telling each waiter.
func (j *journal) writeQueue() {
	var spare []byte
	for {
		// Let the goroutines that are ready run first, as the batcher does, so that the
		// changes of the requests just read join this write.
		runtime.Gosched()
		j.wmu.Lock()
		if len(j.waiters) == 0 {
			j.writing = false
			j.wmu.Unlock()
			return
		}
		buf, waiters, seq := j.queue, j.waiters, j.queueSeq
		j.queue, j.waiters = spare[:0], nil
		if other := 1 - j.cur; j.off >= j.rotateAt && j.last[other] <= j.applied.Load() {
			j.cur, j.off = other, 0
		}
		f, off, size := j.files[j.cur], j.off, j.size[j.cur]
		j.off += int64(len(buf))
		j.last[j.cur] = seq
		if j.off > size {
			j.size[j.cur] = j.off + j.growBy
		}
		j.wmu.Unlock()
		err := j.write(f, buf, off, size)
		if err != nil {
			j.wmu.Lock()
			j.failed = err
			j.wmu.Unlock()
		}
		for _, w := range waiters {
			w <- err
		}
		spare = buf
	}
}

// write writes buf at off in f, a file of size bytes, and growBy zeros after buf if it passes
// the end, then syncs f.
func (j *journal) write(f *os.File, buf []byte, off, size int64) error {
	if _, err := f.WriteAt(buf, off); err != nil {
		return fmt.Errorf("%w: write the journal: %w", storage.ErrUnavailable, err)
	}
	if end := off + int64(len(buf)); end > size {
		if j.zeros == nil {
			j.zeros = make([]byte, j.growBy)
		}
		if _, err := f.WriteAt(j.zeros, end); err != nil {
			return fmt.Errorf("%w: write the journal: %w", storage.ErrUnavailable, err)
		}
	}
	if j.noSync {
		return nil
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("%w: sync the journal: %w", storage.ErrUnavailable, err)
	}
	return nil
}

// pendingOf returns the pending state of the user's grants, by resource id; nil if none.
func (j *journal) pendingOf(orgID, userID string) map[string]pendingGrant {
	if j.nPending.Load() == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	m := j.grants[string(key(orgID, userID))]
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]pendingGrant, len(m))
	for id, p := range m {
		out[id] = p
	}
	return out
}

// pendingGrantOf returns the pending state of one grant; ok is false if it has none.
func (j *journal) pendingGrantOf(orgID, userID, resourceID string) (p pendingGrant, ok bool) {
	if j.nPending.Load() == 0 {
		return p, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	p, ok = j.grants[string(key(orgID, userID))][resourceID]
	return p, ok
}

// settle applies the journal if it holds anything, so that a read that follows sees every
// change acknowledged before it.
func (j *journal) settle() error {
	if j.nPending.Load() == 0 {
		return nil
	}
	return j.applyPending()
}

// exclusive applies the journal and holds every change of it back until done is called: for a
// write that is not journaled, from before it reads until after it commits.
func (j *journal) exclusive() (done func(), err error) {
	j.op.Lock()
	defer func() {
		if done == nil { // an error, or a panic on its way up
			j.op.Unlock()
		}
	}()
	if err := j.settle(); err != nil {
		return nil, err
	}
	return j.op.Unlock, nil
}

// applyLater is the scheduled apply.
func (j *journal) applyLater() {
	j.mu.Lock()
	j.timer = nil
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return
	}
	if err := j.applyPending(); err != nil {
		// The changes stay pending; every read and write applies them first and reports the
		// error while it lasts. Try again later.
		j.mu.Lock()
		if j.timer == nil && !j.closed {
			j.timer = time.AfterFunc(j.delay, j.applyLater)
		}
		j.mu.Unlock()
	}
}

// applyPending applies every pending change in one transaction and forgets them.
func (j *journal) applyPending() error {
	j.apply.Lock()
	defer j.apply.Unlock()
	j.mu.Lock()
	recs := j.pending
	j.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	err := j.db.Update(func(tx *bbolt.Tx) error {
		if j.applyFault != nil {
			if err := j.applyFault(); err != nil {
				return err
			}
		}
		return applyRecords(tx, recs)
	})
	if err != nil {
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
		uk := string(key(r.OrgID, r.UserID))
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

// close applies what is pending and closes the files. Changes that arrive later fail.
func (j *journal) close() error {
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

// applyRecords writes recs, in order, into the data file within tx, and records the last one's
// sequence number as applied. Of several changes to one grant only the last is written, and
// not even that if it leaves the grant as the data file has it.
func applyRecords(tx *bbolt.Tx, recs []journalRecord) error {
	grants, byResource := tx.Bucket(bucketGrants), tx.Bucket(bucketGrantsByResource)
	last := make(map[string]int, len(recs)) // key(org, user, resource) → index of its last change
	for i, r := range recs {
		if r.Changed {
			last[string(key(r.OrgID, r.UserID, r.ResourceID))] = i
		}
	}
	for i, r := range recs {
		for _, e := range r.Events {
			if err := appendEvent(tx, e); err != nil {
				return fmt.Errorf("record events: %w", err)
			}
		}
		if !r.Changed {
			continue
		}
		if r.Held {
			ref := expiryRef{Kind: expiryUser, OrgID: r.OrgID, Holder: r.UserID, ResourceID: r.ResourceID, ExpiresAt: r.ExpiresAt}
			if err := indexExpiry(tx, ref); err != nil {
				return err
			}
		}
		k := key(r.OrgID, r.UserID, r.ResourceID)
		if last[string(k)] != i {
			continue
		}
		had := grants.Get(k) != nil
		switch {
		case r.Held:
			if !had {
				if err := byResource.Put(key(r.OrgID, r.ResourceID, r.UserID), []byte(r.UserID)); err != nil {
					return err
				}
			}
			if err := put(grants, k, grantValue(r.CreatedAt, r.ExpiresAt)); err != nil {
				return err
			}
		case had:
			if err := byResource.Delete(key(r.OrgID, r.ResourceID, r.UserID)); err != nil {
				return err
			}
			if err := grants.Delete(k); err != nil {
				return err
			}
		}
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], recs[len(recs)-1].Seq)
	return tx.Bucket(bucketJournal).Put(appliedKey, v[:])
}

// JournalPending is how many grants and revokes are journaled and not yet applied to the data
// file: about a second's at most, unless applying fails.
func (s *Store) JournalPending() int { return int(s.journal.nPending.Load()) }

// JournalApplyFailures counts the applies of the journal that failed. The changes stay
// journaled, and every read that needs them fails until an apply succeeds.
func (s *Store) JournalApplyFailures() uint64 { return s.journal.failures.Load() }
