package api_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestDocsPage: /docs and every asset it names are served by Grantry itself, without a key,
// with a content security policy that lets the browser load nothing from another host.
func TestDocsPage(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		path, contentType string
	}{
		{"/docs", "text/html; charset=utf-8"},
		{"/docs/docs.js", "text/javascript; charset=utf-8"},
		{"/docs/docs.css", "text/css; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := f.do("GET", tt.path, "", nil)
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != tt.contentType {
				t.Fatalf("GET %s = %d %q, want 200 %q", tt.path, r.Status, r.Header.Get("Content-Type"), tt.contentType)
			}
			csp := r.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tt.path, csp, want)
				}
			}
			if r.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: no X-Content-Type-Options: nosniff", tt.path)
			}
		})
	}
	for _, path := range []string{"/docs/", "/docs/openapi.json", "/docs/..%2fopenapi.go", "/docs/index.html"} {
		if r := f.do("GET", path, "", nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want 404: only the page's own assets are served", path, r.Status, r.Body)
		}
	}
}

// linkAttr finds the URLs an HTML page makes the browser load or link to.
var linkAttr = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)

// TestDocsPageIsSelfContained: nothing the page is made of names another host, and every URL
// the page names is one Grantry serves, so the page works with no network but Grantry's.
func TestDocsPageIsSelfContained(t *testing.T) {
	f := newFixture(t)
	page := f.do("GET", "/docs", "", nil)
	base, _ := url.Parse("http://grantry.test/docs")
	links := linkAttr.FindAllStringSubmatch(string(page.Body), -1)
	if len(links) < 3 {
		t.Fatalf("the page names %d URLs; want at least its script, its style and openapi.json", len(links))
	}
	for _, m := range links {
		if m[1] == "data:," {
			continue // the empty icon, which spares the browser asking for /favicon.ico
		}
		u, err := base.Parse(m[1])
		if err != nil || u.Host != base.Host {
			t.Errorf("the page links to %q, which is not on Grantry itself", m[1])
			continue
		}
		if r := f.do("GET", u.Path, "", nil); r.Status != http.StatusOK {
			t.Errorf("the page names %s (%s), which answers %d", m[1], u.Path, r.Status)
		}
	}

	// No part of the page may name a URL with a scheme or a host, import a style, or build
	// markup from text; the script builds every element with DOM calls.
	forbidden := []struct{ pattern, why string }{
		{`://`, "names a URL with a scheme, which would reach another host"},
		{`(?:src|href|url|fetch)\s*[=(]\s*["']?//`, "names a scheme-relative URL, which would reach another host"},
		{`@import`, "imports a style, which could come from elsewhere"},
		{`innerHTML|outerHTML|insertAdjacentHTML|document\.write`, "turns text into markup"},
		{`\beval\s*\(|new Function`, "runs text as code"},
	}
	for _, path := range []string{"/docs", "/docs/docs.js", "/docs/docs.css"} {
		body := string(f.do("GET", path, "", nil).Body)
		for _, fb := range forbidden {
			if loc := regexp.MustCompile(fb.pattern).FindStringIndex(body); loc != nil {
				t.Errorf("%s %s: %q", path, fb.why, body[max(0, loc[0]-40):min(len(body), loc[1]+40)])
			}
		}
	}
}
