// Package gateway decides the requests that an HTTP gateway or proxy (nginx, Caddy, Traefik,
// Envoy) asks about before it passes them to a model provider: it finds the user (a header the
// gateway's authentication set, or a verified JWT) and the model (the OpenAI-compatible "model"
// of a JSON body, else a header, else a path pattern), maps the model's name to the
// organization's registered models, decides, and records the decision. It knows no HTTP
// framework and no wire protocol: the forward-auth handler (package api) and the Envoy
// ext_authz server (package extauthz) turn their requests into a Request and a Result back
// into their answers.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/grantry/grantry/internal/decisionlog"
)

// Decider answers whether the organization's user may use every one of resourceIDs, and which
// revision of the policy decided. It fails closed: an error comes with false.
type Decider interface {
	// Decide answers whether the user may use every one of resourceIDs, asked by caller (the
	// policy reads its API key), and which policy revision decided.
	Decide(ctx context.Context, caller Caller, userID string, resourceIDs []string) (allowed bool, revision string, err error)
}

// Models finds the organization's registered models.
type Models interface {
	// ModelIDs returns the ids of the organization's models whose model_name is name, none
	// when it has no such model.
	ModelIDs(ctx context.Context, orgID, name string) ([]string, error)
	// UsableModels returns the caller's organization's models that the user may use, as the
	// caller asks, oldest first, and none when the organization has no such user.
	UsableModels(ctx context.Context, caller Caller, userID string) ([]Model, error)
}

// Recorder takes the record of a decision, gives it its id, and returns the id. It returns at
// once and never fails: a decision is not slowed by its logging.
type Recorder interface {
	RecordDecision(e decisionlog.Entry) (id string)
}

// Model is a registered model as the model list shows it.
type Model struct {
	Name      string
	OwnedBy   string // the model's integration_type
	CreatedAt time.Time
}

// TokenVerifier verifies a bearer token and returns the user it names; *JWTVerifier is one.
// Its errors are shown to the client, so they say what is wrong without repeating the token.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (userID string, err error)
}

// Config is how requests are read.
type Config struct {
	// UserHeader is the header that the gateway's own authentication fills with the user's
	// id. It is read only when JWT is nil.
	UserHeader string
	// JWT, when set, is where users come from: the token in JWTHeader (Authorization: the
	// bearer token), verified; UserHeader is then ignored.
	JWT       TokenVerifier
	JWTHeader string
	// ModelHeader names the header that gives the model when the request carries no JSON
	// body naming one; empty = none.
	ModelHeader string
	// ModelPath is a path pattern with one {model} segment (such as
	// /openai/deployments/{model}/) that gives the model when neither the body nor
	// ModelHeader does; empty = none.
	ModelPath string
	// Aliases maps names that requests may use to registered model_names.
	Aliases map[string]string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Gateway decides gateways' requests. It is safe for concurrent use.
type Gateway struct {
	cfg      Config
	path     pathPattern
	decider  Decider
	models   Models
	recorder Recorder
	now      func() time.Time
}

// New returns a gateway that reads requests as cfg says and decides through d, m and r.
// It returns an error if cfg.ModelPath is not a valid pattern.
func New(cfg Config, d Decider, m Models, r Recorder) (*Gateway, error) {
	p, err := parsePathPattern(cfg.ModelPath)
	if err != nil {
		return nil, err
	}
	if cfg.JWTHeader == "" {
		cfg.JWTHeader = "Authorization"
	}
	g := &Gateway{cfg: cfg, path: p, decider: d, models: m, recorder: r, now: cfg.Now}
	if g.now == nil {
		g.now = time.Now
	}
	return g, nil
}

// Request is one request that a gateway asks about, and who asks.
type Request struct {
	// Method and Path (with its query) are the original request's, as the client sent them.
	Method string
	Path   string
	// Header holds the original request's headers (canonical keys, as net/http keeps them).
	Header http.Header
	// Body is the original request's body; nil when the gateway did not send it.
	Body []byte
	// RequestID is the gateway's id of the request, recorded with the decision.
	RequestID string
	// OrgID and APIKeyID name the organization whose Grantry API key the gateway sent.
	OrgID    string
	APIKeyID string
	// Endpoint names the way the gateway asked, for the decision log (EndpointForwardAuth,
	// EndpointExtAuthz).
	Endpoint string
}

// The endpoints whose decisions are logged, as decisionlog.Entry.Endpoint names them.
const (
	EndpointForwardAuth = "forward_auth"
	EndpointExtAuthz    = "ext_authz"
)

// Outcome is what a gateway is told to do with a request.
type Outcome int

// The outcomes.
const (
	Allowed         Outcome = iota // pass it on
	Denied                         // 403: the user may not use the model, or none was named
	Unauthenticated                // 401: no user could be found
)

// The reasons a request is refused, as Result.Reason gives them.
const (
	ReasonNoUser       = "no_user"       // no user header, or no token
	ReasonInvalidToken = "invalid_token" // a token that does not verify
	ReasonNoModel      = "no_model"      // the request names no model
	ReasonNotPermitted = "not_permitted" // the user may not use the model, or it is not registered
)

// Result is the answer to a Request.
type Result struct {
	Outcome Outcome
	// Reason is one of the Reason* codes when Outcome is not Allowed; Detail is one sentence
	// for the client.
	Reason string
	Detail string
	// DecisionID is the decision log's id of the decision; empty when no user was found.
	DecisionID string
	UserID     string
	// Model is the name the request asked for; ResourceIDs the registered models it maps to.
	Model       string
	ResourceIDs []string
}

// Check decides a request: it finds the user and the model, asks whether the user may use
// the model, and records the decision. The request is allowed when the user may use one of
// the organization's models of that name (several may share it: a custom model and a
// provider's). An error (the store unavailable) allows nothing.
func (g *Gateway) Check(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	userID, res := g.User(ctx, req.Header)
	if res.Outcome != Allowed {
		return res, nil
	}
	res = Result{Outcome: Denied, Reason: ReasonNotPermitted, UserID: userID}
	name, ok := g.model(req)
	if !ok {
		res.Reason, res.Detail = ReasonNoModel, "The request names no model."
		res.DecisionID = g.record(req, start, userID, nil, false, "")
		return res, nil
	}
	res.Model = name
	ids, err := g.models.ModelIDs(ctx, req.OrgID, g.resolve(name))
	if err != nil {
		return Result{}, fmt.Errorf("models named %q: %w", name, err)
	}
	allowed, revision := false, ""
	for _, id := range ids {
		if allowed, revision, err = g.decider.Decide(ctx, Caller{OrgID: req.OrgID, APIKeyID: req.APIKeyID}, userID, []string{id}); err != nil {
			return Result{}, fmt.Errorf("decide %s for %s: %w", id, userID, err)
		}
		if allowed {
			ids = []string{id}
			break
		}
	}
	res.ResourceIDs = ids
	res.DecisionID = g.record(req, start, userID, ids, allowed, revision)
	if allowed {
		res.Outcome, res.Reason = Allowed, ""
		return res, nil
	}
	// An unregistered model is refused as a model the user may not use, so that the answer
	// reveals nothing of what the organization has registered.
	res.Detail = fmt.Sprintf("User %s may not use model %s.", userID, name)
	return res, nil
}

// record logs a decision and returns its id.
func (g *Gateway) record(req Request, start time.Time, userID string, ids []string, allowed bool, revision string) string {
	now := g.now().UTC().Truncate(time.Millisecond)
	return g.recorder.RecordDecision(decisionlog.Entry{
		Time:           now,
		RequestID:      req.RequestID,
		OrgID:          req.OrgID,
		APIKeyID:       req.APIKeyID,
		Endpoint:       req.Endpoint,
		UserID:         userID,
		ResourceIDs:    ids,
		Allowed:        allowed,
		PolicyRevision: revision,
		Duration:       time.Since(start),
	})
}

// User finds the request's user: from the verified token when JWT is configured, else from
// UserHeader. When there is none, the Result says why (Unauthenticated).
func (g *Gateway) User(ctx context.Context, h http.Header) (string, Result) {
	if g.cfg.JWT != nil {
		token := bearer(h.Get(g.cfg.JWTHeader))
		if token == "" {
			return "", unauthenticated(ReasonNoUser, "No bearer token: the request names no user.")
		}
		user, err := g.cfg.JWT.Verify(ctx, token)
		if err != nil {
			return "", unauthenticated(ReasonInvalidToken, "The bearer token was refused: "+err.Error())
		}
		return user, Result{Outcome: Allowed}
	}
	if g.cfg.UserHeader == "" {
		return "", unauthenticated(ReasonNoUser, "Grantry's gateway has no source of users configured (GRANTRY_GATEWAY_USER_HEADER or the GRANTRY_GATEWAY_JWT_* settings).")
	}
	user := h.Get(g.cfg.UserHeader)
	if user == "" {
		return "", unauthenticated(ReasonNoUser, "The request names no user ("+g.cfg.UserHeader+" is missing).")
	}
	return user, Result{Outcome: Allowed}
}

func unauthenticated(reason, detail string) Result {
	return Result{Outcome: Unauthenticated, Reason: reason, Detail: detail}
}

// bearer returns the token of an Authorization-style value: the part after "Bearer ", or the
// whole value when it names no scheme.
func bearer(v string) string {
	if scheme, token, ok := strings.Cut(v, " "); ok {
		if !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(token)
	}
	return v
}

// model returns the model name a request asks for: the "model" of a JSON object body, else
// ModelHeader, else the {model} segment of ModelPath.
func (g *Gateway) model(req Request) (string, bool) {
	if name, ok := BodyModel(req.Body); ok {
		return name, true
	}
	if g.cfg.ModelHeader != "" {
		if name := req.Header.Get(g.cfg.ModelHeader); name != "" {
			return name, true
		}
	}
	return g.path.model(req.Path)
}

// resolve maps an alias to the model_name it stands for.
func (g *Gateway) resolve(name string) string {
	if to, ok := g.cfg.Aliases[name]; ok {
		return to
	}
	return name
}

// BodyModel returns the "model" of body when body is a JSON object whose "model" is a
// non-empty string, as OpenAI-compatible requests (chat completions, completions, embeddings,
// responses) carry it.
func BodyModel(body []byte) (string, bool) {
	if len(body) == 0 {
		return "", false
	}
	var b struct {
		Model *string `json:"model"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Model == nil || *b.Model == "" {
		return "", false
	}
	return *b.Model, true
}

// ModelList is the OpenAI-compatible answer of GET /v1/models.
type ModelList struct {
	Object string       `json:"object"`
	Data   []ModelEntry `json:"data"`
}

// ModelEntry is one model of a ModelList.
type ModelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ErrUnauthenticated is returned by List when no user can be found; the Result says why.
var ErrUnauthenticated = errors.New("no user")

// List returns the models the request's user may use, in the shape of OpenAI's GET /v1/models,
// each name once, aliases included (after the models they stand for). A user the organization
// does not have may use none.
func (g *Gateway) List(ctx context.Context, caller Caller, h http.Header) (ModelList, Result, error) {
	userID, res := g.User(ctx, h)
	if res.Outcome != Allowed {
		return ModelList{}, res, ErrUnauthenticated
	}
	models, err := g.models.UsableModels(ctx, caller, userID)
	if err != nil {
		return ModelList{}, res, fmt.Errorf("models %s may use: %w", userID, err)
	}
	list := ModelList{Object: "list", Data: []ModelEntry{}}
	seen := map[string]ModelEntry{}
	for _, m := range models {
		if _, dup := seen[m.Name]; dup {
			continue
		}
		e := ModelEntry{ID: m.Name, Object: "model", Created: m.CreatedAt.Unix(), OwnedBy: m.OwnedBy}
		seen[m.Name] = e
		list.Data = append(list.Data, e)
	}
	for alias, to := range sortedAliases(g.cfg.Aliases) {
		if e, ok := seen[to]; ok {
			if _, dup := seen[alias]; !dup {
				e.ID = alias
				seen[alias] = e
				list.Data = append(list.Data, e)
			}
		}
	}
	return list, Result{Outcome: Allowed, UserID: userID}, nil
}

// pathPattern is a parsed ModelPath: the text before and after its {model} segment.
type pathPattern struct {
	prefix, suffix string
	set            bool
}

func parsePathPattern(p string) (pathPattern, error) {
	if p == "" {
		return pathPattern{}, nil
	}
	prefix, suffix, ok := strings.Cut(p, "{model}")
	if !ok || !strings.HasPrefix(p, "/") || !strings.HasSuffix(prefix, "/") || strings.Contains(suffix, "{model}") ||
		suffix != "" && !strings.HasPrefix(suffix, "/") {
		return pathPattern{}, fmt.Errorf("model path %q must start with / and hold {model} once, as a whole segment (such as /openai/deployments/{model}/)", p)
	}
	return pathPattern{prefix: prefix, suffix: suffix, set: true}, nil
}

// model returns the {model} segment of path (its query left out), unescaped.
func (p pathPattern) model(path string) (string, bool) {
	if !p.set {
		return "", false
	}
	path, _, _ = strings.Cut(path, "?")
	rest, ok := strings.CutPrefix(path, p.prefix)
	if !ok {
		return "", false
	}
	seg, tail, _ := strings.Cut(rest, "/")
	if p.suffix != "" && !strings.HasPrefix("/"+tail, p.suffix) {
		return "", false
	}
	name, err := url.PathUnescape(seg)
	if err != nil || name == "" {
		return "", false
	}
	return name, true
}

// sortedAliases yields aliases in the order of their names, so that a list is the same every
// time.
func sortedAliases(aliases map[string]string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, alias := range slices.Sorted(maps.Keys(aliases)) {
			if !yield(alias, aliases[alias]) {
				return
			}
		}
	}
}

// Caller is the organization, and the id of the API key, that a gateway asks for.
type Caller struct {
	OrgID    string
	APIKeyID string
}

// ErrBadKey means that the gateway sent no Grantry API key, or one that is unknown or revoked.
var ErrBadKey = errors.New("the gateway's Grantry API key is missing, unknown or revoked")

// RateLimitedError means that the gateway's key has used up its rate; it may ask again after
// RetryAfter.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many requests with this API key; retry in %s", e.RetryAfter)
}
