package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/scim"
)

// The discovery endpoints of RFC 7644 §4 tell a provider what Grantry supports.

func (s *Server) scimServiceProviderConfig(c *gin.Context) {
	s.scimJSON(c, http.StatusOK, gin.H{
		"schemas":        []string{scim.ServiceProviderConfigSchema},
		"patch":          gin.H{"supported": true},
		"bulk":           gin.H{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":         gin.H{"supported": true, "maxResults": scimMaxResults},
		"changePassword": gin.H{"supported": false},
		"sort":           gin.H{"supported": false},
		"etag":           gin.H{"supported": true},
		"authenticationSchemes": []gin.H{{
			"type":        "oauthbearertoken",
			"name":        "OAuth Bearer Token",
			"description": "The SCIM token Grantry showed once when the SCIM integration was created, as Authorization: Bearer <token>.",
			"specUri":     "https://www.rfc-editor.org/info/rfc6750",
			"primary":     true,
		}},
		"meta": gin.H{
			"resourceType": "ServiceProviderConfig",
			"location":     scimLocation(c, "/ServiceProviderConfig"),
		},
	})
}

func resourceTypeJSON(c *gin.Context, rt *scim.ResourceType) gin.H {
	exts := make([]gin.H, len(rt.Extensions))
	for i, e := range rt.Extensions {
		exts[i] = gin.H{"schema": e.ID, "required": false}
	}
	return gin.H{
		"schemas":          []string{scim.ResourceTypeSchema},
		"id":               rt.Name,
		"name":             rt.Name,
		"endpoint":         rt.Endpoint,
		"description":      rt.Description,
		"schema":           rt.Schema.ID,
		"schemaExtensions": exts,
		"meta":             gin.H{"resourceType": "ResourceType", "location": scimLocation(c, "/ResourceTypes/"+rt.Name)},
	}
}

func (s *Server) scimResourceTypes(c *gin.Context) {
	var out []any
	for _, rt := range scim.ResourceTypes() {
		out = append(out, resourceTypeJSON(c, rt))
	}
	s.scimJSON(c, http.StatusOK, listResponse{
		Schemas: []string{scim.ListResponseSchema}, TotalResults: len(out), StartIndex: 1, ItemsPerPage: len(out), Resources: out,
	})
}

func (s *Server) scimResourceType(c *gin.Context) {
	for _, rt := range scim.ResourceTypes() {
		if rt.Name == c.Param("id") {
			s.scimJSON(c, http.StatusOK, resourceTypeJSON(c, rt))
			return
		}
	}
	s.writeError(c, scimNotFound("ResourceType", c.Param("id"), nil))
}

func schemaJSON(c *gin.Context, sc *scim.Schema) gin.H {
	return gin.H{
		"schemas":     []string{scim.SchemaSchema},
		"id":          sc.ID,
		"name":        sc.Name,
		"description": sc.Description,
		"attributes":  sc.Attributes,
		"meta":        gin.H{"resourceType": "Schema", "location": scimLocation(c, "/Schemas/"+sc.ID)},
	}
}

func (s *Server) scimSchemas(c *gin.Context) {
	var out []any
	for _, sc := range scim.Schemas() {
		out = append(out, schemaJSON(c, sc))
	}
	s.scimJSON(c, http.StatusOK, listResponse{
		Schemas: []string{scim.ListResponseSchema}, TotalResults: len(out), StartIndex: 1, ItemsPerPage: len(out), Resources: out,
	})
}

func (s *Server) scimSchema(c *gin.Context) {
	sc := scim.SchemaByID(c.Param("id"))
	if sc == nil {
		s.writeError(c, scimNotFound("Schema", c.Param("id"), nil))
		return
	}
	s.scimJSON(c, http.StatusOK, schemaJSON(c, sc))
}
