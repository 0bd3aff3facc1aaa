package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// scimAccess is what a new SCIM integration's provider needs: where to send its requests (a
// path: prefix it with Grantry's own URL) and the bearer token, shown this once.
type scimAccess struct {
	BaseURL string `json:"base_url"`
	Token   string `json:"token"`
}

// newSCIMToken makes a token for the organization's integration, and the record that keeps
// its hash.
func newSCIMToken(orgID, integrationID string, now time.Time) (string, storage.SCIMToken) {
	token := apikey.GenerateSCIM()
	return token, storage.SCIMToken{
		ID: uid.New(), OrgID: orgID, IntegrationID: integrationID, Prefix: apikey.Display(token), Hash: apikey.Hash(token), CreatedAt: now,
	}
}

// createSCIMIntegration creates an integration of type scim together with its token, and
// answers the integration as POST /auth_integration/create always does, plus the scim object.
func (s *Server) createSCIMIntegration(c *gin.Context, name, metadata string) {
	now := s.clock()
	a := storage.AuthIntegration{OrgID: orgID(c), ID: uid.New(), Name: name, Metadata: metadata, Type: storage.IntegrationSCIM, CreatedAt: now}
	token, t := newSCIMToken(a.OrgID, a.ID, now)
	if err := s.store.CreateSCIMIntegration(c.Request.Context(), a, t); err != nil {
		s.writeError(c, conflict(err, "An auth integration with this name already exists."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"auth_integration": authIntegrationOf(a), "scim": scimAccess{BaseURL: scimBasePath, Token: token}})
}

// authIntegrationRef names one of the caller's integrations.
type authIntegrationRef struct {
	AuthIntegrationID string `json:"auth_integration_id" validate:"required,max=256"`
}

// errSCIMIntegrationNotFound answers a token operation on an integration the organization does
// not have, or one that is not of type scim and so has no token.
var errSCIMIntegrationNotFound = &Error{Status: http.StatusNotFound, Detail: "SCIM integration not found."}

// rotateSCIMToken gives the caller's SCIM integration a new token, shown only in this answer;
// the old one is refused from then on, on every replica.
func (s *Server) rotateSCIMToken(c *gin.Context) {
	var req authIntegrationRef
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	s.answerRotation(c, orgID(c), req.AuthIntegrationID)
}

// revokeSCIMToken leaves the caller's SCIM integration without a token, until one is rotated
// in: the provider is refused from then on, on every replica.
func (s *Server) revokeSCIMToken(c *gin.Context) {
	var req authIntegrationRef
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	s.answerRevocation(c, orgID(c), req.AuthIntegrationID)
}

// removeAuthIntegration deletes the caller's integration with everything that came through it:
// its SCIM token, its users (with their grants) and its groups.
func (s *Server) removeAuthIntegration(c *gin.Context) {
	var req authIntegrationRef
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	if _, err := s.store.DeleteAuthIntegration(c.Request.Context(), orgID(c), req.AuthIntegrationID, s.clock()); err != nil {
		s.writeError(c, notFound(err, "Auth integration not found."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"message": "Auth integration deleted successfully"})
}

// adminRotateSCIMToken and adminRevokeSCIMToken are the same for the operator, who names the
// organization.
func (s *Server) adminRotateSCIMToken(c *gin.Context) {
	s.answerRotation(c, c.Param("id"), c.Param("integration_id"))
}

func (s *Server) adminRevokeSCIMToken(c *gin.Context) {
	s.answerRevocation(c, c.Param("id"), c.Param("integration_id"))
}

func (s *Server) answerRotation(c *gin.Context, org, integrationID string) {
	ctx := c.Request.Context()
	token, t := newSCIMToken(org, integrationID, s.clock())
	if err := setSCIMToken(ctx, s.store, org, integrationID, &t); err != nil {
		s.writeError(c, err)
		return
	}
	a, err := s.store.GetAuthIntegration(ctx, org, integrationID)
	if err != nil {
		s.writeError(c, notFound(err, errSCIMIntegrationNotFound.Detail))
		return
	}
	c.JSON(http.StatusOK, gin.H{"auth_integration": authIntegrationOf(a), "scim": scimAccess{BaseURL: scimBasePath, Token: token}})
}

func (s *Server) answerRevocation(c *gin.Context, org, integrationID string) {
	if err := setSCIMToken(c.Request.Context(), s.store, org, integrationID, nil); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"message": "SCIM token revoked"})
}

// setSCIMToken replaces (or, t nil, removes) the integration's token. scimAuthenticate reads
// the store on every request, so the old token is refused at once on every replica.
func setSCIMToken(ctx context.Context, store storage.SCIMStore, org, integrationID string, t *storage.SCIMToken) error {
	_, err := store.SetSCIMToken(ctx, org, integrationID, t)
	if errors.Is(err, storage.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Detail: errSCIMIntegrationNotFound.Detail, Err: err}
	}
	return err
}
