// Package extauthz is Envoy's external authorization service over gRPC
// (envoy.service.auth.v3.Authorization/Check): it turns Envoy's CheckRequest into a
// gateway.Request, decides it as forward-auth does, and answers a CheckResponse that tells
// Envoy to pass the request on (with Grantry's decision in headers) or to answer the client
// itself (403, 401, 429 or 503 with a JSON body).
package extauthz

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/textproto"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/grantry/grantry/gateway"
)

// KeyMetadata is the gRPC metadata that carries the gateway's Grantry API key; Envoy sends it
// from the grpc_service's initial_metadata, which its clients cannot set.
const KeyMetadata = "x-grantry-key"

// Authenticator finds the organization of a gateway's Grantry API key; *api.Server is one.
type Authenticator interface {
	GatewayCaller(ctx context.Context, key string) (gateway.Caller, error)
}

// Checker decides a gateway's request; *gateway.Gateway is one.
type Checker interface {
	Check(ctx context.Context, req gateway.Request) (gateway.Result, error)
}

// Server answers Envoy's Check calls.
type Server struct {
	authv3.UnimplementedAuthorizationServer
	check   Checker
	auth    Authenticator
	timeout time.Duration
	log     *slog.Logger
}

// New returns a server that authenticates gateways with auth and decides with check, each call
// within timeout (zero: no deadline of its own).
func New(check Checker, auth Authenticator, timeout time.Duration, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{check: check, auth: auth, timeout: timeout, log: log}
}

// Register serves s on g.
func (s *Server) Register(g *grpc.Server) { authv3.RegisterAuthorizationServer(g, s) }

// Check decides one request of Envoy's. Every answer is a CheckResponse, refusals included, so
// that Envoy answers the client with Grantry's status and reason rather than its own.
func (s *Server) Check(ctx context.Context, in *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	var key string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(KeyMetadata); len(v) > 0 {
			key = v[0]
		}
	}
	caller, err := s.auth.GatewayCaller(ctx, key)
	if err != nil {
		return s.failed(ctx, err), nil
	}
	req := Request(in)
	req.OrgID, req.APIKeyID, req.Endpoint = caller.OrgID, caller.APIKeyID, gateway.EndpointExtAuthz
	res, err := s.check.Check(ctx, req)
	if err != nil {
		return s.failed(ctx, err), nil
	}
	return Response(res), nil
}

// Request is the gateway.Request of Envoy's CheckRequest: its method, path (with the query),
// headers (header_map when Envoy sends its raw form), body (raw_body when packed as bytes) and
// request id (the http request's id, else its x-request-id).
func Request(in *authv3.CheckRequest) gateway.Request {
	h := in.GetAttributes().GetRequest().GetHttp()
	header := http.Header{}
	for k, v := range h.GetHeaders() {
		header.Add(textproto.CanonicalMIMEHeaderKey(k), v)
	}
	for _, hv := range h.GetHeaderMap().GetHeaders() {
		v := hv.GetValue()
		if len(hv.GetRawValue()) > 0 {
			v = string(hv.GetRawValue())
		}
		header.Add(textproto.CanonicalMIMEHeaderKey(hv.GetKey()), v)
	}
	body := h.GetRawBody()
	if len(body) == 0 && h.GetBody() != "" {
		body = []byte(h.GetBody())
	}
	id := h.GetId()
	if id == "" {
		id = header.Get("X-Request-Id")
	}
	return gateway.Request{Method: h.GetMethod(), Path: h.GetPath(), Header: header, Body: body, RequestID: id}
}

// Response is the CheckResponse of a decision: OK with Grantry's headers added to the request
// passed on, or a denial that Envoy answers the client with.
func Response(res gateway.Result) *authv3.CheckResponse {
	if res.Outcome == gateway.Allowed {
		return &authv3.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
				Headers: headers("x-grantry-decision-id", res.DecisionID, "x-grantry-user", res.UserID, "x-grantry-model", res.Model),
			}},
		}
	}
	code, status := codes.PermissionDenied, http.StatusForbidden
	hs := headers("x-grantry-reason", res.Reason)
	if res.Outcome == gateway.Unauthenticated {
		code, status = codes.Unauthenticated, http.StatusUnauthorized
		hs = append(hs, headers("www-authenticate", "Bearer")...)
	}
	if res.DecisionID != "" {
		hs = append(hs, headers("x-grantry-decision-id", res.DecisionID)...)
	}
	return denied(code, status, hs, refusal{Detail: res.Detail, Reason: res.Reason, DecisionID: res.DecisionID, UserID: res.UserID, Model: res.Model})
}

// refusal is the JSON body of a denial, as forward-auth writes it.
type refusal struct {
	Detail     string `json:"detail"`
	Reason     string `json:"reason,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	Model      string `json:"model,omitempty"`
}

// failed is the answer to a call that could not be decided: a gateway key that is missing or
// unknown (401), a rate used up (429), or a failure such as the store being unavailable (503):
// Envoy refuses the request in every case.
func (s *Server) failed(ctx context.Context, err error) *authv3.CheckResponse {
	if errors.Is(err, gateway.ErrBadKey) {
		return denied(codes.Unauthenticated, http.StatusUnauthorized, headers("www-authenticate", "Bearer"), refusal{Detail: "Not authenticated"})
	}
	if rl, ok := errors.AsType[*gateway.RateLimitedError](err); ok {
		secs := strconv.Itoa(int(rl.RetryAfter.Seconds()))
		return denied(codes.ResourceExhausted, http.StatusTooManyRequests, headers("retry-after", secs), refusal{Detail: "Too many requests with this API key; retry later."})
	}
	s.log.LogAttrs(ctx, slog.LevelError, "ext_authz check failed; denied", slog.String("error", err.Error()))
	return denied(codes.Unavailable, http.StatusServiceUnavailable, headers("retry-after", "1"), refusal{Detail: "Grantry could not decide; try again shortly."})
}

func denied(code codes.Code, status int, hs []*corev3.HeaderValueOption, body refusal) *authv3.CheckResponse {
	raw, _ := json.Marshal(body) // a struct of strings always encodes
	hs = append(hs, headers("content-type", "application/json")...)
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(code), Message: body.Detail},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(status)},
			Headers: hs,
			Body:    string(raw),
		}},
	}
}

// headers makes header options of key, value pairs, each replacing any header of its name.
func headers(kv ...string) []*corev3.HeaderValueOption {
	out := make([]*corev3.HeaderValueOption, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: kv[i], Value: kv[i+1]},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return out
}
