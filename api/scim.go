package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/scim"
	"github.com/grantry/grantry/storage"
)

// scimBasePath is where the SCIM 2.0 service provider answers; a SCIM integration's base_url.
const scimBasePath = "/scim/v2"

// scimContentType is the media type of every SCIM response (RFC 7644 §3.1).
const scimContentType = "application/scim+json"

// The paging limits of SCIM lists: a list without count gets scimDefaultCount resources, and
// none gets more than scimMaxResults (the filter.maxResults of ServiceProviderConfig).
const (
	scimDefaultCount = 100
	scimMaxResults   = 1000
)

// scimRoutes serves SCIM under scimBasePath. Every path, discovery included, needs the SCIM
// token of an integration; an API key is refused there, as a SCIM token is everywhere else.
// Tokens are rate-limited as API keys are.
func (s *Server) scimRoutes(r *gin.Engine) {
	g := r.Group(scimBasePath, s.scimAuthenticate, s.scimRateLimit)
	both := func(method, path string, h gin.HandlerFunc) { withSlash(g, method, path, h) }
	both(http.MethodGet, "/ServiceProviderConfig", s.scimServiceProviderConfig)
	both(http.MethodGet, "/ResourceTypes", s.scimResourceTypes)
	g.GET("/ResourceTypes/:id", s.scimResourceType)
	both(http.MethodGet, "/Schemas", s.scimSchemas)
	g.GET("/Schemas/:id", s.scimSchema)

	both(http.MethodGet, "/Users", s.scimQuery(parseListQuery, s.scimUsersPage))
	both(http.MethodPost, "/Users", s.scimCreateUser)
	g.POST("/Users/.search", s.scimQuery(parseSearchBody, s.scimUsersPage))
	g.GET("/Users/:id", s.scimGetUser)
	g.PUT("/Users/:id", s.scimReplaceUser)
	g.PATCH("/Users/:id", s.scimPatchUser)
	g.DELETE("/Users/:id", s.scimDeleteUser)

	both(http.MethodGet, "/Groups", s.scimQuery(parseListQuery, s.scimGroupsPage))
	both(http.MethodPost, "/Groups", s.scimCreateGroup)
	g.POST("/Groups/.search", s.scimQuery(parseSearchBody, s.scimGroupsPage))
	g.GET("/Groups/:id", s.scimGetGroup)
	g.PUT("/Groups/:id", s.scimReplaceGroup)
	g.PATCH("/Groups/:id", s.scimPatchGroup)
	g.DELETE("/Groups/:id", s.scimDeleteGroup)
}

// scimQuery answers a list of users or groups asked for either way SCIM allows: parse reads
// the query from the URL (GET) or from a SearchRequest body (POST .search), and page answers it.
func (s *Server) scimQuery(parse func(*gin.Context) (listQuery, error), page func(*gin.Context, listQuery)) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := parse(c)
		if err != nil {
			s.writeError(c, err)
			return
		}
		page(c, q)
	}
}

// scimAuthenticate resolves the bearer SCIM token to its organization and integration, or
// answers 401. Anything that is not a SCIM token, an API key included, is refused before the
// store is asked.
func (s *Server) scimAuthenticate(c *gin.Context) {
	token, ok := apikey.FromHeader(c.GetHeader("Authorization"))
	if !ok || !strings.HasPrefix(token, apikey.SCIMPrefix) {
		s.writeError(c, errNotAuthenticated)
		return
	}
	t, err := s.store.SCIMTokenByHash(c.Request.Context(), apikey.Hash(token))
	if errors.Is(err, storage.ErrNotFound) {
		err = errNotAuthenticated
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	r := requestOf(c)
	r.orgID, r.scimIntegration = t.OrgID, t.IntegrationID
	r.setCaller(storage.Actor{Kind: storage.ActorSCIMToken, ID: t.ID})
	c.Next()
}

// scimIntegration is the SCIM integration the request's token belongs to.
func scimIntegration(c *gin.Context) string { return requestOf(c).scimIntegration }

// isSCIM reports whether the request is for the SCIM service provider, whose errors take
// SCIM's shape.
func isSCIM(c *gin.Context) bool {
	p := c.Request.URL.Path
	return p == scimBasePath || strings.HasPrefix(p, scimBasePath+"/")
}

// scimTypeError carries the scimType of an error response (RFC 7644 §3.12) to writeError.
type scimTypeError struct {
	Type string
	Err  error
}

func (e *scimTypeError) Error() string {
	if e.Err == nil {
		return e.Type
	}
	return e.Type + ": " + e.Err.Error()
}

func (e *scimTypeError) Unwrap() error { return e.Err }

// scimError is an error response of status with a scimType (may be empty) and the sentence
// shown as detail; cause is logged, never shown.
func scimError(status int, scimType, detail string, cause error) error {
	return &Error{Status: status, Detail: detail, Err: &scimTypeError{Type: scimType, Err: cause}}
}

// scimBadRequest turns a protocol error of package scim into a 400 with its scimType, and
// leaves other errors as they are.
func scimBadRequest(err error) error {
	if se, ok := errors.AsType[*scim.Error](err); ok {
		return scimError(http.StatusBadRequest, se.Type, se.Detail, err)
	}
	return err
}

// errSCIMPreconditionFailed answers an If-Match that names another version (RFC 7644 §3.14).
var errSCIMPreconditionFailed = scimError(http.StatusPreconditionFailed, "", "The resource has changed since the version given in If-Match.", nil)

// scimNotFound is the 404 of a resource id that the integration does not have.
func scimNotFound(kind, id string, cause error) error {
	return scimError(http.StatusNotFound, "", fmt.Sprintf("%s %s not found.", kind, id), cause)
}

// writeSCIMError writes the response writeError decided on in SCIM's error shape
// {"schemas":[Error],"status":"409","scimType":"uniqueness","detail":"…"}.
func (s *Server) writeSCIMError(c *gin.Context, status int, detail any, err error) {
	body := gin.H{"schemas": []string{scim.ErrorSchema}, "status": strconv.Itoa(status)}
	if d, ok := detail.(string); ok {
		body["detail"] = d
	} else {
		body["detail"] = http.StatusText(status)
	}
	if te, ok := errors.AsType[*scimTypeError](err); ok && te.Type != "" {
		body["scimType"] = te.Type
	}
	data, _ := json.Marshal(body)
	c.Abort()
	c.Data(status, scimContentType, data)
}

// scimJSON writes v as a SCIM response. Characters such as "<" and "&" are written as they
// are: a provider's logs then show names as they were sent.
func (s *Server) scimJSON(c *gin.Context, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.writeError(c, fmt.Errorf("encode SCIM response: %w", err))
		return
	}
	c.Data(status, scimContentType, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// scimNoContent answers 204, still naming SCIM's media type as every SCIM response does.
func scimNoContent(c *gin.Context) {
	c.Header("Content-Type", scimContentType)
	c.Status(http.StatusNoContent)
}

// scimResource writes one resource of type rt with its ETag (and, when it was created, its
// Location), projected as the query asks.
func (s *Server) scimResource(c *gin.Context, rt *scim.ResourceType, status int, res map[string]any) {
	meta, _ := res["meta"].(map[string]any)
	if v, ok := meta["version"].(string); ok {
		c.Header("ETag", v)
	}
	if loc, ok := meta["location"].(string); ok && status == http.StatusCreated {
		c.Header("Location", loc)
	}
	s.scimJSON(c, status, scim.Project(rt, res, queryFold(c, "attributes"), queryFold(c, "excludedAttributes")))
}

// scimLocation is the absolute URL of path under the SCIM base, as the request reached
// Grantry: a proxy in front should pass X-Forwarded-Proto.
func scimLocation(c *gin.Context, path string) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	if p := c.GetHeader("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + c.Request.Host + scimBasePath + path
}

// readSCIMBody reads the request body as one JSON object. SCIM clients send
// application/scim+json, application/json or nothing, so the content type is not checked.
func readSCIMBody(c *gin.Context) (map[string]any, []byte, error) {
	body, err := readAll(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		return nil, nil, bodyReadError(err)
	}
	obj, err := scim.DecodeObject(body)
	if err != nil {
		return nil, nil, scimBadRequest(err)
	}
	return obj, body, nil
}

// queryFold returns the query parameter name, matching the name without regard to case:
// providers are not consistent about "excludedAttributes" and "startIndex".
func queryFold(c *gin.Context, name string) string {
	if v, ok := c.GetQuery(name); ok {
		return v
	}
	for k, vs := range c.Request.URL.Query() {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// listQuery is what a SCIM list request asks for (RFC 7644 §3.4.2), in its query or, for
// POST /.search, in its body.
type listQuery struct {
	filter     *scim.Filter // nil: every resource
	startIndex int          // 1-based
	count      int
	// attributes and excluded are the comma-separated attribute lists of the projection.
	attributes, excluded string
}

func parseListQuery(c *gin.Context) (listQuery, error) {
	q := listQuery{startIndex: 1, count: scimDefaultCount,
		attributes: queryFold(c, "attributes"), excluded: queryFold(c, "excludedAttributes")}
	if err := q.setFilter(queryFold(c, "filter")); err != nil {
		return q, err
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"startIndex", &q.startIndex}, {"count", &q.count}} {
		v := queryFold(c, p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return q, scimError(http.StatusBadRequest, scim.InvalidValue, p.name+" must be an integer.", err)
		}
		*p.dst = n
	}
	return q.bounded(), nil
}

// searchRequest is the body of POST /.search (RFC 7644 §3.4.3).
type searchRequest struct {
	Filter             string   `json:"filter"`
	StartIndex         *int     `json:"startIndex"`
	Count              *int     `json:"count"`
	Attributes         []string `json:"attributes"`
	ExcludedAttributes []string `json:"excludedAttributes"`
}

func parseSearchBody(c *gin.Context) (listQuery, error) {
	_, raw, err := readSCIMBody(c)
	if err != nil {
		return listQuery{}, err
	}
	var req searchRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return listQuery{}, scimError(http.StatusBadRequest, scim.InvalidValue, "filter must be a string, startIndex and count integers, and the attribute lists lists of strings.", err)
	}
	q := listQuery{startIndex: 1, count: scimDefaultCount,
		attributes: strings.Join(req.Attributes, ","), excluded: strings.Join(req.ExcludedAttributes, ",")}
	if req.StartIndex != nil {
		q.startIndex = *req.StartIndex
	}
	if req.Count != nil {
		q.count = *req.Count
	}
	if err := q.setFilter(req.Filter); err != nil {
		return q, err
	}
	return q.bounded(), nil
}

func (q *listQuery) setFilter(f string) error {
	if strings.TrimSpace(f) == "" {
		return nil
	}
	parsed, err := scim.ParseFilter(f)
	if err != nil {
		return scimBadRequest(err)
	}
	q.filter = parsed
	return nil
}

// bounded applies RFC 7644 §3.4.2.4: a startIndex below 1 means 1 and a negative count means
// 0; more than the service's maximum gets the maximum.
func (q listQuery) bounded() listQuery {
	q.startIndex = max(q.startIndex, 1)
	q.count = min(max(q.count, 0), scimMaxResults)
	return q
}

// listResponse is RFC 7644 §3.4.2's ListResponse.
type listResponse struct {
	Schemas      []string `json:"schemas"`
	TotalResults int      `json:"totalResults"`
	StartIndex   int      `json:"startIndex"`
	ItemsPerPage int      `json:"itemsPerPage"`
	Resources    []any    `json:"Resources"`
}

// maxFilterWork bounds the work of one filtered list that no index answers: the filter's terms
// times the resources it is evaluated on, so that one list cannot keep a CPU busy for long; a
// filter that would take more is refused as tooMany before any is done, and the request's
// deadline stops the rest.
const maxFilterWork = 1_000_000

// checkFilterWork refuses, as tooMany, a filter whose evaluation on candidates resources would
// exceed maxFilterWork.
func checkFilterWork(f *scim.Filter, candidates int) error {
	if f == nil || f.Terms()*candidates <= maxFilterWork {
		return nil
	}
	return scimError(http.StatusBadRequest, scim.TooMany, fmt.Sprintf(
		"A filter of %d terms over the integration's %d resources is more than the %d term evaluations one request may make; narrow it by id, userName, externalId or displayName, or use fewer terms.",
		f.Terms(), candidates, maxFilterWork), nil)
}

// errSCIMDeadline answers a list whose filtering ran past the request's deadline. It is not a
// store error, so it neither counts as one nor makes the check path distrust its cache.
var errSCIMDeadline = scimError(http.StatusServiceUnavailable, "", "The request took longer than its deadline; narrow the filter, or try again shortly.", nil)

// checkDeadline returns errSCIMDeadline once ctx is done, every so many steps of a loop.
func checkDeadline(ctx context.Context, step int) error {
	if step%64 == 0 && ctx.Err() != nil {
		return errSCIMDeadline
	}
	return nil
}

// scimList writes a page of resources, each projected as the query asks.
func (s *Server) scimList(c *gin.Context, rt *scim.ResourceType, q listQuery, total int, resources []map[string]any) {
	out := make([]any, len(resources))
	for i, r := range resources {
		out[i] = scim.Project(rt, r, q.attributes, q.excluded)
	}
	s.scimJSON(c, http.StatusOK, listResponse{
		Schemas: []string{scim.ListResponseSchema}, TotalResults: total, StartIndex: q.startIndex,
		ItemsPerPage: len(out), Resources: out,
	})
}

// filterPage applies the query's filter and page to resources that are candidates for it,
// and returns the page and how many matched in all, or errSCIMDeadline.
func filterPage(ctx context.Context, rt *scim.ResourceType, q listQuery, candidates []map[string]any) ([]map[string]any, int, error) {
	matched := candidates[:0:0]
	for i, r := range candidates {
		if err := checkDeadline(ctx, i); err != nil {
			return nil, 0, err
		}
		if q.filter == nil || q.filter.Matches(rt, r) {
			matched = append(matched, r)
		}
	}
	from := min(q.startIndex-1, len(matched))
	to := min(from+q.count, len(matched))
	return matched[from:to], len(matched), nil
}

// scimVersion is the entity tag of a resource last modified at ms (Unix milliseconds): the
// clock gives every change of one replica its own millisecond.
func scimVersion(ms int64) string { return `W/"` + strconv.FormatInt(ms, 10) + `"` }

// checkIfMatch returns errSCIMPreconditionFailed when the request's If-Match names neither
// "*" nor version.
func checkIfMatch(ifMatch, version string) error {
	if ifMatch == "" || strings.TrimSpace(ifMatch) == "*" {
		return nil
	}
	for tag := range strings.SplitSeq(ifMatch, ",") {
		if strings.TrimSpace(tag) == version {
			return nil
		}
	}
	return errSCIMPreconditionFailed
}

// maxSCIMString bounds the strings Grantry keeps as a user's or group's own fields, as the
// other endpoints bound names.
const maxSCIMString = 256

func checkLength(attr, v string) error {
	if len([]rune(v)) > maxSCIMString {
		return &scim.Error{Type: scim.InvalidValue, Detail: fmt.Sprintf("%s is longer than %d characters", attr, maxSCIMString)}
	}
	return nil
}
