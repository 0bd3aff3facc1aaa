package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// FastAPI answers list paths with and without the trailing slash; so do we, without redirects.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.Use(s.requestID, s.accessLog, s.recoverPanic, s.limitBody, s.deadline)
	r.NoRoute(func(c *gin.Context) { s.writeError(c, errNotFound) })
	r.NoMethod(func(c *gin.Context) { s.writeError(c, errMethodNotAllowed) })

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", s.serveMetrics)
	r.GET("/openapi.json", s.serveOpenAPI)
	docs := newDocs()
	r.GET("/docs", docs.servePage)
	r.GET("/docs/:asset", s.serveDocsAsset(docs))

	a := r.Group("", s.authenticate, s.rateLimit, s.authorize)
	list := func(path string, h gin.HandlerFunc) { withSlash(a, http.MethodGet, path, h) }

	a.POST("/provisions/can_user_access", s.canUserAccess)
	a.POST("/provisions/can_user_access_all", s.canUserAccessAll)
	a.POST("/provisions/add_to_user", s.addToUser)
	a.POST("/provisions/remove_from_user", s.removeFromUser)
	a.POST("/provisions/explain", s.explain)

	a.GET("/policy", s.getPolicy)
	list("/audit/decisions", s.listDecisions)
	list("/audit/events", s.listEvents)

	a.POST("/llm_integration/custom_model", s.createCustomModel)
	a.POST("/llm_integration/remove", s.removeResource(storage.KindModel, "Model not found.", "Model deleted successfully"))
	list("/llm_integration/list", s.listModels)
	a.POST("/llm_integration/:provider", s.integrateModel)
	// Without this, the provider parameter would take POST /llm_integration/list, a 405 before.
	r.POST("/llm_integration/list", s.wrongMethod(http.MethodGet))

	a.POST("/functions/create", s.createFunction)
	a.POST("/functions/remove", s.removeResource(storage.KindFunction, "Function not found.", "Function deleted successfully"))
	list("/functions/list", s.listFunctions)

	a.POST("/data_integration/custom", s.createCustomDataset)
	a.POST("/data_integration/remove", s.removeResource(storage.KindDataset, "Dataset not found.", "Dataset deleted successfully"))
	list("/data_integration/list", s.listDatasets)
	a.POST("/data_integration/:provider/integrate", s.integrateVectorDB)

	a.POST("/auth_integration/create", s.createAuthIntegration)
	list("/auth_integration/list", s.listAuthIntegrations)
	a.POST("/auth_integration/remove", s.removeAuthIntegration)
	a.POST("/auth_integration/scim_token/rotate", s.rotateSCIMToken)
	a.POST("/auth_integration/scim_token/revoke", s.revokeSCIMToken)
	a.POST("/users/import", s.importUsers)
	list("/users/list", s.listUsers)
	s.accessRoutes(a)

	s.scimRoutes(r)
	s.gatewayRoutes(r)

	admin := r.Group("/admin", s.adminOnly)
	admin.POST("/orgs", s.createOrg)
	admin.GET("/orgs", s.listOrgs)
	admin.GET("/orgs/", s.listOrgs)
	admin.POST("/orgs/:id/api_keys", s.createAPIKey)
	admin.DELETE("/api_keys/:id", s.revokeAPIKey)
	admin.POST("/orgs/:id/auth_integrations/:integration_id/scim_token", s.adminRotateSCIMToken)
	admin.DELETE("/orgs/:id/auth_integrations/:integration_id/scim_token", s.adminRevokeSCIMToken)
	return r
}

// withSlash serves h at path and at path with a trailing slash: clients send both, and the
// router redirects neither to the other.
func withSlash(r gin.IRoutes, method, path string, h gin.HandlerFunc) {
	r.Handle(method, path, h)
	r.Handle(method, path+"/", h)
}
