package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/storage"
)

// keyTTL is how long a key found in the store is trusted without asking again. It bounds how
// long a key revoked on another replica keeps working, which must stay under one second.
const keyTTL = 500 * time.Millisecond

// authenticate resolves the bearer API key to its organization, or answers 401.
func (s *Server) authenticate(c *gin.Context) {
	token, ok := apikey.FromHeader(c.GetHeader("Authorization"))
	s.authenticateKey(c, token, ok)
}

// authenticateKey resolves the API key token, which the request sent if ok, to its
// organization, or answers 401.
func (s *Server) authenticateKey(c *gin.Context, token string, ok bool) {
	if !ok {
		s.writeError(c, errNotAuthenticated)
		return
	}
	r := requestOf(c)
	key, err := s.keys.lookup(c.Request.Context(), apikey.Sum(token), s.nowAt(r.start))
	if errors.Is(err, storage.ErrNotFound) {
		err = errNotAuthenticated
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	r.orgID, r.keyID, r.keyScope = key.OrgID, key.ID, key.Scope
	r.setCaller(storage.Actor{Kind: storage.ActorAPIKey, ID: key.ID})
	c.Next()
}

// adminOnly guards the admin API: 404 when it is off, 401 without the admin token.
func (s *Server) adminOnly(c *gin.Context) {
	if s.adminToken == "" {
		s.writeError(c, errNotFound)
		return
	}
	token, ok := apikey.FromHeader(c.GetHeader("Authorization"))
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.adminToken)) != 1 {
		s.writeError(c, errNotAuthenticated)
		return
	}
	requestOf(c).setCaller(storage.Actor{Kind: storage.ActorAdmin})
	c.Next()
}

// keyCache remembers recently used API keys by hash for keyTTL, so that the check path does not
// read the store on every request.
type keyCache struct {
	store storage.OrgStore
	mu    sync.RWMutex
	keys  map[[sha256.Size]byte]cachedKey // by the key's digest, apikey.Sum
}

type cachedKey struct {
	key     storage.APIKey
	expires time.Time
}

func newKeyCache(store storage.OrgStore) *keyCache {
	return &keyCache{store: store, keys: map[[sha256.Size]byte]cachedKey{}}
}

// lookup finds the key whose digest is sum, in the cache or the store (by its hexadecimal
// form, apikey.Hash, which only a miss makes), at time now.
func (kc *keyCache) lookup(ctx context.Context, sum [sha256.Size]byte, now time.Time) (storage.APIKey, error) {
	kc.mu.RLock()
	e, ok := kc.keys[sum]
	kc.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.key, nil
	}
	key, err := kc.store.APIKeyByHash(ctx, hex.EncodeToString(sum[:]))
	if err != nil {
		kc.mu.Lock()
		delete(kc.keys, sum)
		kc.mu.Unlock()
		return storage.APIKey{}, fmt.Errorf("look up API key: %w", err)
	}
	kc.mu.Lock()
	if len(kc.keys) > 10_000 {
		for h, e := range kc.keys {
			if !now.Before(e.expires) {
				delete(kc.keys, h)
			}
		}
	}
	kc.keys[sum] = cachedKey{key: key, expires: now.Add(keyTTL)}
	kc.mu.Unlock()
	return key, nil
}

// forget drops a revoked key at once, so that this replica refuses it on the next request.
func (kc *keyCache) forget(keyID string) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	for h, e := range kc.keys {
		if e.key.ID == keyID {
			delete(kc.keys, h)
		}
	}
}
