package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/storage"
)

// GatewayKeyHeader carries the Grantry API key of a gateway that asks about its requests. It is
// not Authorization, which a gateway passes on from its client (with the user's token in it).
const GatewayKeyHeader = "X-Grantry-Key"

// The headers of a forward-auth answer.
const (
	decisionIDHeader    = "X-Grantry-Decision-Id"
	gatewayUserHeader   = "X-Grantry-User"
	gatewayModelHeader  = "X-Grantry-Model"
	gatewayReasonHeader = "X-Grantry-Reason"
	// accelRedirectHeader, sent by nginx, asks for an allowed request to be answered with
	// X-Accel-Redirect to it (a named location), so that nginx, having sent Grantry the whole
	// request, body included, passes it on to the model provider itself.
	accelRedirectHeader = "X-Grantry-Accel-Redirect"
	// forwardedURIHeader and forwardedMethodHeader are the original request's, as Caddy and
	// Traefik send them and the nginx configurations set them.
	forwardedURIHeader    = "X-Forwarded-Uri"
	forwardedMethodHeader = "X-Forwarded-Method"
)

// DefaultGatewayMaxBody is how large a request body the forward-auth endpoint reads unless told
// otherwise: model requests carry long conversations.
const DefaultGatewayMaxBody = 8 << 20

// SetGateway makes the gateway endpoints (/gateway/...) decide with g; until it is called they
// answer 404. It must be called before the server serves.
func (s *Server) SetGateway(g *gateway.Gateway) { s.gateway = g }

// gatewayRoutes serves forward-auth and the OpenAI-compatible model list. A gateway names its
// organization with GatewayKeyHeader; every scope of key may use them, as every scope may check.
func (s *Server) gatewayRoutes(r *gin.Engine) {
	g := r.Group("/gateway", s.gatewayOn, s.authenticateGateway, s.rateLimit)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		g.Handle(m, "/auth", s.forwardAuth)
		g.Handle(m, "/auth/*path", s.forwardAuth)
	}
	withSlash(g, http.MethodGet, "/v1/models", s.gatewayModels)
}

func (s *Server) gatewayOn(c *gin.Context) {
	if s.gateway == nil {
		s.writeError(c, errNotFound)
		return
	}
	c.Next()
}

// authenticateGateway is authenticate for a key sent in GatewayKeyHeader.
func (s *Server) authenticateGateway(c *gin.Context) {
	key := c.GetHeader(GatewayKeyHeader)
	if token, ok := apikey.FromHeader(key); ok {
		key = token
	}
	s.authenticateKey(c, key, key != "")
}

// forwardAuth answers a gateway's question about one of its requests: 200 to pass it on, 403
// with a JSON reason, 401 when it names no user. The request asked about is this one, as the
// gateway sent it: its method and path (or X-Forwarded-Method and X-Forwarded-Uri, or the path
// after /gateway/auth), its headers and its body.
func (s *Server) forwardAuth(c *gin.Context) {
	body, err := readAll(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			err = tooLarge(s.gatewayMaxBody)
		}
		s.writeError(c, err)
		return
	}
	req := gateway.Request{
		Method: c.Request.Method, Path: c.Param("path"), Header: c.Request.Header, Body: body,
		RequestID: requestID(c), OrgID: orgID(c), APIKeyID: requestOf(c).keyID, Endpoint: gateway.EndpointForwardAuth,
	}
	if req.Path == "" {
		req.Path = "/"
	}
	if q := c.Request.URL.RawQuery; q != "" {
		req.Path += "?" + q
	}
	if v := c.GetHeader(forwardedURIHeader); v != "" {
		req.Path = v
	}
	if v := c.GetHeader(forwardedMethodHeader); v != "" {
		req.Method = v
	}
	res, err := s.gateway.Check(c.Request.Context(), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.writeGatewayResult(c, res)
}

// writeGatewayResult writes a forward-auth answer, its facts also in headers for the gateway to
// pass on.
func (s *Server) writeGatewayResult(c *gin.Context, res gateway.Result) {
	h := c.Writer.Header()
	if res.DecisionID != "" {
		h.Set(decisionIDHeader, res.DecisionID)
	}
	switch res.Outcome {
	case gateway.Allowed:
		h.Set(gatewayUserHeader, headerSafe(res.UserID))
		h.Set(gatewayModelHeader, headerSafe(res.Model))
		if to := c.GetHeader(accelRedirectHeader); strings.HasPrefix(to, "@") {
			h.Set("X-Accel-Redirect", to)
		}
		if c.Request.Method == http.MethodHead {
			h.Set("Content-Type", jsonContentType)
			c.Status(http.StatusOK)
			return
		}
		c.JSON(http.StatusOK, gatewayAnswer{Allowed: true, DecisionID: res.DecisionID, UserID: res.UserID, Model: res.Model})
		return
	case gateway.Unauthenticated:
		h.Set("WWW-Authenticate", "Bearer")
	}
	h.Set(gatewayReasonHeader, res.Reason)
	status := http.StatusForbidden
	if res.Outcome == gateway.Unauthenticated {
		status = http.StatusUnauthorized
	}
	c.AbortWithStatusJSON(status, gatewayRefusal{Detail: res.Detail, Reason: res.Reason, DecisionID: res.DecisionID, UserID: res.UserID, Model: res.Model})
}

// gatewayAnswer is forward-auth's 200 body.
type gatewayAnswer struct {
	Allowed    bool   `json:"allowed"`
	DecisionID string `json:"decision_id"`
	UserID     string `json:"user_id"`
	Model      string `json:"model"`
}

// gatewayRefusal is forward-auth's 401 and 403 body: the contract's {"detail"} with a reason
// code, and what the decision was about when it was made.
type gatewayRefusal struct {
	Detail     string `json:"detail"`
	Reason     string `json:"reason"`
	DecisionID string `json:"decision_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	Model      string `json:"model,omitempty"`
}

// headerSafe is v without the bytes a header value may not hold.
func headerSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, v)
}

// gatewayModels answers GET /v1/models for the request's user: the models they may use, in
// OpenAI's shape, so that a gateway can route its clients' model list here.
func (s *Server) gatewayModels(c *gin.Context) {
	list, res, err := s.gateway.List(c.Request.Context(), gateway.Caller{OrgID: orgID(c), APIKeyID: requestOf(c).keyID}, c.Request.Header)
	if errors.Is(err, gateway.ErrUnauthenticated) {
		s.writeGatewayResult(c, res)
		return
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, list)
}

// Decide answers whether the organization's user may use every one of ids, as can_user_access
// (one id) and can_user_access_all (several) answer, asked by the caller's API key, and which
// policy revision decided. It is what the gateway decides with (gateway.Decider); it logs
// nothing itself.
func (s *Server) Decide(ctx context.Context, caller gateway.Caller, userID string, ids []string) (bool, string, error) {
	d, err := s.decider.Decide(ctx, authz.Question{OrgID: caller.OrgID, UserID: userID, ResourceIDs: ids, All: len(ids) != 1, APIKeyID: caller.APIKeyID, Now: s.now()})
	return d.Allowed, d.Revision, err
}

// RecordDecision gives a decision of the gateway its id and hands it to the decision log (if
// any); gateway.Recorder.
func (s *Server) RecordDecision(e decisionlog.Entry) string {
	e.ID = s.decisionIDs.New(e.Time)
	if s.decisions != nil {
		s.decisions.Record(e)
	}
	return e.ID
}

// ModelIDs returns the ids of the organization's models named name (gateway.Models).
func (s *Server) ModelIDs(ctx context.Context, orgID, name string) ([]string, error) {
	ids, err := s.decider.ResourcesNamed(ctx, orgID, storage.KindModel, name)
	if err != nil {
		return nil, fmt.Errorf("models of %s: %w", orgID, err)
	}
	return ids, nil
}

// UsableModels returns the caller's organization's models that the user may use
// (gateway.Models), as GET /llm_integration/list?user_id= lists them; none for a user it does
// not have.
func (s *Server) UsableModels(ctx context.Context, caller gateway.Caller, userID string) ([]gateway.Model, error) {
	rs, err := s.store.ListResources(ctx, caller.OrgID, storage.KindModel)
	if err != nil {
		return nil, fmt.Errorf("models of %s: %w", caller.OrgID, err)
	}
	rs, err = s.usable(ctx, authz.Question{OrgID: caller.OrgID, UserID: userID, APIKeyID: caller.APIKeyID, Now: s.now()}, rs)
	if errors.Is(err, errUserNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]gateway.Model, len(rs))
	for i, r := range rs {
		out[i] = gateway.Model{Name: r.Name, OwnedBy: r.Source, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// GatewayCaller returns the organization of a gateway's Grantry API key, as the HTTP endpoints
// authenticate and rate-limit it, for the Envoy ext_authz server: gateway.ErrBadKey for a key
// that is missing or unknown, a *gateway.RateLimitedError when the key has used up its rate.
func (s *Server) GatewayCaller(ctx context.Context, key string) (gateway.Caller, error) {
	if token, ok := apikey.FromHeader(key); ok {
		key = token
	}
	if key == "" {
		return gateway.Caller{}, gateway.ErrBadKey
	}
	k, err := s.keys.Lookup(ctx, apikey.Sum(key), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return gateway.Caller{}, gateway.ErrBadKey
	}
	if err != nil {
		return gateway.Caller{}, err
	}
	if s.limiter != nil {
		if ok, wait := s.limiter.take(k.ID); !ok {
			return gateway.Caller{}, &gateway.RateLimitedError{RetryAfter: time.Duration(retryAfter(wait)) * time.Second}
		}
	}
	return gateway.Caller{OrgID: k.OrgID, APIKeyID: k.ID}, nil
}

// RequestTimeout is the deadline of every request, zero for none; the ext_authz server gives
// its calls the same.
func (s *Server) RequestTimeout() time.Duration { return s.requestTimeout }

// tooLarge is the 413 of a body over limit.
func tooLarge(limit int64) error {
	if limit == maxBodyBytes {
		return errTooLarge
	}
	return &Error{Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf("Request body is larger than %d bytes (GRANTRY_GATEWAY_MAX_BODY).", limit)}
}

// bodyLimit is the largest body read on path.
func (s *Server) bodyLimit(path string) int64 {
	if strings.HasPrefix(path, "/gateway/") {
		return s.gatewayMaxBody
	}
	return maxBodyBytes
}

var (
	_ gateway.Decider  = (*Server)(nil)
	_ gateway.Models   = (*Server)(nil)
	_ gateway.Recorder = (*Server)(nil)
)
