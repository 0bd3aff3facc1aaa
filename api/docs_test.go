package api_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestDocsPage: /docs is Swagger UI, served without a key, and fetches the document that
// /openapi.json serves.
func TestDocsPage(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/docs", "", nil)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /docs = %d %q, want 200 text/html", r.Status, r.Header.Get("Content-Type"))
	}
	page := string(r.Body)
	for _, want := range []string{"<title>Grantry API - Swagger UI</title>", `<div id="swagger-ui">`, "SwaggerUIBundle(settings)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The page's script resolves a relative document URL against its own folder, as
	// "/docs/" + url; that must be the document Grantry serves.
	m := regexp.MustCompile(`"swaggerJsonUrl":"([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page names no document")
	}
	doc, err := url.Parse("http://grantry.test/docs/" + m[1])
	if err != nil {
		t.Fatal(err)
	}
	if doc.ResolveReference(&url.URL{}).Path != "/openapi.json" {
		t.Errorf("the page fetches %s, not /openapi.json", doc.ResolveReference(&url.URL{}))
	}
	if r := f.do("GET", "/openapi.json", "", nil); r.Status != http.StatusOK {
		t.Errorf("GET /openapi.json = %d", r.Status)
	}

	for _, path := range []string{"/docs/", "/docs/openapi.json", "/docs/..%2fopenapi.go", "/docs/index.html", "/docs/oauth2-redirect.html", "/docs/docs.js"} {
		if r := f.do("GET", path, "", nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want 404: only the page's own assets are served", path, r.Status, r.Body)
		}
	}
}

// linkAttr finds the URLs an HTML page makes the browser load or link to.
var linkAttr = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)

// TestDocsAssets: every file the page names is served by Grantry itself, with its type,
// compressed for a browser that accepts gzip and plain for one that does not.
func TestDocsAssets(t *testing.T) {
	f := newFixture(t)
	page := f.do("GET", "/docs", "", nil)
	base, _ := url.Parse("http://grantry.test/docs")
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".png": "image/png"}
	links := linkAttr.FindAllStringSubmatch(string(page.Body), -1)
	if len(links) < 4 {
		t.Fatalf("the page names %d URLs; want at least Swagger UI's two scripts, its style and an icon", len(links))
	}
	for _, m := range links {
		u, err := base.Parse(m[1])
		if err != nil || u.Host != base.Host {
			t.Errorf("the page links to %q, which is not on Grantry itself", m[1])
			continue
		}
		t.Run(u.Path, func(t *testing.T) {
			plain := f.do("GET", u.Path, "", nil)
			ext := u.Path[strings.LastIndex(u.Path, "."):]
			if plain.Status != http.StatusOK || plain.Header.Get("Content-Type") != types[ext] {
				t.Fatalf("GET %s = %d %q, want 200 %q", u.Path, plain.Status, plain.Header.Get("Content-Type"), types[ext])
			}
			if plain.Header.Get("X-Content-Type-Options") != "nosniff" || plain.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("GET %s lacks the page's headers", u.Path)
			}
			if ext == ".png" {
				return
			}
			req := httptest.NewRequest("GET", u.Path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			zipped := httptest.NewRecorder()
			f.srv.ServeHTTP(zipped, req)
			if zipped.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("GET %s accepting gzip: Content-Encoding %q", u.Path, zipped.Header().Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(zipped.Body)
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(unzipped, plain.Body) {
				t.Errorf("GET %s: the gzipped body (%d bytes, %v) differs from the plain one (%d bytes)", u.Path, len(unzipped), err, len(plain.Body))
			}
		})
	}
}

// TestDocsPageIsSelfContained: the page's content security policy lets the browser load
// nothing from another host, and allows the page's own inline script and style, so that it
// works with no network but Grantry's.
func TestDocsPageIsSelfContained(t *testing.T) {
	f := newFixture(t)
	page := f.do("GET", "/docs", "", nil)
	csp := page.Header.Get("Content-Security-Policy")
	directives := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		if fields := strings.Fields(d); len(fields) > 0 {
			directives[fields[0]] = fields[1:]
		}
	}
	if got := directives["default-src"]; len(got) != 1 || got[0] != "'none'" {
		t.Errorf("default-src is %q, want 'none'", got)
	}
	for name, sources := range directives {
		for _, src := range sources {
			if src != "'self'" && src != "'none'" && src != "data:" && !strings.HasPrefix(src, "'sha256-") {
				t.Errorf("%s allows %s, which is not Grantry itself", name, src)
			}
		}
	}
	inline := regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`).FindAllStringSubmatch(string(page.Body), -1)
	if len(inline) == 0 {
		t.Fatal("no inline script or style found; the test no longer reads the page")
	}
	for _, m := range inline {
		sum := sha256.Sum256([]byte(m[2]))
		hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(strings.Join(directives[m[1]+"-src"], " "), hash) {
			t.Errorf("the page's inline %s is not allowed by %s-src, so the browser would not run it", m[1], m[1])
		}
	}
	if strings.Contains(string(page.Body), "validator.swagger.io") || !strings.Contains(string(page.Body), "validatorUrl: null") {
		t.Error("the page asks Swagger's online validator, another host")
	}
}
