package bolt_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
	"github.com/grantry/grantry/storage/storagetest"
)

func TestStore(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return bolttest.Open(t) })
}

func TestOpenCreatesDirectoryAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "nested", "grantry.db")
	s, err := bolt.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close(t.Context())
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Dir(path), 0o700 | os.ModeDir},
		{path, 0o600},
	} {
		info, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != c.mode {
			t.Errorf("mode of %s = %v, want %v", c.path, info.Mode(), c.mode)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "grantry.db")
	s, err := bolt.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	org := storage.Org{ID: "org-1", Name: "acme", CreatedAt: time.UnixMilli(1_700_000_000_123).UTC()}
	if err := s.CreateOrg(ctx, org); err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = bolt.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer s.Close(ctx)
	got, err := s.OrgByName(ctx, "acme")
	if err != nil {
		t.Fatalf("OrgByName after reopening: %v", err)
	}
	if got != org {
		t.Errorf("OrgByName after reopening = %+v, want %+v", got, org)
	}
	// The indexes survive too: the name is still taken.
	if err := s.CreateOrg(ctx, storage.Org{ID: "org-2", Name: "acme"}); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("CreateOrg with a taken name after reopening: error = %v, want ErrConflict", err)
	}
}

// TestOpenDropsUnusedBuckets: a file written by a version that indexed decisions loses those
// indexes on Open, and keeps everything else.
func TestOpenDropsUnusedBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grantry.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"decisions_by_user", "decisions_by_svc_id", "decisions"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			if err := b.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		for _, name := range []string{"decisions_by_user", "decisions_by_svc_id"} {
			if tx.Bucket([]byte(name)) != nil {
				t.Errorf("bucket %s is still there", name)
			}
		}
		if b := tx.Bucket([]byte("decisions")); b == nil || string(b.Get([]byte("k"))) != "v" {
			t.Error("the decisions bucket lost its contents")
		}
		return nil
	})
}

// TestOpenInUse checks that a second Open of a file that is open fails soon with a message that
// says why. bbolt's lock is a flock on the file, which conflicts between two opens of one process
// just as between two processes.
func TestOpenInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grantry.db")
	s, err := bolt.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close(t.Context())

	start := time.Now()
	second, err := bolt.Open(t.Context(), path)
	elapsed := time.Since(start)
	if err == nil {
		second.Close(t.Context())
		t.Fatal("second Open of an open file succeeded")
	}
	if !strings.Contains(err.Error(), "in use") || !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("second Open: error = %v, want one that says the file is in use and wraps ErrUnavailable", err)
	}
	// It waits lockTimeout, a second; the bound leaves room for a loaded machine and still
	// tells a timeout from bbolt's default, waiting forever.
	if elapsed > 20*time.Second {
		t.Errorf("second Open took %v, want about a second", elapsed)
	}
	// The first store is unharmed.
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping of the first store: %v", err)
	}
}

func TestPingAfterClose(t *testing.T) {
	s, err := bolt.Open(t.Context(), filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Ping after Close: error = %v, want ErrUnavailable", err)
	}
}

// BenchmarkGrantParallel measures new grants a second with 32 concurrent writers, the load the
// embedded store must sustain (5,000 a second). Every grant is a new pair, so each one writes.
func BenchmarkGrantParallel(b *testing.B) {
	const users, resources = 500, 500
	ctx := b.Context()
	s := bolttest.Open(b)
	if err := s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "directory", Type: "import"}); err != nil {
		b.Fatal(err)
	}
	items := make([]storage.UserImport, users)
	for i := range items {
		items[i] = storage.UserImport{ID: fmt.Sprintf("u-%d", i), Email: fmt.Sprintf("u-%d@example.com", i)}
	}
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", items, time.Now().UTC().Truncate(time.Millisecond)); err != nil {
		b.Fatal(err)
	}
	for n := range resources {
		r := storage.Resource{
			OrgID: "org-1", ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Kind: storage.KindModel,
			Source: storage.SourceCustom, Name: fmt.Sprintf("model-%d", n),
		}
		if err := s.CreateResource(ctx, r); err != nil {
			b.Fatal(err)
		}
	}

	const writers = 32
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((writers + procs - 1) / procs)
	var next atomic.Int64
	now := time.Now().UTC().Truncate(time.Millisecond)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// Past users*resources grants, pairs repeat and the grant changes nothing.
			i := int(next.Add(1)-1) % (users * resources)
			g := storage.Grant{
				OrgID: "org-1", UserID: fmt.Sprintf("u-%d", i%users),
				ResourceID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i/users), CreatedAt: now,
			}
			if err := storage.AddGrant(ctx, s, g); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
}

// BenchmarkInsertDecisions measures what storing the decision log costs, in CPU a decision
// (the process's user and system time, fsyncs included, over the decisions stored), for
// batches of the sizes the decision log writes: 4,000 (decisionlog's BatchSize, a full batch,
// as under make bench's load) and 500 (a second's worth at a slower flow).
func BenchmarkInsertDecisions(b *testing.B) {
	for _, size := range []int{500, 4000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := bolttest.Open(b)
			var ids storage.EntryIDs
			batch := make([]storage.Decision, size)
			for i := range batch {
				batch[i] = storage.Decision{OrgID: "default", RequestID: "b57b860b-6a4e-4c2f-9d3e-0123456789ab",
					APIKeyID: "bootstrap", Endpoint: "can_user_access", UserID: fmt.Sprintf("user-%06d", i),
					ResourceIDs: []string{fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}, Allowed: i%2 == 0,
					PolicyRevision: "133edd4b", Duration: 312 * time.Microsecond}
			}
			before, stored, pages := processCPU(b), 0, s.PageBytes()
			for b.Loop() {
				now := time.Now()
				for i := range batch {
					batch[i].ID, batch[i].Time = ids.New(now), now
				}
				if err := s.InsertDecisions(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
				stored += size
			}
			b.ReportMetric(float64(processCPU(b)-before)/float64(stored), "cpu-ns/decision")
			b.ReportMetric(float64(s.PageBytes()-pages)/float64(stored), "written-bytes/decision")
			b.ReportMetric(float64(s.DecisionBytes())/float64(stored), "stored-bytes/decision")
		})
	}
}

// processCPU is the user and system CPU time the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
