package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// checkScopeWrites are the calls with a body that a key of scope check may make: the checks
// and their explanation, which read and change nothing. Every GET but key management is open
// to it too. Routes are Gin's patterns.
var checkScopeWrites = map[string]bool{
	"POST /provisions/can_user_access":     true,
	"POST /provisions/can_user_access_all": true,
	"POST /provisions/check_batch":         true,
	"POST /provisions/explain":             true,
}

// keyManagement are the calls that only a key of scope admin may make: an organization's own
// key management, and its SCIM tokens'. A manage key that could make keys could make itself an
// admin key.
var keyManagement = map[string]bool{
	"GET /api_keys":                            true,
	"GET /api_keys/":                           true,
	"POST /api_keys":                           true,
	"DELETE /api_keys/:id":                     true,
	"POST /auth_integration/scim_token/rotate": true,
	"POST /auth_integration/scim_token/revoke": true,
}

// scopeAllows reports whether a key of scope may call route ("METHOD pattern"). A scope it
// does not know allows nothing: a key is never given more than it was meant to have.
func scopeAllows(scope, method, route string) bool {
	call := method + " " + route
	switch scope {
	case "", storage.ScopeAdmin:
		return true
	case storage.ScopeManage:
		return !keyManagement[call]
	case storage.ScopeCheck:
		return checkScopeWrites[call] || method == http.MethodGet && !keyManagement[call]
	}
	return false
}

// authorize refuses, with 403, a call that the scope of the request's API key does not allow.
// It runs after authentication and before the handler reads the body, so that a refused call
// changes nothing and reveals nothing of its body's validity.
func (s *Server) authorize(c *gin.Context) {
	scope := requestOf(c).keyScope
	if !scopeAllows(scope, c.Request.Method, c.FullPath()) {
		s.writeError(c, &Error{Status: http.StatusForbidden, Detail: fmt.Sprintf("This API key's scope (%s) does not allow this call.", scope)})
		return
	}
	c.Next()
}

// apiKeyRequest is the optional body of the calls that make a key.
type apiKeyRequest struct {
	Scope *string `json:"scope" validate:"omitnil,oneof=admin manage check"`
}

// requestedScope reads the scope a new key is asked for. A request with no body, or one that
// names no scope, asks for the default, admin, which is stored as the empty scope that keys
// made before scopes existed have, so that such keys read alike everywhere.
func (s *Server) requestedScope(c *gin.Context) (string, error) {
	if c.Request.ContentLength == 0 {
		return "", nil
	}
	var req apiKeyRequest
	if err := s.bindJSON(c, &req); err != nil {
		return "", err
	}
	if req.Scope == nil {
		return "", nil
	}
	return *req.Scope, nil
}

// shownScope is a key's scope as the API shows it: the empty scope is admin.
func shownScope(scope string) string {
	if scope == "" {
		return storage.ScopeAdmin
	}
	return scope
}

// issueScopedKey makes a new key of scope for the organization, stores its hash under id, and
// returns the key.
func issueScopedKey(ctx context.Context, store storage.OrgStore, id, orgID, scope string, now time.Time) (string, error) {
	key := apikey.Generate()
	rec := keyRecord(id, orgID, key, now)
	rec.Scope = scope
	if err := store.CreateAPIKey(ctx, rec); err != nil {
		return "", fmt.Errorf("create API key for organization %s: %w", orgID, err)
	}
	return key, nil
}

// apiKeyJSON is an API key as its organization sees it: never the key, nor its hash.
type apiKeyJSON struct {
	ID        string `json:"id"`
	Prefix    string `json:"prefix"`
	Scope     string `json:"scope"`
	CreatedAt string `json:"created_at"`
}

// listAPIKeys answers the caller's organization's keys, oldest first.
func (s *Server) listAPIKeys(c *gin.Context) {
	keys, err := s.store.ListAPIKeys(c.Request.Context(), orgID(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := make([]apiKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = apiKeyJSON{ID: k.ID, Prefix: k.Prefix, Scope: shownScope(k.Scope), CreatedAt: timestamp(k.CreatedAt)}
	}
	c.JSON(http.StatusOK, gin.H{"api_keys": out})
}

// createOrgAPIKey adds a key to the caller's organization; the key is shown only in this
// response.
func (s *Server) createOrgAPIKey(c *gin.Context) {
	scope, err := s.requestedScope(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	id := uid.New()
	key, err := issueScopedKey(c.Request.Context(), s.store, id, orgID(c), scope, s.clock())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "api_key": key, "scope": shownScope(scope)})
}

// revokeOrgAPIKey deletes a key of the caller's organization; a key of another organization is
// not found. This replica refuses the key at once, others within apikey.TTL.
func (s *Server) revokeOrgAPIKey(c *gin.Context) {
	ctx, id := c.Request.Context(), c.Param("id")
	k, err := s.store.GetAPIKey(ctx, id)
	if err == nil && k.OrgID != orgID(c) {
		err = storage.ErrNotFound
	}
	if err == nil {
		err = s.store.DeleteAPIKey(ctx, id)
	}
	if err != nil {
		s.writeError(c, notFound(err, "API key not found."))
		return
	}
	s.keys.Forget(id)
	c.JSON(http.StatusOK, gin.H{"message": "API key revoked"})
}

// accessRoutes serves groups, group grants, the batch check, the reverse lookup, where a
// user's access comes from, and the organization's own key management, on the authenticated
// group a.
func (s *Server) accessRoutes(a *gin.RouterGroup) {
	list := func(path string, h gin.HandlerFunc) { withSlash(a, http.MethodGet, path, h) }
	a.POST("/provisions/add_to_group", s.addToGroup)
	a.POST("/provisions/remove_from_group", s.removeFromGroup)
	a.POST("/provisions/check_batch", s.checkBatch)
	a.GET("/provisions/users_with_access", s.usersWithAccess)
	a.GET("/users/:id/access", s.userAccess)

	a.POST("/groups/create", s.createGroup)
	a.POST("/groups/add_member", s.addGroupMember)
	a.POST("/groups/remove_member", s.removeGroupMember)
	a.POST("/groups/remove", s.removeGroup)
	list("/groups/list", s.listGroups)

	list("/api_keys", s.listAPIKeys)
	a.POST("/api_keys", s.createOrgAPIKey)
	a.DELETE("/api_keys/:id", s.revokeOrgAPIKey)
}
