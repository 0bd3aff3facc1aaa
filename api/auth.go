package api

import (
	"crypto/subtle"
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/storage"
)

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
	key, err := s.keys.Lookup(c.Request.Context(), apikey.Sum(token), s.nowAt(r.start))
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
