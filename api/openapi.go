package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument is the OpenAPI 3.1 description of every route the router serves. It is a
// checked-in file rather than one generated from the handlers, so that reviewers read what
// clients read; openapi_test.go keeps it honest: it validates the document, checks that it
// and the router name the same routes, and checks real responses against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers the document. It needs no key: it describes the API, not any data.
func (s *Server) serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/json", openAPIDocument)
}
