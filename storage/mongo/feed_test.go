package mongo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/storage"
)

// waitLong bounds each wait of the feed tests for something that happens within a poll or two:
// long enough for a machine that is busy with other work, and only reached if it never happens.
const waitLong = 30 * time.Second

// feedWatcher runs WatchChanges on a store for a test, and hands over what it reports.
type feedWatcher struct {
	tb      testing.TB
	reports chan storage.Change
	syncs   chan bool
}

// watchFeed starts WatchChanges on s until the test ends, and waits for its first look at the
// store, which is its baseline: nothing touched before it is a change.
func watchFeed(tb testing.TB, s *Store) *feedWatcher {
	tb.Helper()
	w := &feedWatcher{tb: tb, reports: make(chan storage.Change, 100_000), syncs: make(chan bool, 1000)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.WatchChanges(ctx,
			func(c storage.Change) { w.reports <- c },
			func(fresh bool) {
				select {
				case w.syncs <- fresh:
				case <-ctx.Done():
				}
			})
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				tb.Errorf("WatchChanges ended with %v, want context.Canceled", err)
			}
		case <-time.After(waitLong):
			tb.Error("WatchChanges did not end with its context")
		}
	})
	w.look()
	return w
}

// next waits for the watcher's next look at the store, and returns whether it found the store
// answering.
func (w *feedWatcher) next() bool {
	w.tb.Helper()
	select {
	case fresh := <-w.syncs:
		return fresh
	case <-time.After(waitLong):
		w.tb.Fatal("the watcher never said whether it was in sync")
		return false
	}
}

// look waits for the watcher's next look at the store, which must find it answering: whatever
// changed before that look began has been reported once it returns.
func (w *feedWatcher) look() {
	w.tb.Helper()
	if !w.next() {
		w.tb.Fatal("the watcher lost sync with a store that answers")
	}
}

// settle waits until the watcher has looked at the store since now: the look under way may
// have read before, so two more after those already made.
func (w *feedWatcher) settle() {
	w.tb.Helper()
	for range len(w.syncs) {
		w.look()
	}
	w.look()
	w.look()
}

// taken returns what the watcher reported so far.
func (w *feedWatcher) taken() []storage.Change {
	var out []storage.Change
	for len(w.reports) > 0 {
		out = append(out, <-w.reports)
	}
	return out
}

// openWatcher opens a store on db to watch with. A read that the race detector on a busy
// machine makes slow is not a lost one: every read of a store that answers must succeed.
func openWatcher(tb testing.TB, uri, db string) *Store {
	tb.Helper()
	s, _ := openStore(tb, uri, db)
	s.pollTimeout = waitLong
	return s
}

func touch(tb testing.TB, s *Store, c storage.Change) {
	tb.Helper()
	if err := s.Touch(tb.Context(), c); err != nil {
		tb.Fatal(err)
	}
}

// TestChangeFeedAcrossStores runs two stores on one database, as two Grantry processes would
// share a deployment: every change one of them touches is reported to a watcher on the other
// as it was touched, once, and nothing else is; a change touched before the watcher started is
// not reported. FerretDB offers no change streams, so this exercises the polling that
// standalone MongoDB deployments rely on too. How soon a change shows follows from
// pollInterval; a test on a shared machine can only check that it shows.
func TestChangeFeedAcrossStores(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, _ := openStore(t, ferretURI, db)
	watcher := openWatcher(t, ferretURI, db)
	touch(t, writer, storage.Change{OrgID: "org-before", Users: []string{"u-before"}})
	touch(t, writer, storage.Change{OrgID: "org-before", Org: true})
	w := watchFeed(t, watcher)

	many := make([]string, maxNamed+1)
	for i := range many {
		many[i] = fmt.Sprintf("u-%04d", i)
	}
	tests := []struct {
		name  string
		store *Store
		touch storage.Change
		want  storage.Change
	}{
		{"a user", writer, storage.Change{OrgID: "org-1", Users: []string{"u-1"}}, storage.Change{OrgID: "org-1", Users: []string{"u-1"}}},
		{"a group and its members", writer, storage.Change{OrgID: "org-2", Users: []string{"u-1", "u-2"}, Groups: []string{"g-1"}}, storage.Change{OrgID: "org-2", Users: []string{"u-1", "u-2"}, Groups: []string{"g-1"}}},
		{"a group", writer, storage.Change{OrgID: "org-1", Groups: []string{"g-2"}}, storage.Change{OrgID: "org-1", Groups: []string{"g-2"}}},
		{"the organization", writer, storage.Change{OrgID: "org-1", Org: true}, storage.Change{OrgID: "org-1", Org: true}},
		{"by the watcher's own store", watcher, storage.Change{OrgID: "org-3", Users: []string{"u-3"}}, storage.Change{OrgID: "org-3", Users: []string{"u-3"}}},
		{"an organization touched before the watcher started", writer, storage.Change{OrgID: "org-before", Users: []string{"u-2"}}, storage.Change{OrgID: "org-before", Users: []string{"u-2"}}},
		{"more users than a change names", writer, storage.Change{OrgID: "org-2", Users: many}, storage.Change{OrgID: "org-2", Org: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			touch(t, tt.store, tt.touch)
			w.settle()
			if diff := cmp.Diff([]storage.Change{tt.want}, w.taken()); diff != "" {
				t.Errorf("reported (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChangeFeedLosesNoConcurrentTouch touches from two stores at once, several goroutines
// each, users of two organizations, so that the two stores' connections update each
// organization's revision concurrently (which FerretDB v1 does not keep apart): every user
// touched is reported, by name.
func TestChangeFeedLosesNoConcurrentTouch(t *testing.T) {
	db := dbName(t.Name(), 0)
	writers := []*Store{nil, nil}
	for i := range writers {
		writers[i], _ = openStore(t, ferretURI, db)
	}
	w := watchFeed(t, openWatcher(t, ferretURI, db))

	const goroutines, touches = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, len(writers)*goroutines*touches)
	for s, writer := range writers {
		for g := range goroutines {
			wg.Go(func() {
				for i := range touches {
					errs <- writer.Touch(t.Context(), storage.Change{OrgID: fmt.Sprintf("org-%d", i%2), Users: []string{fmt.Sprintf("u-%d-%d-%d", s, g, i)}})
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.settle()

	wantUsers := map[string]string{} // user → organization
	for s := range writers {
		for g := range goroutines {
			for i := range touches {
				wantUsers[fmt.Sprintf("u-%d-%d-%d", s, g, i)] = fmt.Sprintf("org-%d", i%2)
			}
		}
	}
	got := map[string]string{}
	for _, c := range w.taken() {
		if c.Org {
			t.Errorf("reported all of %s, which no touch named", c.OrgID)
		}
		for _, u := range c.Users {
			if _, dup := got[u]; dup {
				t.Errorf("reported %s twice", u)
			}
			got[u] = c.OrgID
		}
	}
	if diff := cmp.Diff(wantUsers, got); diff != "" {
		t.Errorf("users reported, by organization (-want +got):\n%s", diff)
	}
}

// TestChangeFeedNetUnderTheLog: a change whose entry in the log is missing when the watcher
// reads it (deleted, here; late or beyond the window read, in life) is reported by its
// organization's revision, as a change of the whole organization; one whose entry is there is
// reported as it was touched.
func TestChangeFeedNetUnderTheLog(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, raw := openStore(t, ferretURI, db)
	watcher := openWatcher(t, ferretURI, db)
	ctx := t.Context()
	var got []storage.Change
	w := newWatch(func(c storage.Change) { got = append(got, c) }, time.Now())
	must(t, watcher.poll(ctx, w, true))

	touch(t, writer, storage.Change{OrgID: "org-1", Users: []string{"u-1"}})
	touch(t, writer, storage.Change{OrgID: "org-2", Users: []string{"u-2"}})
	if _, err := raw.Collection(colChanges).DeleteOne(ctx, bson.D{{Key: "org_id", Value: "org-1"}}); err != nil {
		t.Fatal(err)
	}
	must(t, watcher.poll(ctx, w, false))
	want := []storage.Change{{OrgID: "org-2", Users: []string{"u-2"}}, {OrgID: "org-1", Org: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}

	got = nil
	must(t, watcher.poll(ctx, w, false))
	if len(got) != 0 {
		t.Errorf("a look with nothing touched since the last reported %v", got)
	}
}

// TestChangeFeedAfterAnOutage cuts a watcher off from the store while another store touches
// a user: once the watcher reads the store again, it reports every organization it has seen as
// a whole, the one touched meanwhile and the others alike.
func TestChangeFeedAfterAnOutage(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, _ := openStore(t, ferretURI, db)
	proxy := newCutProxy(t, ferretURI)
	// Server selection gives up soon, so that a look at the store while it is cut off fails
	// well within the test's waits.
	watcher, _ := openStore(t, proxy.uri+"&serverSelectionTimeoutMS=1000&heartbeatFrequencyMS=500", db)
	touch(t, writer, storage.Change{OrgID: "org-1", Users: []string{"u-1"}})
	touch(t, writer, storage.Change{OrgID: "org-2", Groups: []string{"g-1"}})
	w := watchFeed(t, watcher)
	touch(t, writer, storage.Change{OrgID: "org-3", Users: []string{"u-3"}})
	// A look may fail on a busy machine (the watcher's timeout is the service's): those are
	// outages too, and only add reports of every organization.
	start := time.Now()
	for !slices.ContainsFunc(w.taken(), func(c storage.Change) bool {
		return cmp.Equal(c, storage.Change{OrgID: "org-3", Users: []string{"u-3"}})
	}) {
		if time.Since(start) > waitLong {
			t.Fatal("the touch of org-3 before the outage was not reported")
		}
		w.next()
	}

	proxy.cut(true)
	for w.next() {
	}
	touch(t, writer, storage.Change{OrgID: "org-1", Users: []string{"u-2"}})
	w.taken()
	proxy.cut(false)
	for !w.next() {
	}
	got := map[string]bool{}
	for _, c := range w.taken() {
		if c.Org {
			got[c.OrgID] = true
		}
	}
	want := map[string]bool{"org-1": true, "org-2": true, "org-3": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("organizations reported as a whole after the outage (-want +got):\n%s", diff)
	}
}

// TestChangeFeedPrunesTheLog: a watcher deletes the entries older than logRetention, and no
// other.
func TestChangeFeedPrunesTheLog(t *testing.T) {
	db := dbName(t.Name(), 0)
	writer, raw := openStore(t, ferretURI, db)
	ctx := t.Context()
	old := changeDoc{ID: firstIDAt(time.Now().Add(-logRetention - time.Minute)), OrgID: "org-1", Rev: "old", All: true}
	if _, err := raw.Collection(colChanges).InsertOne(ctx, old); err != nil {
		t.Fatal(err)
	}
	touch(t, writer, storage.Change{OrgID: "org-1", Users: []string{"u-1"}})
	watchFeed(t, openWatcher(t, ferretURI, db))
	start := time.Now()
	for {
		n, err := raw.Collection(colChanges).CountDocuments(ctx, bson.D{{Key: "_id", Value: old.ID}})
		must(t, err)
		if n == 0 {
			break
		}
		if time.Since(start) > waitLong {
			t.Fatal("the old entry is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := raw.Collection(colChanges).CountDocuments(ctx, bson.D{})
	must(t, err)
	if n != 1 {
		t.Errorf("%d entries left, want the recent one", n)
	}
}

// TestStreamEvents holds a change stream's events, as MongoDB sends them, to what they mean:
// the deployments that offer a stream are not among the tests'.
func TestStreamEvents(t *testing.T) {
	raw := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	id := bson.NewObjectID()
	entry := func(c storage.Change, rev string) event {
		d := newChangeDoc(c, rev, time.Now())
		d.ID = id
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		ev := event{Op: "insert", DocumentKey: raw(bson.D{{Key: "_id", Value: id}}), Full: b}
		ev.NS.Coll = colChanges
		return ev
	}
	revision := func(op, org string, fields bson.D) event {
		ev := event{Op: op, DocumentKey: raw(bson.D{{Key: "_id", Value: org}})}
		ev.NS.Coll = colRevisions
		switch op {
		case "update":
			ev.Update.Fields = raw(fields)
		case "insert", "replace":
			ev.Full = raw(append(bson.D{{Key: "_id", Value: org}}, fields...))
		}
		return ev
	}
	user := storage.Change{OrgID: "org-1", Users: []string{"u-1"}}
	tests := []struct {
		name   string
		events []event
		want   []storage.Change
	}{
		{"an entry, then the revision it set", []event{entry(user, "r1"), revision("update", "org-1", bson.D{{Key: "rev", Value: "r1"}, {Key: "at", Value: time.Now()}})}, []storage.Change{user}},
		{"an entry, then the revision it made", []event{entry(user, "r1"), revision("insert", "org-1", bson.D{{Key: "rev", Value: "r1"}})}, []storage.Change{user}},
		{"an entry seen twice", []event{entry(user, "r1"), entry(user, "r1")}, []storage.Change{user}},
		{"a revision no entry carries", []event{revision("update", "org-1", bson.D{{Key: "rev", Value: "r2"}})}, []storage.Change{{OrgID: "org-1", Org: true}}},
		{"a revision replaced", []event{revision("replace", "org-1", bson.D{{Key: "rev", Value: "r2"}})}, []storage.Change{{OrgID: "org-1", Org: true}}},
		{"a revision updated otherwise", []event{revision("update", "org-1", bson.D{{Key: "at", Value: time.Now()}})}, []storage.Change{{OrgID: "org-1", Org: true}}},
		{"a revision deleted", []event{revision("delete", "org-1", nil)}, []storage.Change{{OrgID: "org-1", Org: true}}},
		{"an old entry deleted", []event{{Op: "delete", NS: struct {
			Coll string `bson:"coll"`
		}{colChanges}, DocumentKey: raw(bson.D{{Key: "_id", Value: id}})}}, nil},
		{"the log dropped", []event{{Op: "drop", NS: struct {
			Coll string `bson:"coll"`
		}{colChanges}}}, []storage.Change{{OrgID: "org-0", Org: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []storage.Change
			w := newWatch(func(c storage.Change) { got = append(got, c) }, time.Now())
			w.revision("org-0", "r0", true)
			for _, ev := range tt.events {
				w.event(ev)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reported (-want +got):\n%s", diff)
			}
		})
	}
}

// cutProxy is a TCP proxy in front of the tests' FerretDB that a test cuts off and restores.
type cutProxy struct {
	uri    string // of the proxy, with the query of the URI it fronts
	ln     net.Listener
	target string

	mu    sync.Mutex
	off   bool
	conns map[net.Conn]bool
}

func newCutProxy(tb testing.TB, uri string) *cutProxy {
	tb.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	u.Host = ln.Addr().String()
	p.uri = u.String()
	if !strings.Contains(p.uri, "?") {
		p.uri += "?"
	}
	go p.accept()
	tb.Cleanup(func() {
		ln.Close()
		p.cut(true)
	})
	return p
}

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		off := p.off
		p.mu.Unlock()
		if off {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// cut refuses connections, and closes those open, while off; else lets them through.
func (p *cutProxy) cut(off bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = off
	if off {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}
