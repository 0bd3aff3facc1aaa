package bolt_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
	"github.com/grantry/grantry/storage/storagetest"
)

func TestLoader(t *testing.T) {
	storagetest.RunLoader(t, func(t *testing.T) (storage.Store, func(int) storage.Loader) {
		s := bolttest.Open(t)
		return s, func(batch int) storage.Loader { return s.NewLoader(batch) }
	})
}

// TestLoaderFlushWithNothingQueued checks that an empty Flush commits nothing and fails nothing.
func TestLoaderFlushWithNothingQueued(t *testing.T) {
	s := bolttest.Open(t)
	if err := s.NewLoader(0).Flush(t.Context()); err != nil {
		t.Errorf("Flush of an empty Loader: %v", err)
	}
}

// TestLoaderOnClosedStore checks that a failed commit is reported, wrapping ErrUnavailable.
func TestLoaderOnClosedStore(t *testing.T) {
	s, err := bolt.Open(t.Context(), filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	l := s.NewLoader(0)
	g := storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: "00000000-0000-4000-8000-000000000001", CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}
	if err := l.AddGrant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Flush on a closed store: error = %v, want ErrUnavailable", err)
	}
}
