// Package bolttest opens embedded stores for tests.
package bolttest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/grantry/grantry/storage/bolt"
)

// Open opens an embedded store on a new file in tb's temporary folder, and closes it when tb
// ends, failing tb if that fails.
func Open(tb testing.TB) *bolt.Store {
	tb.Helper()
	s, err := bolt.Open(tb.Context(), filepath.Join(tb.TempDir(), "grantry.db"))
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
