package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"

	"github.com/grantry/grantry/storage"
)

// A record is framed in a file as its length (4 bytes), the CRC-32C of its encoding (4 bytes),
// and the encoding (appendTo).
const frameHead = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends rec, framed, to b.
func appendFrame(b []byte, rec *Record) []byte {
	start := len(b)
	b = rec.appendTo(append(b, make([]byte, frameHead)...))
	data := b[start+frameHead:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(data)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(data, castagnoli))
	return b
}

// readFile reads records until the end of r or the first record that is empty, cut short,
// fails its checksum, is of another format, or does not follow the one before in sequence: a
// file is written from its start at each turn, in sequence, so a record that does not is one
// left from the turn before.
func readFile(r *bufio.Reader) ([]Record, error) {
	var recs []Record
	var head [frameHead]byte
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

func lastSeq(recs []Record) uint64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

// queue queues rec to be written, and returns the channel that is told once the write and
// sync that hold it are done. The caller holds op, so records are queued in the order of their
// numbers.
func (j *Journal) queue(rec *Record) (chan error, error) {
	done := make(chan error, 1)
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if err := j.failed; err != nil {
		return nil, err
	}
	j.queued = appendFrame(j.queued, rec)
	j.queuedSeq = rec.Seq
	j.waiters = append(j.waiters, done)
	if !j.writing {
		j.writing = true
		j.writer.Go(j.writeQueue)
	}
	return done, nil
}

// writeQueue writes and syncs the queued records until none are left, telling each waiter.
func (j *Journal) writeQueue() {
	var spare []byte
	for {
		// Let the goroutines that are ready run first, as the store's batcher does, so that
		// the changes of the requests just read join this write.
		runtime.Gosched()
		j.wmu.Lock()
		if len(j.waiters) == 0 {
			j.writing = false
			j.wmu.Unlock()
			return
		}
		buf, waiters, seq := j.queued, j.waiters, j.queuedSeq
		j.queued, j.waiters = spare[:0], nil
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
func (j *Journal) write(f *os.File, buf []byte, off, size int64) error {
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
