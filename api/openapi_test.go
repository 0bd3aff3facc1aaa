package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
)

// openAPIFile is the checked-in document that GET /openapi.json serves.
const openAPIFile = "openapi.json"

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// docOp is one operation of the document.
type docOp struct {
	Method string // upper case, as on the wire
	Path   string // as the document writes it, with {params}
	ID     string
	Op     map[string]any
}

// openAPISpec is the checked-in document, as raw JSON for the structural checks and as
// libopenapi validators for the checks of real requests and responses.
type openAPISpec struct {
	raw       []byte
	tree      map[string]any
	ops       []docOp
	validator validator.Validator
	// strict also refuses properties and headers that the document does not declare. It is
	// for the operations whose every field is described; SCIM resources, the document itself,
	// the audit trail's before and after snapshots and an imported user's attributes are open
	// by design.
	strict validator.Validator
}

// strictlyChecked reports whether the exchanges of the operation at path are held to the
// strict validator.
func strictlyChecked(path string) bool {
	return !strings.HasPrefix(path, "/scim/") && path != "/openapi.json" && !strings.HasPrefix(path, "/docs") &&
		!strings.HasPrefix(path, "/gateway/")
}

func loadOpenAPI(tb testing.TB) *openAPISpec {
	tb.Helper()
	raw, err := os.ReadFile(openAPIFile)
	if err != nil {
		tb.Fatal(err)
	}
	spec := &openAPISpec{raw: raw}
	if err := json.Unmarshal(raw, &spec.tree); err != nil {
		tb.Fatalf("%s is not JSON: %v", openAPIFile, err)
	}
	paths, _ := spec.tree["paths"].(map[string]any)
	for path, item := range paths {
		for _, m := range httpMethods {
			if op, ok := item.(map[string]any)[m].(map[string]any); ok {
				id, _ := op["operationId"].(string)
				spec.ops = append(spec.ops, docOp{Method: strings.ToUpper(m), Path: path, ID: id, Op: op})
			}
		}
	}
	sort.Slice(spec.ops, func(i, j int) bool {
		return spec.ops[i].Path+" "+spec.ops[i].Method < spec.ops[j].Path+" "+spec.ops[j].Method
	})
	return spec
}

// loadValidators builds the libopenapi validators of the document: the slow part of loading
// it, so only the tests that use them pay for it.
func (spec *openAPISpec) loadValidators(tb testing.TB, strict bool) {
	tb.Helper()
	doc, err := libopenapi.NewDocument(spec.raw)
	if err != nil {
		tb.Fatalf("libopenapi cannot read %s: %v", openAPIFile, err)
	}
	var errs []error
	if spec.validator, errs = validator.NewValidator(doc, config.WithFormatAssertions()); len(errs) > 0 {
		tb.Fatalf("libopenapi cannot build a model of %s: %v", openAPIFile, errs)
	}
	if !strict {
		return
	}
	if spec.strict, errs = validator.NewValidator(doc, config.WithFormatAssertions(), config.WithStrictMode(),
		config.WithStrictIgnorePaths("$.body.events[*].before.**", "$.body.events[*].after.**", "$.body.users[*].attributes.**")); len(errs) > 0 {
		tb.Fatalf("libopenapi cannot build a model of %s: %v", openAPIFile, errs)
	}
}

// describe turns validation errors into lines a reader can act on.
func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      at %s (%s): %s", se.FieldPath, se.KeywordLocation, se.Reason)
		}
	}
	return b.String()
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	spec := loadOpenAPI(t)
	spec.loadValidators(t, false)
	if ok, errs := spec.validator.ValidateDocument(); !ok {
		t.Fatalf("%s is not a valid OpenAPI document:%s", openAPIFile, describe(errs))
	}
	info, _ := spec.tree["info"].(map[string]any)
	if spec.tree["openapi"] != "3.1.0" || info["version"] != "0.0.1" {
		t.Errorf("openapi = %v, info.version = %v; want 3.1.0 and 0.0.1", spec.tree["openapi"], info["version"])
	}
	checkRefsResolve(t, spec.tree, spec.tree, "#")

	ids := map[string]string{}
	for _, o := range spec.ops {
		where := o.Method + " " + o.Path
		if o.ID == "" {
			t.Errorf("%s has no operationId", where)
		} else if other, dup := ids[o.ID]; dup {
			t.Errorf("operationId %s is used by both %s and %s", o.ID, other, where)
		}
		ids[o.ID] = where
	}
	if got := ids["check_access_by_resource_id"]; got != "POST /provisions/can_user_access" {
		t.Errorf("operationId check_access_by_resource_id is on %q, want POST /provisions/can_user_access", got)
	}

	// Contract-testing tools run from the document alone: they need a server to send to and a
	// value for every path parameter.
	servers, _ := spec.tree["servers"].([]any)
	if first, _ := firstOf(servers).(map[string]any); first == nil || first["url"] != "/" {
		t.Errorf("servers = %v, want a first entry with url \"/\", the Grantry serving the document", spec.tree["servers"])
	}
	for _, o := range spec.ops {
		params, _ := o.Op["parameters"].([]any)
		for _, p := range params {
			p, _ := p.(map[string]any)
			if p["in"] != "path" {
				continue
			}
			if ex, ok := p["example"].(string); !ok || ex == "" {
				t.Errorf("%s %s: path parameter %v has no example", o.Method, o.Path, p["name"])
			} else if enum, ok := p["schema"].(map[string]any)["enum"].([]any); ok && !slices.Contains(enum, any(ex)) {
				t.Errorf("%s %s: the example %q of path parameter %v is not one of %v", o.Method, o.Path, ex, p["name"], enum)
			}
		}
	}
}

// firstOf is xs[0], or nil when xs is empty.
func firstOf(xs []any) any {
	if len(xs) == 0 {
		return nil
	}
	return xs[0]
}

// checkRefsResolve fails for every $ref under node that does not name a part of the document.
func checkRefsResolve(t *testing.T, root, node any, at string) {
	t.Helper()
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok && lookupPointer(root, ref) == nil {
			t.Errorf("%s: $ref %s names nothing in the document", at, ref)
		}
		for k, v := range n {
			checkRefsResolve(t, root, v, at+"/"+k)
		}
	case []any:
		for i, v := range n {
			checkRefsResolve(t, root, v, fmt.Sprintf("%s/%d", at, i))
		}
	}
}

func lookupPointer(root any, ref string) any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	node := root
	for part := range strings.SplitSeq(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[part]
	}
	return node
}

// TestOpenAPISpecShapes holds the document to the shapes that service-spec.md and CONTRACT.md
// fix: the validation error schemas, the security schemes, and who needs which credential.
func TestOpenAPISpecShapes(t *testing.T) {
	spec := loadOpenAPI(t)
	components := lookupPointer(spec.tree, "#/components").(map[string]any)
	tests := []struct {
		name, pointer, want string
	}{
		{"HTTPValidationError is detail, a list of ValidationError", "#/components/schemas/HTTPValidationError/properties/detail",
			`{"title":"Detail","type":"array","items":{"$ref":"#/components/schemas/ValidationError"}}`},
		{"ValidationError requires loc, msg and type", "#/components/schemas/ValidationError/required", `["loc","msg","type"]`},
		{"loc items are strings or integers", "#/components/schemas/ValidationError/properties/loc/items",
			`{"anyOf":[{"type":"string"},{"type":"integer"}]}`},
		{"msg is a string", "#/components/schemas/ValidationError/properties/msg/type", `"string"`},
		{"type is a string", "#/components/schemas/ValidationError/properties/type/type", `"string"`},
		{"the default credential is the API key", "#/security", `[{"HTTPBearer":[]}]`},
		{"API keys are HTTP bearer", "#/components/securitySchemes/HTTPBearer/scheme", `"bearer"`},
		{"the admin token is HTTP bearer", "#/components/securitySchemes/AdminToken/scheme", `"bearer"`},
		{"SCIM tokens are HTTP bearer", "#/components/securitySchemes/SCIMToken/scheme", `"bearer"`},
		{"the check's success is a boolean", "#/paths/~1provisions~1can_user_access/post/responses/200/content/application~1json/schema",
			`{"type":"boolean"}`},
		{"the check's 422 is HTTPValidationError", "#/components/responses/ValidationError/content/application~1json/schema",
			`{"$ref":"#/components/schemas/HTTPValidationError"}`},
		{"the check's svc_id is a uuid", "#/components/schemas/AccessRequest/properties/svc_id/format", `"uuid"`},
		{"the check requires user_id and svc_id", "#/components/schemas/AccessRequest/required", `["user_id","svc_id"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, lookupPointer(spec.tree, tt.pointer)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.pointer, diff)
			}
		})
	}
	for _, name := range []string{"HTTPBearer", "AdminToken", "SCIMToken"} {
		if typ := lookupPointer(components, "#/securitySchemes/"+name+"/type"); typ != "http" {
			t.Errorf("security scheme %s has type %v, want http", name, typ)
		}
	}

	// Who needs which credential follows from the path, and every operation that reads a JSON
	// body can answer 422 with the spec's schema.
	open := []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json", "GET /docs", "GET /docs/{asset}",
		"POST /llm_integration/list"}
	for _, o := range spec.ops {
		var want string
		switch {
		case slices.Contains(open, o.Method+" "+o.Path):
			want = `[]`
		case strings.HasPrefix(o.Path, "/admin/"):
			want = `[{"AdminToken":[]}]`
		case strings.HasPrefix(o.Path, "/scim/v2/"):
			want = `[{"SCIMToken":[]}]`
		case strings.HasPrefix(o.Path, "/gateway/"):
			want = `[{"GatewayKey":[]}]`
		default:
			want = "inherited"
		}
		got := "inherited"
		if sec, ok := o.Op["security"]; ok {
			b, _ := json.Marshal(sec)
			got = string(b)
		}
		if got != want {
			t.Errorf("%s %s: security %s, want %s", o.Method, o.Path, got, want)
		}
		if lookupPointer(o.Op, "#/requestBody/content/application~1json") != nil {
			if ref := lookupPointer(o.Op, "#/responses/422/$ref"); ref != "#/components/responses/ValidationError" {
				t.Errorf("%s %s reads a JSON body but its 422 is %v, want the ValidationError response", o.Method, o.Path, ref)
			}
		}
	}
}

// ginParam matches a path parameter of Gin (":id") or a catch-all ("*path").
var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// TestOpenAPICoversEveryRoute fails, naming the difference, unless the document and the router
// serve exactly the same operations. A list path that the router serves both with and without
// the trailing slash is documented once, in the form service-spec.md gives, and the operation
// names the other form in x-also-served-at: the test accepts exactly those pairs.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	spec := loadOpenAPI(t)
	f := newFixture(t)

	served := map[string]bool{}
	for _, r := range f.srv.Routes() {
		served[r.Method+" "+ginParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	documented := map[string]string{} // route → how the document names it
	for _, o := range spec.ops {
		documented[o.Method+" "+o.Path] = "operation " + o.ID
		alt, ok := o.Op["x-also-served-at"].(string)
		if !ok {
			continue
		}
		if strings.TrimSuffix(alt, "/") != strings.TrimSuffix(o.Path, "/") || alt == o.Path {
			t.Errorf("%s: x-also-served-at %s is not %s with or without a trailing slash", o.ID, alt, o.Path)
		}
		documented[o.Method+" "+alt] = "x-also-served-at of " + o.ID
	}

	var undocumented, unserved []string
	for route := range served {
		if _, ok := documented[route]; !ok {
			undocumented = append(undocumented, route)
		}
	}
	for route, how := range documented {
		if !served[route] {
			unserved = append(unserved, route+" ("+how+")")
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unserved)
	for _, r := range undocumented {
		t.Errorf("the router serves %s, which %s does not document", r, openAPIFile)
	}
	for _, r := range unserved {
		t.Errorf("%s documents %s, which the router does not serve", openAPIFile, r)
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	spec := loadOpenAPI(t)
	f := newFixture(t)
	r := f.do("GET", "/openapi.json", "", nil)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json without a key = %d %q, want 200 application/json", r.Status, r.Header.Get("Content-Type"))
	}
	if !bytes.Equal(r.Body, spec.raw) {
		t.Errorf("GET /openapi.json serves something other than %s", openAPIFile)
	}
}

// matchOp returns the documented operation that serves method and path (a concrete path
// wins over a template, as OpenAPI asks), counting the x-also-served-at forms as their
// operation's.
func (spec *openAPISpec) matchOp(method, path string) (docOp, bool) {
	var best docOp
	bestParams := -1
	for _, o := range spec.ops {
		if o.Method != method {
			continue
		}
		templates := []string{o.Path}
		if alt, ok := o.Op["x-also-served-at"].(string); ok {
			templates = append(templates, alt)
		}
		for _, tmpl := range templates {
			if n, ok := matchTemplate(tmpl, path); ok && (bestParams < 0 || n < bestParams) {
				best, bestParams = o, n
			}
		}
	}
	return best, bestParams >= 0
}

// matchTemplate reports whether path fits the template, and with how many parameters.
func matchTemplate(tmpl, path string) (int, bool) {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return 0, false
	}
	params := 0
	for i := range ts {
		switch {
		case strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}") && ps[i] != "":
			params++
		case ts[i] != ps[i]:
			return 0, false
		}
	}
	return params, true
}
