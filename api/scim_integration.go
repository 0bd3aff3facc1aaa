package api

import (
	"net/http"

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

// createSCIMIntegration creates an integration of type scim together with its token, and
// answers the integration as POST /auth_integration/create always does, plus the scim object.
func (s *Server) createSCIMIntegration(c *gin.Context, name, metadata string) {
	now := s.clock()
	a := storage.AuthIntegration{OrgID: orgID(c), ID: uid.New(), Name: name, Metadata: metadata, Type: storage.IntegrationSCIM, CreatedAt: now}
	token := apikey.GenerateSCIM()
	t := storage.SCIMToken{
		ID: uid.New(), OrgID: a.OrgID, IntegrationID: a.ID, Prefix: apikey.Display(token), Hash: apikey.Hash(token), CreatedAt: now,
	}
	if err := s.store.CreateSCIMIntegration(c.Request.Context(), a, t); err != nil {
		s.writeError(c, conflict(err, "An auth integration with this name already exists."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"auth_integration": authIntegrationOf(a), "scim": scimAccess{BaseURL: scimBasePath, Token: token}})
}
