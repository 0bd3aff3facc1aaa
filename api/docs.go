package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// The documentation page at /docs is a small renderer of /openapi.json written for Grantry, with
// every asset embedded in the binary: it works with no network beyond Grantry itself, and its
// few hundred lines can be read in review, where a vendored Swagger UI bundle could not.
var (
	//go:embed docs/index.html
	docsPage []byte
	//go:embed docs/docs.js
	docsScript []byte
	//go:embed docs/docs.css
	docsStyle []byte
)

// docsAsset is a file the page loads from /docs/{name}.
type docsAsset struct {
	contentType string
	body        []byte
}

// docsAssets are the files the page loads, by name; anything else under /docs/ is 404.
var docsAssets = map[string]docsAsset{
	"docs.js":  {"text/javascript; charset=utf-8", docsScript},
	"docs.css": {"text/css; charset=utf-8", docsStyle},
}

// docsCSP lets the page load scripts, styles and data from Grantry only, so that a browser
// refuses any other host even if the page somehow named one, and keeps the page out of frames.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func docsHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", docsCSP)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("Cache-Control", "no-cache")
}

// serveDocs answers the documentation page. Like /openapi.json it needs no key; the requests
// the page sends on a reader's behalf carry the token the reader types into it.
func (s *Server) serveDocs(c *gin.Context) {
	docsHeaders(c)
	c.Data(http.StatusOK, "text/html; charset=utf-8", docsPage)
}

// serveDocsAsset answers one of the page's scripts or styles.
func (s *Server) serveDocsAsset(c *gin.Context) {
	a, ok := docsAssets[c.Param("asset")]
	if !ok {
		s.writeError(c, errNotFound)
		return
	}
	docsHeaders(c)
	c.Data(http.StatusOK, a.contentType, a.body)
}
