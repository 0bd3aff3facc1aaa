package decisionlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a sink that keeps what it is given. If gate is set, each call first says it has
// begun on entered and then waits for gate.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	fail    int // how many calls fail before one succeeds
	calls   int
	entered chan struct{}
	gate    chan struct{}
}

func (r *recorder) sink(ctx context.Context, batch []Entry) error {
	if r.entered != nil {
		r.entered <- struct{}{}
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls <= r.fail {
		return errors.New("store down")
	}
	var ids []string
	for _, e := range batch {
		ids = append(ids, e.RequestID)
	}
	r.batches = append(r.batches, ids)
	return nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Concat(r.batches...)
}

func entry(n int) Entry {
	return Entry{RequestID: fmt.Sprintf("r%02d", n), UserID: "u", Allowed: n%2 == 0}
}

func names(from, to int) []string {
	var out []string
	for n := from; n <= to; n++ {
		out = append(out, entry(n).RequestID)
	}
	return out
}

func closeLog(tb testing.TB, l *Log) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

// eventually waits for cond, failing the test if it never holds.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	tb.Fatalf("%s: never happened", what)
}

func TestBatches(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		record   int
		wantSync [][]string // batches written before Close
	}{
		{"full batches are written at once", Config{BatchSize: 3, FlushInterval: time.Hour}, 7,
			[][]string{names(0, 2), names(3, 5)}},
		{"a partial batch waits for the interval", Config{BatchSize: 100, FlushInterval: 5 * time.Millisecond}, 2,
			[][]string{names(0, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			l := New(tt.cfg, r.sink)
			for n := range tt.record {
				l.Record(entry(n))
			}
			want := slices.Concat(tt.wantSync...)
			eventually(t, "batches written", func() bool { return len(r.all()) == len(want) })
			closeLog(t, l)
			if got := r.all(); !slices.Equal(got, names(0, tt.record-1)) {
				t.Errorf("written after Close = %v, want every entry in order", got)
			}
			if l.Written() != uint64(tt.record) || l.Dropped() != 0 || l.Failed() != 0 {
				t.Errorf("written %d, dropped %d, failed %d; want %d, 0, 0", l.Written(), l.Dropped(), l.Failed(), tt.record)
			}
		})
	}
}

// TestFullQueueDropsOldest: with the sink stuck, Record keeps returning and the queue keeps
// the newest entries, counting the ones it dropped.
func TestFullQueueDropsOldest(t *testing.T) {
	r := &recorder{entered: make(chan struct{}), gate: make(chan struct{})}
	l := New(Config{QueueSize: 4, BatchSize: 1, FlushInterval: time.Hour}, r.sink)
	l.Record(entry(0))
	<-r.entered // the writer holds entry 0 and is stuck in the sink

	recorded := make(chan struct{})
	go func() {
		for n := 1; n <= 10; n++ {
			l.Record(entry(n))
		}
		close(recorded)
	}()
	select {
	case <-recorded:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked while the sink was stuck")
	}
	if got := l.Dropped(); got != 6 {
		t.Errorf("Dropped = %d, want 6 (entries 1 to 6 made room for 7 to 10)", got)
	}
	if got := l.Waiting(); got != 4 {
		t.Errorf("Waiting = %d, want the queue's 4", got)
	}
	go func() {
		for range r.entered {
		}
	}()
	close(r.gate)
	closeLog(t, l)
	close(r.entered)
	want := append(names(0, 0), names(7, 10)...)
	if got := r.all(); !slices.Equal(got, want) {
		t.Errorf("written = %v, want %v: the oldest waiting were dropped", got, want)
	}
}

func TestSinkFailures(t *testing.T) {
	tests := []struct {
		name        string
		fail        int
		retries     int
		wantWritten uint64
		wantFailed  uint64
	}{
		{"a retry succeeds", 2, 2, 3, 0},
		{"retries run out", 3, 2, 0, 3},
		{"no retries", 1, -1, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{fail: tt.fail}
			l := New(Config{BatchSize: 3, FlushInterval: time.Hour, Retries: tt.retries}, r.sink)
			for n := range 3 {
				l.Record(entry(n))
			}
			eventually(t, "batch done", func() bool { return l.Written()+l.Failed() == 3 })
			closeLog(t, l)
			if l.Written() != tt.wantWritten || l.Failed() != tt.wantFailed {
				t.Errorf("written %d, failed %d; want %d, %d", l.Written(), l.Failed(), tt.wantWritten, tt.wantFailed)
			}
		})
	}
}

func TestRecordAfterCloseIsDropped(t *testing.T) {
	r := &recorder{}
	l := New(Config{}, r.sink)
	closeLog(t, l)
	closeLog(t, l) // a second Close is harmless
	l.Record(entry(1))
	if l.Dropped() != 1 || len(r.all()) != 0 {
		t.Errorf("after Close: dropped %d, written %v; want 1 dropped, nothing written", l.Dropped(), r.all())
	}
}

// TestConcurrentRecord accounts for every entry recorded from many goroutines: written or
// dropped, none lost or doubled. Run it with -race.
func TestConcurrentRecord(t *testing.T) {
	const goroutines, each = 8, 500
	r := &recorder{}
	l := New(Config{QueueSize: 256, BatchSize: 64, FlushInterval: time.Millisecond}, r.sink)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for n := range each {
				l.Record(Entry{RequestID: fmt.Sprintf("%d-%d", g, n)})
			}
		})
	}
	wg.Wait()
	closeLog(t, l)
	got := r.all()
	if uint64(len(got))+l.Dropped() != goroutines*each || l.Written() != uint64(len(got)) {
		t.Errorf("written %d (sink saw %d) + dropped %d != recorded %d", l.Written(), len(got), l.Dropped(), goroutines*each)
	}
	slices.Sort(got)
	if len(slices.Compact(got)) != len(r.all()) {
		t.Error("an entry was written twice")
	}
}

// BenchmarkRecord is the cost a check pays to log its decision.
func BenchmarkRecord(b *testing.B) {
	l := New(Config{}, func(context.Context, []Entry) error { return nil })
	defer l.Close(context.Background())
	e := Entry{RequestID: "req", OrgID: "org", APIKeyID: "key", UserID: "user", ResourceIDs: []string{"r"}, Allowed: true}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(e)
		}
	})
}
