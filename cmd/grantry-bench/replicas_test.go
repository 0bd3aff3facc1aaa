package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/mongo"
)

func TestVisibilityPercentiles(t *testing.T) {
	var v visibility
	v.add(visibility{times: []time.Duration{300 * time.Millisecond, 100 * time.Millisecond}, errors: 1, firstError: "first"})
	v.add(visibility{times: []time.Duration{200 * time.Millisecond}, notVisible: 2, errors: 1, firstError: "second"})
	p50, p99 := v.percentiles()
	if p50 != 200*time.Millisecond || p99 != 300*time.Millisecond || v.notVisible != 2 || v.errors != 2 || v.firstError != "first" {
		t.Errorf("p50 %v, p99 %v, %+v; want 200ms, 300ms, 2 not visible, 2 errors, the first error", p50, p99, v)
	}
	if p50, p99 := (visibility{}).percentiles(); p50 != 0 || p99 != 0 {
		t.Errorf("percentiles of nothing = %v, %v; want 0", p50, p99)
	}
}

// fakeReplicas is replica A, which grants and revokes at once, and replica B, which answers
// each pair's old state to the first lag questions after a change, as a replica that has not
// seen it yet would.
type fakeReplicas struct {
	mu      sync.Mutex
	granted map[string]bool // body of the pair → granted on A
	asked   map[string]int  // questions to B since the pair's last change
	lag     int
	writes  int
	stopAt  int // close stop as this write arrives
	stop    chan struct{}
}

func (f *fakeReplicas) a(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writes++; f.writes == f.stopAt {
		close(f.stop)
	}
	f.granted[string(body)] = r.URL.Path == "/provisions/add_to_user"
	f.asked[string(body)] = 0
	w.Write([]byte(`{"user_id":"u"}`))
}

func (f *fakeReplicas) b(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[string(body)]++
	now := f.granted[string(body)]
	if f.asked[string(body)] <= f.lag {
		now = !now
	}
	if now {
		w.Write([]byte("true"))
	} else {
		w.Write([]byte("false"))
	}
}

// TestProberWaitsForB: the prober records one time per change, and only once B answers as A
// would; it finishes the pair it is on when stopped, so every grant is revoked.
func TestProberWaitsForB(t *testing.T) {
	f := &fakeReplicas{granted: map[string]bool{}, asked: map[string]int{}, lag: 3, stopAt: 3, stop: make(chan struct{})}
	a, b := httptest.NewServer(http.HandlerFunc(f.a)), httptest.NewServer(http.HandlerFunc(f.b))
	defer a.Close()
	defer b.Close()
	w := mustWorkload(t, smallParams())
	pr := newProber(a.Listener.Addr().String(), b.Listener.Addr().String(), "k", w, w.probePairs(probeCount))
	pr.pause = 0
	defer pr.close()
	v := pr.run(t.Context(), f.stop)
	if len(v.times) != 4 || v.notVisible != 0 || v.errors != 0 {
		t.Fatalf("visibility %+v; want 4 changes (two pairs granted and revoked), none lost", v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.granted) != 2 {
		t.Errorf("%d pairs changed, want 2", len(f.granted))
	}
	for pair, granted := range f.granted {
		if granted {
			t.Errorf("pair %s left granted", pair)
		}
		if f.asked[pair] != f.lag+1 {
			t.Errorf("B asked %d times about %s after its revoke, want %d: until it answered as A", f.asked[pair], pair, f.lag+1)
		}
	}
}

// TestMongoRows runs what the MongoDB rows run, in process: a FerretDB, the workload seeded
// into it as seedMongo seeds it, and two Grantry servers on it, each following the store's
// change feed. The load generator's answers must all be right, and the prober must see each
// change made on one server on the other.
func TestMongoRows(t *testing.T) {
	dir := t.TempDir()
	db, err := startFerretDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	p := params{Seed: 5, Users: 20, Resources: 30, Grants: 4, Checks: 2_000}
	ms, err := seedMongo(t.Context(), db, dir, p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ms.p != p {
		t.Errorf("seeded %+v, want %+v", ms.p, p)
	}
	key, err := os.ReadFile(dir + "/" + keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []served
	for range 2 {
		store, err := mongo.Open(t.Context(), db.uri, db.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close(context.Background()) })
		s := serveGrantry(t, store, true)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			store.WatchChanges(ctx, s.engine.Changed, s.engine.Synced)
		}()
		t.Cleanup(func() { cancel(); <-done })
		replicas = append(replicas, s)
	}
	w := mustWorkload(t, ms.p)
	tg, err := newTarget(targetReplicas, w)
	if err != nil {
		t.Fatal(err)
	}
	g := &generator{target: tg, addrs: []string{replicas[0].http.Listener.Addr().String(), replicas[1].http.Listener.Addr().String()},
		key: strings.TrimSpace(string(key)), conns: 2}
	res := measureSome(t, g, 500*time.Millisecond)
	if res.Requests == 0 || res.Mismatches != 0 || res.Errors != 0 {
		t.Errorf("%d requests, %d wrong, %d errors (first: %s); want some, all right", res.Requests, res.Mismatches, res.Errors, res.FirstError)
	}

	pr := newProber(replicas[0].http.Listener.Addr().String(), replicas[1].http.Listener.Addr().String(), strings.TrimSpace(string(key)), w, w.probePairs(probeCount))
	pr.pause = 0
	defer pr.close()
	var v visibility
	pr.probe(t.Context(), &v)
	if len(v.times) != 2 || v.notVisible != 0 || v.errors != 0 {
		t.Errorf("visibility %+v; want a grant and a revoke seen on B", v)
	}
}

// TestSeedMongoRows: on FerretDB the MongoDB row gets make bench's workload and the replicas'
// row its first users in a database of its own; each row's database holds its workload's
// users, and its folder the organization's API key.
func TestSeedMongoRows(t *testing.T) {
	p := params{Seed: 3, Users: smallMongoUsers + 10, Resources: 10, Grants: 2, Checks: 100}
	tests := []struct {
		rows      string
		want      [][]string // each seeding's systems
		wantUsers []int
	}{
		{rowMongo, [][]string{{rowMongo}}, []int{p.Users}},
		{rowReplicas, [][]string{{rowReplicas}}, []int{smallMongoUsers}},
		{rowMongo + "," + rowReplicas, [][]string{{rowMongo}, {rowReplicas}}, []int{p.Users, smallMongoUsers}},
	}
	for _, tc := range tests {
		t.Run(tc.rows, func(t *testing.T) {
			dir := t.TempDir()
			db, err := startFerretDB(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer db.close(context.Background())
			sel, err := parseSystems(tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			rep, mongoRow, replicasRow, err := seedMongoRows(t.Context(), db, sel, dir, p, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var systems [][]string
			var users []int
			for _, ms := range rep.seedings {
				systems, users = append(systems, ms.systems), append(users, ms.p.Users)
			}
			if !reflect.DeepEqual(systems, tc.want) || !slices.Equal(users, tc.wantUsers) {
				t.Errorf("seeded %v with %v users, want %v with %v", systems, users, tc.want, tc.wantUsers)
			}
			if mongoRow.db.name == replicasRow.db.name || mongoRow.dir == replicasRow.dir || replicasRow.p != replicaParams(p) {
				t.Errorf("the replicas' row runs on %+v, the MongoDB row on %+v: want a database, a folder and fewer users of its own", replicasRow, mongoRow)
			}
			for _, r := range []mongoRun{mongoRow, replicasRow} {
				if !sel[rowMongo] && r.db.name == mongoRow.db.name || !sel[rowReplicas] && r.db.name == replicasRow.db.name {
					continue
				}
				if _, err := os.Stat(filepath.Join(r.dir, keyFile)); err != nil {
					t.Errorf("no API key for %s: %v", r.db.name, err)
				}
				store, err := mongo.Open(t.Context(), r.db.uri, r.db.name)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				if err := store.ScanUsers(t.Context(), func(storage.ScannedUser) error { n++; return nil }); err != nil {
					t.Fatal(err)
				}
				store.Close(context.Background())
				if n != r.p.Users {
					t.Errorf("%s holds %d users, want %d", r.db.name, n, r.p.Users)
				}
			}
		})
	}
}
