package apikey_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/storage"
)

// countingFinder is a store of keys by hash that counts its reads.
type countingFinder struct {
	keys  map[string]storage.APIKey
	reads int
}

func (f *countingFinder) APIKeyByHash(_ context.Context, hash string) (storage.APIKey, error) {
	f.reads++
	if k, ok := f.keys[hash]; ok {
		return k, nil
	}
	return storage.APIKey{}, storage.ErrNotFound
}

// TestCache: a key found is trusted for TTL without reading the store again; after TTL, after
// Forget, and after the store lost it, the store is asked, and a key it no longer has is
// refused.
func TestCache(t *testing.T) {
	const token = "gry_0000000000000000000000000000000000000000001"
	sum := apikey.Sum(token)
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	type step struct {
		name      string
		at        time.Duration // since start
		do        func(f *countingFinder, c *apikey.Cache)
		wantErr   error
		wantReads int // the store's reads so far
	}
	steps := []step{
		{name: "first use reads the store", wantReads: 1},
		{name: "within TTL it does not", at: apikey.TTL - time.Millisecond, wantReads: 1},
		{name: "at TTL it reads again", at: apikey.TTL, wantReads: 2},
		{name: "Forget makes the next use read", at: apikey.TTL, do: func(_ *countingFinder, c *apikey.Cache) { c.Forget("key-1") }, wantReads: 3},
		{name: "a key the store lost is refused once TTL is over", at: 3 * apikey.TTL,
			do: func(f *countingFinder, _ *apikey.Cache) { delete(f.keys, apikey.Hash(token)) }, wantErr: storage.ErrNotFound, wantReads: 4},
		{name: "and is not remembered", at: 3 * apikey.TTL, wantErr: storage.ErrNotFound, wantReads: 5},
	}
	f := &countingFinder{keys: map[string]storage.APIKey{apikey.Hash(token): {ID: "key-1", OrgID: "o"}}}
	c := apikey.NewCache(f)
	for _, s := range steps {
		if s.do != nil {
			s.do(f, c)
		}
		k, err := c.Lookup(context.Background(), sum, start.Add(s.at))
		if !errors.Is(err, s.wantErr) || (err == nil && k.ID != "key-1") {
			t.Errorf("%s: Lookup = %+v, %v; want key-1 or %v", s.name, k, err, s.wantErr)
		}
		if f.reads != s.wantReads {
			t.Errorf("%s: %d reads of the store, want %d", s.name, f.reads, s.wantReads)
		}
	}
}
