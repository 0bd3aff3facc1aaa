package api

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/grantry/grantry/storage/bolt"
)

// tempStore opens an embedded store in a new temporary folder, closed when tb ends.
func tempStore(tb testing.TB) *bolt.Store {
	tb.Helper()
	store, err := bolt.Open(context.Background(), filepath.Join(tb.TempDir(), "grantry.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close(context.Background()) })
	return store
}
