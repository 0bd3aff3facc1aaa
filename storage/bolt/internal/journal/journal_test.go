package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/storage"
)

const (
	tOrg = "org-1"
	tR0  = "00000000-0000-4000-8000-000000000001"
	tR1  = "00000000-0000-4000-8000-000000000002"
)

type grantKey struct{ user, resource string }

// dataFile stands in for the store's data file: the grants and events that the records applied
// to it leave, and the last record applied. It fails an apply that does not follow the last in
// sequence, so a record applied twice or skipped fails the test that applies it.
type dataFile struct {
	mu      sync.Mutex
	applied uint64
	grants  map[grantKey]Grant
	events  []string // ids, in the order applied
	applies int      // applies that succeeded
	fault   error    // while set, every apply fails with it
	during  func()   // if set, called in each apply, as another goroutine's change would come
}

func newDataFile() *dataFile { return &dataFile{grants: map[grantKey]Grant{}} }

func (d *dataFile) lastApplied() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applied, nil
}

func (d *dataFile) apply(recs []Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault != nil {
		return d.fault
	}
	if d.during != nil {
		d.during()
	}
	for i, r := range recs {
		if want := d.applied + uint64(i) + 1; r.Seq != want {
			return fmt.Errorf("applied record %d where %d was next", r.Seq, want)
		}
	}
	for _, r := range recs {
		for _, e := range r.Events {
			d.events = append(d.events, e.ID)
		}
		if !r.Changed {
			continue
		}
		k := grantKey{r.UserID, r.ResourceID}
		if r.Held {
			d.grants[k] = Grant{Held: true, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
		} else {
			delete(d.grants, k)
		}
	}
	d.applied = recs[len(recs)-1].Seq
	d.applies++
	return nil
}

func (d *dataFile) appliesDone() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applies
}

func (d *dataFile) setFault(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fault = err
}

// copy is the data file as of its last apply, as a crash leaves it.
func (d *dataFile) copy() *dataFile {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &dataFile{applied: d.applied, grants: maps.Clone(d.grants), events: slices.Clone(d.events)}
}

// held returns the grants the data file holds.
func (d *dataFile) held() map[grantKey]Grant {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.grants)
}

func (d *dataFile) eventIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

// openAt opens the journal in dir over d. What it journals stays pending until the test
// applies it; the files are not synced, as a crash here is a copy of them.
func openAt(tb testing.TB, dir string, d *dataFile) *Journal {
	tb.Helper()
	j, err := Open(Config{Path: filepath.Join(dir, "j"), NoSync: true, ApplyAfter: time.Hour, Applied: d.lastApplied, Apply: d.apply})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// Bounded, so that a test whose journal is stuck (a lock kept) fails rather than hangs.
		closed := make(chan struct{})
		go func() { j.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			tb.Error("Close did not return")
		}
	})
	return j
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// crashCopy copies the journal's files and d, as a crash would leave them with the page cache
// written. Nothing may be applying the journal meanwhile.
func crashCopy(tb testing.TB, dir string, d *dataFile) (string, *dataFile) {
	tb.Helper()
	to := tb.TempDir()
	for _, name := range []string{"j.0", "j.1"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		must(tb, err)
		must(tb, os.WriteFile(filepath.Join(to, name), data, 0o600))
	}
	return to, d.copy()
}

// changer journals changes to grants, each with an event of its own id.
type changer struct {
	mu     sync.Mutex
	events int
}

func (c *changer) event(user, resource string) Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	id := fmt.Sprintf("e-%d", c.events)
	return Event{OrgID: tOrg, ID: id, UserID: user, SvcID: resource, Data: []byte(`{"id":"` + id + `",` + strings.Repeat(" ", 200) + `}`)}
}

// change is the decide of a change that leaves u's grant of r held or not.
func (c *changer) change(u, r string, held bool, expires int64) func() (Record, error) {
	return func() (Record, error) {
		rec := Record{OrgID: tOrg, UserID: u, ResourceID: r, Changed: true, Held: held, Events: []Event{c.event(u, r)}}
		if held {
			rec.CreatedAt, rec.ExpiresAt = 1767225600000, expires
		}
		return rec, nil
	}
}

// set journals the change that leaves u's grant of r held or not.
func (c *changer) set(tb testing.TB, j *Journal, u, r string, held bool, expires int64) {
	tb.Helper()
	must(tb, j.Append(c.change(u, r, held, expires)))
}

// seen is what a reader sees of the users' grants: the data file's, with the pending changes
// over them.
func seen(j *Journal, d *dataFile, users ...string) map[grantKey]Grant {
	out := d.held()
	for _, u := range users {
		for r, g := range j.Grants(tOrg, u) {
			if g.Held {
				out[grantKey{u, r}] = g
			} else {
				delete(out, grantKey{u, r})
			}
		}
	}
	return out
}

// TestRecoversAcknowledgedChanges: every change that Append returned for is applied by the
// journal opened from the files a crash leaves, though none was applied before the crash, and
// each once, events included; and so it is after a clean close. The journal opened goes on
// numbering from the last record.
func TestRecoversAcknowledgedChanges(t *testing.T) {
	dir, d := t.TempDir(), newDataFile()
	j := openAt(t, dir, d)
	var c changer
	c.set(t, j, "u-0", tR1, true, 0)
	must(t, j.Settle()) // u-0 holds tR1 in the data file

	c.set(t, j, "u-0", tR0, true, 0)
	c.set(t, j, "u-1", tR0, true, 0)
	c.set(t, j, "u-1", tR0, false, 0)
	c.set(t, j, "u-0", tR1, false, 0)
	c.set(t, j, "u-2", tR1, true, 1767312000000)
	if diff := cmp.Diff(map[grantKey]Grant{{"u-0", tR1}: {Held: true, CreatedAt: 1767225600000}}, d.held()); diff != "" {
		t.Fatalf("the changes were applied before the crash: the journal is not what is tested (-want +got):\n%s", diff)
	}

	want := map[grantKey]Grant{
		{"u-0", tR0}: {Held: true, CreatedAt: 1767225600000},
		{"u-2", tR1}: {Held: true, CreatedAt: 1767225600000, ExpiresAt: 1767312000000},
	}
	if diff := cmp.Diff(want, seen(j, d, "u-0", "u-1", "u-2")); diff != "" {
		t.Errorf("before the crash, grants over the pending changes (-want +got):\n%s", diff)
	}
	wantEvents := []string{"e-1", "e-2", "e-3", "e-4", "e-5", "e-6"}
	check := func(name string, j *Journal, d *dataFile) {
		t.Helper()
		if got := j.Pending(); got != 0 {
			t.Errorf("%s: %d pending, want every record applied on open", name, got)
		}
		if diff := cmp.Diff(want, d.held()); diff != "" {
			t.Errorf("%s: grants (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantEvents, d.eventIDs()); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", name, diff)
		}
		// The next record follows the last: the data file fails one that does not.
		c.set(t, j, "u-3", tR0, true, 0)
		if err := j.Settle(); err != nil {
			t.Errorf("%s: apply the next record: %v", name, err)
		}
	}
	to, crashed := crashCopy(t, dir, d)
	check("after a crash", openAt(t, to, crashed), crashed)
	must(t, j.Close())
	check("after Close", openAt(t, dir, d), d)
}

// TestStopsAtADamagedRecord: a record that fails its checksum, as one cut short by a crash
// does, ends the journal: the changes before it are recovered and it is not.
func TestStopsAtADamagedRecord(t *testing.T) {
	dir, d := t.TempDir(), newDataFile()
	j := openAt(t, dir, d)
	var c changer
	c.set(t, j, "u-0", tR0, true, 0)
	c.set(t, j, "u-1", tR0, true, 0) // the last record: damaged below
	to, crashed := crashCopy(t, dir, d)

	path := filepath.Join(to, "j.0")
	data, err := os.ReadFile(path)
	must(t, err)
	end := 0 // of the records
	for range 2 {
		end += frameHead + int(binary.BigEndian.Uint32(data[end:]))
	}
	data[end-1] ^= 0xff // the last record's event's closing brace
	must(t, os.WriteFile(path, data, 0o600))

	openAt(t, to, crashed)
	if diff := cmp.Diff(map[grantKey]Grant{{"u-0", tR0}: {Held: true, CreatedAt: 1767225600000}}, crashed.held()); diff != "" {
		t.Errorf("grants after the damaged record (-want +got):\n%s", diff)
	}
}

// TestTakesTurnsBetweenFiles: past rotateAt, the records go to the other file once every
// record in it is applied, over what it held; the files stay small, and a crash at any point
// loses nothing acknowledged.
func TestTakesTurnsBetweenFiles(t *testing.T) {
	dir, d := t.TempDir(), newDataFile()
	j := openAt(t, dir, d)
	j.rotateAt, j.growBy = 2<<10, 512
	users := []string{"u-0", "u-1", "u-2", "u-3"}
	var c changer
	held := map[grantKey]Grant{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		k := grantKey{users[rng.IntN(len(users))], []string{tR0, tR1}[rng.IntN(2)]}
		_, was := held[k]
		c.set(t, j, k.user, k.resource, !was, 0)
		if was {
			delete(held, k)
		} else {
			held[k] = Grant{Held: true, CreatedAt: 1767225600000}
		}
		if i%5 == 4 {
			must(t, j.Settle())
		}
		if i%50 == 22 { // between two applies
			to, crashed := crashCopy(t, dir, d)
			r := openAt(t, to, crashed)
			if diff := cmp.Diff(held, crashed.held()); diff != "" {
				t.Fatalf("after %d changes and a crash: grants (-want +got):\n%s", i+1, diff)
			}
			must(t, r.Close())
		}
	}
	var n [2]int64
	for i := range n {
		info, err := os.Stat(filepath.Join(dir, fmt.Sprintf("j.%d", i)))
		must(t, err)
		n[i] = info.Size()
	}
	if n[0] == 0 || n[1] == 0 {
		t.Errorf("journal file sizes %v: want both written", n)
	}
	// Written without starting over, the two would hold every record: 400 of about 300 bytes.
	if limit := 3*j.rotateAt + j.growBy; n[0] > limit || n[1] > limit {
		t.Errorf("journal file sizes %v: want each at most %d, as each is written over from its start", n, limit)
	}
}

// TestNeverWritesOverPendingRecords: while the other file holds a record not yet applied, the
// records stay in the file being written, past rotateAt, so a crash before the apply loses
// none of them.
func TestNeverWritesOverPendingRecords(t *testing.T) {
	dir, d := t.TempDir(), newDataFile()
	j := openAt(t, dir, d)
	j.rotateAt, j.growBy = 2<<10, 512
	var c changer
	want := map[grantKey]Grant{}
	for i := range 40 { // about six times rotateAt, none applied
		u := fmt.Sprintf("u-%d", i)
		c.set(t, j, u, tR0, true, 0)
		want[grantKey{u, tR0}] = Grant{Held: true, CreatedAt: 1767225600000}
	}
	to, crashed := crashCopy(t, dir, d)
	openAt(t, to, crashed)
	if diff := cmp.Diff(want, crashed.held()); diff != "" {
		t.Errorf("after a crash: grants (-want +got):\n%s", diff)
	}
}

// TestChangeDuringApply: a change journaled while an apply of an earlier change to the same
// grant is under way stays pending, and is what Grant reports once the apply is done.
func TestChangeDuringApply(t *testing.T) {
	d := newDataFile()
	j := openAt(t, t.TempDir(), d)
	var c changer
	c.set(t, j, "u-0", tR0, true, 0)
	d.during = func() {
		d.during = nil
		c.set(t, j, "u-0", tR0, false, 0)
	}
	must(t, j.Settle())
	if got := j.Pending(); got != 1 {
		t.Errorf("after the apply: %d pending, want 1, the revoke", got)
	}
	if g, ok := j.Grant(tOrg, "u-0", tR0); !ok || g.Held {
		t.Errorf("Grant after the apply = %+v, %t; want the pending revoke", g, ok)
	}
	if got := j.Grants(tOrg, "u-0"); len(got) != 1 || got[tR0].Held {
		t.Errorf("Grants after the apply = %+v; want the pending revoke", got)
	}
	must(t, j.Settle())
	if got := d.held(); len(got) != 0 {
		t.Errorf("after the revoke's apply: data file grants %+v, want none", got)
	}
}

// TestNumbersAfterTheDataFile: a journal whose files hold none of the records applied (a data
// file restored without them) numbers its records after the data file's last, so that none is
// taken for one applied already.
func TestNumbersAfterTheDataFile(t *testing.T) {
	dir, d := t.TempDir(), newDataFile()
	d.applied = 41
	j := openAt(t, dir, d)
	var c changer
	c.set(t, j, "u-0", tR0, true, 0)
	must(t, j.Settle()) // the data file fails a record that is not 42
	to, crashed := crashCopy(t, dir, d)
	openAt(t, to, crashed)
	if got := crashed.applied; got != 42 {
		t.Errorf("after a reopen: the last applied is %d, want 42", got)
	}
}

// TestAppendJournalsWhatDecideReturns: a record is journaled if it changes a grant or carries
// events; decide's error is returned and journals nothing.
func TestAppendJournalsWhatDecideReturns(t *testing.T) {
	fault := errors.New("no such user")
	tests := []struct {
		name        string
		rec         Record
		err         error
		wantPending int
	}{
		{"a change", Record{OrgID: tOrg, UserID: "u-0", ResourceID: tR0, Changed: true, Held: true}, nil, 1},
		{"events alone", Record{OrgID: tOrg, UserID: "u-0", ResourceID: tR0, Events: []Event{{OrgID: tOrg, ID: "e-1"}}}, nil, 1},
		{"nothing", Record{OrgID: tOrg, UserID: "u-0", ResourceID: tR0}, nil, 0},
		{"an error", Record{OrgID: tOrg, UserID: "u-0", ResourceID: tR0, Changed: true, Held: true}, fault, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := openAt(t, t.TempDir(), newDataFile())
			err := j.Append(func() (Record, error) { return tt.rec, tt.err })
			if !errors.Is(err, tt.err) {
				t.Errorf("Append: error = %v, want %v", err, tt.err)
			}
			if got := j.Pending(); got != tt.wantPending {
				t.Errorf("%d pending, want %d", got, tt.wantPending)
			}
			_, ok := j.Grant(tOrg, "u-0", tR0)
			if want := tt.wantPending == 1 && tt.rec.Changed; ok != want {
				t.Errorf("Grant reports a pending change: %t, want %t", ok, want)
			}
		})
	}
}

// TestAppendSurvivesAPanic: a decide that panics fails its own Append and no other: the lock is
// let go, and the next Append goes through.
func TestAppendSurvivesAPanic(t *testing.T) {
	j := openAt(t, t.TempDir(), newDataFile())
	func() {
		defer func() {
			if recover() == nil {
				t.Error("decide's panic did not reach the caller")
			}
		}()
		j.Append(func() (Record, error) { panic("decide") })
	}()
	if !j.op.TryLock() {
		t.Fatal("the journal's lock was kept after decide panicked")
	}
	j.op.Unlock()
	var c changer
	c.set(t, j, "u-0", tR1, true, 0)
	if got := j.Pending(); got != 1 {
		t.Errorf("%d pending, want 1: only the record after the panic", got)
	}
}

// TestAppliesWhenFull: an Append that finds pendingMax records pending applies them before it
// journals, so the journal never holds more, however long its apply waits; if that apply
// fails, so does the Append, and it journals nothing.
func TestAppliesWhenFull(t *testing.T) {
	d := newDataFile()
	j := openAt(t, t.TempDir(), d)
	j.pendingMax = 3
	var c changer
	for _, u := range []string{"u-0", "u-1", "u-2"} {
		c.set(t, j, u, tR0, true, 0)
	}
	if got := j.Pending(); got != 3 || len(d.held()) != 0 {
		t.Fatalf("after 3 grants: %d pending, %d in the data file; want 3 and 0", got, len(d.held()))
	}
	c.set(t, j, "u-3", tR0, true, 0)
	if got := j.Pending(); got != 1 {
		t.Errorf("after a 4th grant: %d pending, want 1 (the 4th)", got)
	}
	if got := len(d.held()); got != 3 {
		t.Errorf("after the journal was full: %d grants in the data file, want the first 3", got)
	}

	c.set(t, j, "u-4", tR0, true, 0)
	c.set(t, j, "u-5", tR0, true, 0)
	fault := errors.New("no space left on device")
	d.setFault(fault)
	decided := false
	err := j.Append(func() (Record, error) {
		decided = true
		return Record{OrgID: tOrg, UserID: "u-6", ResourceID: tR0, Changed: true, Held: true}, nil
	})
	if !errors.Is(err, fault) || !errors.Is(err, storage.ErrUnavailable) || decided {
		t.Errorf("Append to a full journal that cannot apply: error = %v, decided %t; want the apply's error, unavailable, and no decision", err, decided)
	}
	if got := j.Pending(); got != 3 {
		t.Errorf("after the Append failed: %d pending, want 3", got)
	}
}

// TestApplyFailure: an apply that fails leaves its records pending and counted, and Grant
// still reports them; Settle and Exclusive fail as unavailable, with the apply's error, and
// hold nothing; the scheduled apply tries again, and once it succeeds nothing is lost.
func TestApplyFailure(t *testing.T) {
	d := newDataFile()
	j := openAt(t, t.TempDir(), d)
	fault := errors.New("no space left on device")
	d.setFault(fault)
	var c changer
	c.set(t, j, "u-0", tR0, true, 0)
	j.applyLater() // the scheduled apply
	if got := j.ApplyFailures(); got != 1 {
		t.Errorf("after a failed apply: %d failures counted, want 1", got)
	}
	if got := j.Pending(); got != 1 || len(d.held()) != 0 {
		t.Errorf("after a failed apply: %d pending, %d grants in the data file; want 1 and 0", got, len(d.held()))
	}
	if g, ok := j.Grant(tOrg, "u-0", tR0); !ok || !g.Held {
		t.Errorf("Grant while the apply fails = %+v, %t; want it held", g, ok)
	}
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, fault) {
			t.Errorf("%s while the apply fails: %v, want storage.ErrUnavailable and the apply's error", what, err)
		}
	}
	unavailable("Settle", j.Settle())
	done, err := j.Exclusive()
	unavailable("Exclusive", err)
	if done != nil || !j.op.TryLock() {
		t.Fatal("Exclusive held the journal after it failed")
	}
	j.op.Unlock()
	j.mu.Lock()
	rescheduled := j.timer != nil
	j.mu.Unlock()
	if !rescheduled {
		t.Fatal("a failed apply did not schedule another")
	}

	d.setFault(nil)
	j.applyLater()
	if got := j.Pending(); got != 0 {
		t.Errorf("after the apply succeeded: %d pending, want 0", got)
	}
	if diff := cmp.Diff(map[grantKey]Grant{{"u-0", tR0}: {Held: true, CreatedAt: 1767225600000}}, d.held()); diff != "" {
		t.Errorf("grants after the apply succeeded (-want +got):\n%s", diff)
	}
	// The scheduled apply, and the one each of Settle and Exclusive tried.
	if got := j.ApplyFailures(); got != 3 {
		t.Errorf("failures counted after the apply succeeded: %d, want 3", got)
	}
}

// TestAppliesAfterApplyAfter: the records journaled within ApplyAfter of the first are applied
// together, once ApplyAfter has passed and not before.
func TestAppliesAfterApplyAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDataFile()
		j, err := Open(Config{Path: filepath.Join(t.TempDir(), "j"), NoSync: true, ApplyAfter: time.Second, Applied: d.lastApplied, Apply: d.apply})
		must(t, err)
		defer j.Close()
		var c changer
		c.set(t, j, "u-0", tR0, true, 0)
		time.Sleep(time.Second / 2)
		c.set(t, j, "u-1", tR0, true, 0)
		time.Sleep(time.Second/2 - time.Nanosecond)
		synctest.Wait()
		if got, applies := j.Pending(), d.appliesDone(); got != 2 || applies != 0 {
			t.Fatalf("just before ApplyAfter: %d pending, %d applies; want 2 and 0", got, applies)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got, applies := j.Pending(), d.appliesDone(); got != 0 || applies != 1 || len(d.held()) != 2 {
			t.Errorf("at ApplyAfter: %d pending, %d applies, %d grants; want 0, 1 and 2", got, applies, len(d.held()))
		}
	})
}

// TestConcurrentAppends: writers each change their own user's grants while the journal is
// applied over and over; every record is applied once, in sequence, and every user ends with
// the grants of their last changes, applied and after a crash.
func TestConcurrentAppends(t *testing.T) {
	const writers, changes = 8, 150
	dir, d := t.TempDir(), newDataFile()
	j := openAt(t, dir, d)
	var c changer
	want := map[grantKey]Grant{}
	var wantMu sync.Mutex
	var stop atomic.Bool
	var applier sync.WaitGroup
	applier.Go(func() {
		for !stop.Load() {
			if err := j.Settle(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			u := fmt.Sprintf("u-%d", w)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			held := map[string]bool{}
			for range changes {
				r := []string{tR0, tR1}[rng.IntN(2)]
				held[r] = rng.IntN(2) == 0
				if err := j.Append(c.change(u, r, held[r], 0)); err != nil {
					t.Error(err)
					return
				}
			}
			wantMu.Lock()
			defer wantMu.Unlock()
			for r, h := range held {
				if h {
					want[grantKey{u, r}] = Grant{Held: true, CreatedAt: 1767225600000}
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	applier.Wait()
	to, crashed := crashCopy(t, dir, d)
	must(t, j.Settle())
	if diff := cmp.Diff(want, d.held()); diff != "" {
		t.Errorf("applied: grants (-want +got):\n%s", diff)
	}
	openAt(t, to, crashed)
	if diff := cmp.Diff(want, crashed.held()); diff != "" {
		t.Errorf("after a crash: grants (-want +got):\n%s", diff)
	}
	if got, want := len(crashed.eventIDs()), writers*changes; got != want {
		t.Errorf("after a crash: %d events, want %d", got, want)
	}
}
