package api

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
)

// docs is the page at /docs: Swagger UI, the page FastAPI users know, rendering /openapi.json.
// Its assets are embedded in the binary by swgui's v5emb package and served under /docs/, so
// the page works with no network beyond Grantry itself.
type docs struct {
	page   []byte            // the HTML, rendered once
	csp    string            // its Content-Security-Policy
	assets map[string]string // the files the page names, by name under /docs/: their content types
	files  http.Handler      // swgui's handler, which serves them
}

// docsLink finds the assets the page names, relative to /docs/.
var docsLink = regexp.MustCompile(`(?:src|href)="docs/([^"/]+)"`)

// docsInline finds the page's inline scripts and styles, which its policy allows by hash.
var docsInline = regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`)

// docsTypes are the content types of the page's files, by extension: the file server would take
// them from the machine's MIME tables, which differ between systems.
var docsTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".png": "image/png",
}

func newDocs() *docs {
	h := v5emb.NewHandlerWithConfig(swgui.Config{
		Title: "Grantry API",
		// Relative, so that the page and the document it fetches (/docs/../openapi.json) also
		// work behind a proxy that serves Grantry under a path prefix.
		SwaggerJSON:      "../openapi.json",
		BasePath:         "docs/",
		InternalBasePath: "/docs/",
		// Swagger UI's default, which swgui turns off: the schemas under the operations.
		SettingsUI: map[string]string{"defaultModelsExpandDepth": "1"},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs/", nil))
	d := &docs{page: rec.Body.Bytes(), assets: map[string]string{}, files: h}
	for _, m := range docsLink.FindAllSubmatch(d.page, -1) {
		if t, ok := docsTypes[path.Ext(string(m[1]))]; ok {
			d.assets[string(m[1])] = t
		}
	}
	hashes := map[string][]string{}
	for _, m := range docsInline.FindAllSubmatch(d.page, -1) {
		sum := sha256.Sum256(m[2])
		hashes[string(m[1])] = append(hashes[string(m[1])], fmt.Sprintf("'sha256-%s'", base64.StdEncoding.EncodeToString(sum[:])))
	}
	// Scripts, styles, images and requests from Grantry only, the page's own inline script and
	// style by hash, and no frames: a browser refuses any other host even if the page named one.
	d.csp = "default-src 'none'; script-src 'self' " + strings.Join(hashes["script"], " ") +
		"; style-src 'self' " + strings.Join(hashes["style"], " ") +
		"; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return d
}

func (d *docs) headers(c *gin.Context) {
	c.Header("Content-Security-Policy", d.csp)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("Cache-Control", "no-cache")
}

// servePage answers the documentation page. Like /openapi.json it needs no key; the requests
// the page sends on a reader's behalf carry the token the reader gives it.
func (d *docs) servePage(c *gin.Context) {
	d.headers(c)
	c.Data(http.StatusOK, "text/html; charset=utf-8", d.page)
}

// serveDocsAsset answers one of the files the page names; anything else under /docs/ is 404.
func (s *Server) serveDocsAsset(d *docs) gin.HandlerFunc {
	return func(c *gin.Context) {
		contentType, ok := d.assets[c.Param("asset")]
		if !ok {
			s.writeError(c, errNotFound)
			return
		}
		d.headers(c)
		d.files.ServeHTTP(typedWriter{c.Writer, contentType}, c.Request)
	}
}

// typedWriter sends contentType, whatever the handler writing through it set: the header is
// set again just before it is sent, by WriteHeader or by the first Write.
type typedWriter struct {
	http.ResponseWriter
	contentType string
}

func (w typedWriter) WriteHeader(code int) {
	w.Header().Set("Content-Type", w.contentType)
	w.ResponseWriter.WriteHeader(code)
}

func (w typedWriter) Write(b []byte) (int, error) {
	w.Header().Set("Content-Type", w.contentType)
	return w.ResponseWriter.Write(b)
}
