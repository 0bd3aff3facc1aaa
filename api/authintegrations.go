package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// authIntegrationJSON is the spec's authentication integration.
type authIntegrationJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Metadata string `json:"metadata"`
}

func authIntegrationOf(a storage.AuthIntegration) authIntegrationJSON {
	return authIntegrationJSON{ID: a.ID, Name: a.Name, Metadata: a.Metadata}
}

type createAuthIntegrationRequest struct {
	Name     string `json:"name" validate:"required,max=256"`
	Metadata string `json:"metadata" validate:"max=4096"`
	// Type is "import" (the default: users come through POST /users/import) or "scim" (an
	// identity provider pushes them through /scim/v2/ with the token answered once).
	Type string `json:"type" validate:"omitempty,oneof=import scim"`
}

func (s *Server) createAuthIntegration(c *gin.Context) {
	var req createAuthIntegrationRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	if req.Type == storage.IntegrationSCIM {
		s.createSCIMIntegration(c, req.Name, req.Metadata)
		return
	}
	a := storage.AuthIntegration{OrgID: orgID(c), ID: uid.New(), Name: req.Name, Metadata: req.Metadata, Type: storage.IntegrationImport, CreatedAt: s.clock()}
	if err := s.store.CreateAuthIntegration(c.Request.Context(), a); err != nil {
		s.writeError(c, conflict(err, "An auth integration with this name already exists."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"auth_integration": authIntegrationOf(a)})
}

func (s *Server) listAuthIntegrations(c *gin.Context) {
	as, err := s.store.ListAuthIntegrations(c.Request.Context(), orgID(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := make([]authIntegrationJSON, len(as))
	for i, a := range as {
		out[i] = authIntegrationOf(a)
	}
	c.JSON(http.StatusOK, gin.H{"auth_integrations": out})
}
