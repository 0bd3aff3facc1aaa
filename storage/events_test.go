package storage_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

func TestEntryIDs(t *testing.T) {
	var a, b storage.EntryIDs
	times := []time.Time{
		time.Unix(0, 0), time.UnixMilli(1), time.UnixMilli(1_700_000_000_000), time.UnixMilli(1_700_000_000_000),
		time.UnixMilli(1_700_000_000_001), time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	var ids []string
	for _, at := range times {
		id := a.New(at)
		if err := storage.CheckID(id, at); err != nil {
			t.Fatalf("New(%v) = %q: %v", at, id, err)
		}
		if want := fmt.Sprintf("%012x-", at.UnixMilli()); storage.IDTimePrefix(at) != want {
			t.Errorf("IDTimePrefix(%v) = %q, want %q", at, storage.IDTimePrefix(at), want)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids of growing times, made in order, do not sort in order: %q", ids)
	}
	if id := b.New(times[2]); slices.Contains(ids, id) || id[len(id)-8:] == ids[0][len(ids[0])-8:] {
		t.Errorf("a second EntryIDs made %q, sharing the tail of %q", id, ids[0])
	}
	if err := storage.CheckID(ids[2], times[4]); err == nil {
		t.Errorf("CheckID accepted %q for another time", ids[2])
	}
}
