package apikey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/grantry/grantry/storage"
)

// TTL is how long a Cache trusts a key found in the store without asking again. It bounds how
// long a key revoked on another replica keeps working, which must stay under one second.
const TTL = 500 * time.Millisecond

// maxCached is how many keys a Cache holds before a lookup sweeps out the expired ones.
const maxCached = 10_000

// Finder finds a stored key by its hash (Hash), as storage.OrgStore does.
type Finder interface {
	APIKeyByHash(ctx context.Context, hash string) (storage.APIKey, error)
}

// Cache remembers recently used keys by their digest (Sum) for TTL, so that a request does not
// read the store for its key. It is safe for concurrent use.
type Cache struct {
	store Finder
	mu    sync.RWMutex
	keys  map[[sha256.Size]byte]cached
}

type cached struct {
	key     storage.APIKey
	expires time.Time
}

// NewCache returns an empty cache over store.
func NewCache(store Finder) *Cache {
	return &Cache{store: store, keys: map[[sha256.Size]byte]cached{}}
}

// Lookup finds the key whose digest is sum, in the cache or the store (by its hexadecimal form,
// Hash, which only a miss makes), at time now. A key the store no longer has is forgotten.
func (c *Cache) Lookup(ctx context.Context, sum [sha256.Size]byte, now time.Time) (storage.APIKey, error) {
	c.mu.RLock()
	e, ok := c.keys[sum]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.key, nil
	}
	key, err := c.store.APIKeyByHash(ctx, hex.EncodeToString(sum[:]))
	if err != nil {
		c.mu.Lock()
		delete(c.keys, sum)
		c.mu.Unlock()
		return storage.APIKey{}, fmt.Errorf("look up API key: %w", err)
	}
	c.mu.Lock()
	if len(c.keys) > maxCached {
		for h, e := range c.keys {
			if !now.Before(e.expires) {
				delete(c.keys, h)
			}
		}
	}
	c.keys[sum] = cached{key: key, expires: now.Add(TTL)}
	c.mu.Unlock()
	return key, nil
}

// Forget drops a revoked key at once, so that this replica refuses it on the next request.
func (c *Cache) Forget(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.keys {
		if e.key.ID == keyID {
			delete(c.keys, h)
		}
	}
}
