package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/jsonstr"
	"github.com/grantry/grantry/storage"
)

type accessRequest struct {
	UserID string `json:"user_id" validate:"required,max=256"`
	SvcID  string `json:"svc_id" validate:"required,uuid"`
}

// grantRequest is add_to_user's body: accessRequest with an optional expiry, declared last
// (expiresAt relies on it).
type grantRequest struct {
	UserID    string  `json:"user_id" validate:"required,max=256"`
	SvcID     string  `json:"svc_id" validate:"required,uuid"`
	ExpiresAt *string `json:"expires_at" validate:"omitnil,rfc3339"`
}

// accessBody is a request body that names a user and a resource: a check's, a grant's, a
// revoke's. set gives it the ids decodeCheckFast read.
type accessBody interface {
	set(ids accessRequest)
}

func (r *accessRequest) set(ids accessRequest) { *r = ids }
func (r *grantRequest) set(ids accessRequest) {
	*r = grantRequest{UserID: ids.UserID, SvcID: ids.SvcID}
}

// bindAccess is bindJSON for a body that names a user and a resource. Nearly every such body
// is {"user_id":"…","svc_id":"…"}, which decodeCheckFast reads without reflection; anything
// else (an expiry, an escape, a problem to report) is left to decodeBody, which gives the same
// answer for that shape. Grants and revokes send that shape too, and reading it without
// reflection spares each of them most of the cost of reading its body.
func (s *Server) bindAccess(c *gin.Context, dst accessBody) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if ids, ok := decodeCheckFast(body); ok {
		dst.set(ids)
		return nil
	}
	return decodeBody(s.validate, body, dst)
}

type accessAllRequest struct {
	UserID string   `json:"user_id" validate:"required,max=256"`
	Tags   []string `json:"tags" validate:"required,min=1,max=1000,dive,uuid"`
}

// canUserAccess answers a bare JSON boolean. Anything unknown is false, never 404, so that the
// check reveals nothing about what exists. It is the hot path: the usual body is read without
// reflection, and a warm check reads nothing from the store and evaluates no policy (see
// authz).
func (s *Server) canUserAccess(c *gin.Context) {
	start := time.Now()
	var req accessRequest
	if err := s.bindAccess(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	s.check(c, start, endpointCheck, req.UserID, []string{canonicalID(req.SvcID)}, false)
}

// canUserAccessAll is true only when the policy's allow_all is: for the shipped policy, when
// every tag would be true alone.
func (s *Server) canUserAccessAll(c *gin.Context) {
	start := time.Now()
	body, err := readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	req, ok := decodeCheckAllFast(body)
	if !ok {
		if err := decodeBody(s.validate, body, &req); err != nil {
			s.writeError(c, err)
			return
		}
		for i, t := range req.Tags {
			req.Tags[i] = canonicalID(t)
		}
	}
	s.check(c, start, endpointCheckAll, req.UserID, req.Tags, true)
}

// check answers whether userID may use ids (all of them, when all), logs the decision, and
// writes the answer.
func (s *Server) check(c *gin.Context, start time.Time, endpoint, userID string, ids []string, all bool) {
	q := s.question(c, userID, ids, all, s.nowAt(start))
	d, err := s.decider.Decide(c.Request.Context(), q)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logDecision(c, start, endpoint, userID, ids, d.Allowed, d.Revision)
	answer := jsonFalse
	if d.Allowed {
		answer = jsonTrue
	}
	// As c.Data(http.StatusOK, jsonContentType, answer), without the value slice it makes.
	c.Writer.Header()["Content-Type"] = jsonContentTypeHeader
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(answer) // a client gone before its answer is nothing to report
}

// The two answers of a check, written as they are rather than encoded each time.
var (
	jsonTrue        = []byte("true")
	jsonFalse       = []byte("false")
	jsonContentType = "application/json; charset=utf-8"
	// jsonContentTypeHeader is the header value of every check's answer, shared: net/http
	// copies a response's header values before it writes them, and nothing changes one.
	jsonContentTypeHeader = []string{jsonContentType}
)

// addToUser grants a resource to a user, until expires_at if given. Granting again keeps the
// grant and gives it the expiry of the latest call (none: for good).
func (s *Server) addToUser(c *gin.Context) {
	var req grantRequest
	err := s.bindAccess(c, &req)
	expires, err := s.expiresAt(err, req.ExpiresAt)
	if err != nil {
		s.writeError(c, err)
		return
	}
	// The store says which of the user and the resource is missing (the user first), and
	// errorResponse names it.
	g := storage.Grant{OrgID: orgID(c), UserID: req.UserID, ResourceID: canonicalID(req.SvcID), CreatedAt: s.clock(), ExpiresAt: expires}
	if err := storage.AddGrant(c.Request.Context(), s.store, g); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, userAnswer{UserID: req.UserID})
}

// removeFromUser revokes a resource from a user and answers the user's remaining resource_list.
// Revoking what is not granted, or what does not exist, changes nothing.
func (s *Server) removeFromUser(c *gin.Context) {
	var req accessRequest
	if err := s.bindAccess(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, org := c.Request.Context(), orgID(c)
	if err := storage.Revoke(ctx, s.store, org, req.UserID, canonicalID(req.SvcID)); err != nil {
		s.writeError(c, err) // ErrUserNotFound names the user
		return
	}
	refs, err := s.resourceList(ctx, org, req.UserID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Data(http.StatusOK, jsonContentType, userResourcesJSON(req.UserID, refs))
}

// userAnswer is add_to_user's answer: a struct rather than a gin.H map, the same bytes encoded
// with less work and fewer allocations.
type userAnswer struct {
	UserID string `json:"user_id"`
}

// userResourcesJSON is remove_from_user's answer, {"resources":[{"id":…,"name":…},…],
// "user_id":…}, byte for byte as encoding/json writes it from a gin.H map (keys sorted), without
// its reflection, into a buffer sized at once. refs is written as a list even when nil, so that
// resources is always a list, as resourceList's lists (never nil) are.
func userResourcesJSON(userID string, refs []resourceRef) []byte {
	n := len(`{"resources":[],"user_id":""}`) + len(userID)
	for _, r := range refs {
		n += len(`{"id":"","name":""},`) + len(r.ID) + len(r.Name)
	}
	buf := make([]byte, 0, n+n/8) // room for a few escapes
	buf = append(buf, `{"resources":[`...)
	for i, r := range refs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"id":`...)
		buf = jsonstr.Append(buf, r.ID)
		buf = append(buf, `,"name":`...)
		buf = jsonstr.Append(buf, r.Name)
		buf = append(buf, '}')
	}
	buf = append(buf, `],"user_id":`...)
	buf = jsonstr.Append(buf, userID)
	return append(buf, '}')
}
