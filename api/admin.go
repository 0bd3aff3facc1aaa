package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

type orgJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type createOrgRequest struct {
	Name string `json:"name" validate:"required,max=256"`
}

// createOrg creates an organization with its first API key, shown only in this response.
func (s *Server) createOrg(c *gin.Context) {
	var req createOrgRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, now := c.Request.Context(), s.clock()
	org := storage.Org{ID: uid.New(), Name: req.Name, CreatedAt: now}
	if err := s.store.CreateOrg(ctx, org); err != nil {
		s.writeError(c, conflict(err, "An organization with this name already exists."))
		return
	}
	key, err := issueScopedKey(ctx, s.store, uid.New(), org.ID, "", now)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": org.ID, "name": org.Name, "api_key": key})
}

func (s *Server) listOrgs(c *gin.Context) {
	orgs, err := s.store.ListOrgs(c.Request.Context())
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := make([]orgJSON, len(orgs))
	for i, o := range orgs {
		out[i] = orgJSON{ID: o.ID, Name: o.Name}
	}
	c.JSON(http.StatusOK, gin.H{"orgs": out})
}

// createAPIKey adds a key to an organization, of the scope the optional body names (admin by
// default); the key is shown only in this response.
func (s *Server) createAPIKey(c *gin.Context) {
	ctx := c.Request.Context()
	if _, err := s.store.GetOrg(ctx, c.Param("id")); err != nil {
		s.writeError(c, notFound(err, "Organization not found."))
		return
	}
	scope, err := s.requestedScope(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	id := uid.New()
	key, err := issueScopedKey(ctx, s.store, id, c.Param("id"), scope, s.clock())
	if err != nil {
		s.writeError(c, notFound(err, "Organization not found."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "api_key": key, "scope": shownScope(scope)})
}

// revokeAPIKey deletes a key. This replica refuses it at once; others within apikey.TTL.
func (s *Server) revokeAPIKey(c *gin.Context) {
	id := c.Param("id")
	if err := s.store.DeleteAPIKey(c.Request.Context(), id); err != nil {
		s.writeError(c, notFound(err, "API key not found."))
		return
	}
	s.keys.Forget(id)
	c.JSON(http.StatusOK, gin.H{"message": "API key revoked"})
}

func keyRecord(id, orgID, key string, now time.Time) storage.APIKey {
	return storage.APIKey{ID: id, OrgID: orgID, Prefix: apikey.Display(key), Hash: apikey.Hash(key), CreatedAt: now}
}

// DefaultOrg is the name of the organization that Bootstrap creates.
const DefaultOrg = "default"

// bootstrapKeyID is the id of the key record that holds GRANTRY_BOOTSTRAP_API_KEY.
const bootstrapKeyID = "bootstrap"

// ErrBootstrapKeyRevoked is Bootstrap's answer for a bootstrap key that was revoked (or
// replaced by another): it stays revoked, and the service runs without it.
var ErrBootstrapKeyRevoked = errors.New("GRANTRY_BOOTSTRAP_API_KEY was revoked and stays revoked: requests with it are refused; unset it, or set a new key")

// Bootstrap makes sure the service can be used at once. With bootstrapKey set, organization
// "default" exists and accepts that key; setting another key replaces (and revokes) the
// previous bootstrap key. A bootstrap key that was revoked is never stored again: Bootstrap
// then changes nothing and returns ErrBootstrapKeyRevoked. With bootstrapKey empty and no API
// key at all, it creates organization "default" with a new key and returns that key, for the
// caller to show once; otherwise it returns "".
func Bootstrap(ctx context.Context, store storage.OrgStore, bootstrapKey string, now time.Time) (string, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if bootstrapKey == "" {
		n, err := store.CountAPIKeys(ctx)
		if err != nil || n > 0 {
			return "", err
		}
		org, err := ensureOrg(ctx, store, DefaultOrg, now)
		if err != nil {
			return "", err
		}
		return issueScopedKey(ctx, store, uid.New(), org.ID, "", now)
	}
	_, err := store.APIKeyByHash(ctx, apikey.Hash(bootstrapKey))
	if errors.Is(err, storage.ErrRevoked) {
		return "", ErrBootstrapKeyRevoked
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return "", err // nil when the key is already in place
	}
	org, err := ensureOrg(ctx, store, DefaultOrg, now)
	if err != nil {
		return "", err
	}
	if err := store.DeleteAPIKey(ctx, bootstrapKeyID); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("replace bootstrap API key: %w", err)
	}
	err = store.CreateAPIKey(ctx, keyRecord(bootstrapKeyID, org.ID, bootstrapKey, now))
	if errors.Is(err, storage.ErrRevoked) {
		return "", ErrBootstrapKeyRevoked // revoked by another replica meanwhile
	}
	if err != nil && !errors.Is(err, storage.ErrConflict) {
		return "", fmt.Errorf("store bootstrap API key: %w", err)
	}
	return "", nil
}

// ensureOrg returns the organization with this name, creating it if need be. Another replica
// creating it at the same moment is not an error.
func ensureOrg(ctx context.Context, store storage.OrgStore, name string, now time.Time) (storage.Org, error) {
	org, err := store.OrgByName(ctx, name)
	if !errors.Is(err, storage.ErrNotFound) {
		return org, err
	}
	org = storage.Org{ID: uid.New(), Name: name, CreatedAt: now}
	if err := store.CreateOrg(ctx, org); errors.Is(err, storage.ErrConflict) {
		return store.OrgByName(ctx, name)
	} else if err != nil {
		return org, fmt.Errorf("create organization %s: %w", name, err)
	}
	return org, nil
}
