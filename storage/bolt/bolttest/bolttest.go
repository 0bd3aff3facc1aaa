// Package bolttest opens embedded stores for tests.
package bolttest

import (
	"context"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage/bolt"
)

// Open opens an embedded store on a new file in tb's temporary folder, as the service opens
// it, and closes it when tb ends, failing tb if that fails.
func Open(tb testing.TB) *bolt.Store {
	tb.Helper()
	return open(tb)
}

// OpenNoSync is Open for tests of what is built on the store, where durability is not what is
// tested: the store does not wait for the disk at each commit, which would be most of the time
// of tests that write much, and of the CPU that their concurrent readers spend meanwhile.
func OpenNoSync(tb testing.TB) *bolt.Store {
	tb.Helper()
	return open(tb, func(o *bbolt.Options) { o.NoSync = true })
}

func open(tb testing.TB, opts ...bolt.Option) *bolt.Store {
	tb.Helper()
	s, err := bolt.Open(tb.Context(), filepath.Join(tb.TempDir(), "grantry.db"), opts...)
	if err != nil {
		tb.Fatalf("open the store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			tb.Errorf("close the store: %v", err)
		}
	})
	return s
}
