package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// DefaultGatewayMaxBody is the largest request body forward-auth reads when
// GRANTRY_GATEWAY_MAX_BODY is not set: model requests carry long conversations.
const DefaultGatewayMaxBody = 8 << 20

// Gateway holds the settings of the endpoints that gateways ask before they pass requests on to
// model providers (forward-auth, Envoy's ext_authz, the model list).
type Gateway struct {
	UserHeader string // GRANTRY_GATEWAY_USER_HEADER: the header the gateway's authentication fills with the user

	JWKSURL      string        // GRANTRY_GATEWAY_JWKS_URL
	JWKSFile     string        // GRANTRY_GATEWAY_JWKS_FILE
	JWTIssuer    string        // GRANTRY_GATEWAY_JWT_ISSUER
	JWTAudience  string        // GRANTRY_GATEWAY_JWT_AUDIENCE
	JWTUserClaim string        // GRANTRY_GATEWAY_JWT_USER_CLAIM
	JWTHeader    string        // GRANTRY_GATEWAY_JWT_HEADER
	JWTLeeway    time.Duration // GRANTRY_GATEWAY_JWT_LEEWAY

	ModelHeader  string // GRANTRY_GATEWAY_MODEL_HEADER
	ModelPath    string // GRANTRY_GATEWAY_MODEL_PATH: a path pattern with {model}
	ModelAliases string // GRANTRY_GATEWAY_MODEL_ALIASES: alias=model_name,…
	MaxBody      int    // GRANTRY_GATEWAY_MAX_BODY: bytes

	ExtAuthzAddr string // GRANTRY_EXTAUTHZ_ADDR: Envoy ext_authz gRPC listen address; empty = off
}

// DefaultGateway returns the gateway settings used when nothing is set.
func DefaultGateway() Gateway {
	return Gateway{JWTUserClaim: "sub", JWTHeader: "Authorization", MaxBody: DefaultGatewayMaxBody}
}

// JWT reports whether users come from verified JWTs.
func (g Gateway) JWT() bool { return g.JWKSURL != "" || g.JWKSFile != "" }

// Aliases parses ModelAliases.
func (g Gateway) Aliases() (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(g.ModelAliases) == "" {
		return out, nil
	}
	for item := range strings.SplitSeq(g.ModelAliases, ",") {
		alias, name, ok := strings.Cut(strings.TrimSpace(item), "=")
		alias, name = strings.TrimSpace(alias), strings.TrimSpace(name)
		if !ok || alias == "" || name == "" {
			return nil, fmt.Errorf("GRANTRY_GATEWAY_MODEL_ALIASES: %q is not alias=model_name", item)
		}
		if _, dup := out[alias]; dup {
			return nil, fmt.Errorf("GRANTRY_GATEWAY_MODEL_ALIASES: alias %q is given twice", alias)
		}
		out[alias] = name
	}
	return out, nil
}

func (c *Config) readGateway(getenv func(string) string) {
	g := &c.Gateway
	for name, field := range map[string]*string{
		"GRANTRY_GATEWAY_USER_HEADER":    &g.UserHeader,
		"GRANTRY_GATEWAY_JWKS_URL":       &g.JWKSURL,
		"GRANTRY_GATEWAY_JWKS_FILE":      &g.JWKSFile,
		"GRANTRY_GATEWAY_JWT_ISSUER":     &g.JWTIssuer,
		"GRANTRY_GATEWAY_JWT_AUDIENCE":   &g.JWTAudience,
		"GRANTRY_GATEWAY_JWT_USER_CLAIM": &g.JWTUserClaim,
		"GRANTRY_GATEWAY_JWT_HEADER":     &g.JWTHeader,
		"GRANTRY_GATEWAY_MODEL_HEADER":   &g.ModelHeader,
		"GRANTRY_GATEWAY_MODEL_PATH":     &g.ModelPath,
		"GRANTRY_GATEWAY_MODEL_ALIASES":  &g.ModelAliases,
		"GRANTRY_EXTAUTHZ_ADDR":          &g.ExtAuthzAddr,
	} {
		if v := getenv(name); v != "" {
			*field = v
		}
	}
	if v := getenv("GRANTRY_GATEWAY_JWT_LEEWAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			d = -1
		}
		g.JWTLeeway = d
	}
	readInt(getenv, "GRANTRY_GATEWAY_MAX_BODY", &g.MaxBody)
}

func (c *Config) registerGatewayFlags(fs *flag.FlagSet) {
	g := &c.Gateway
	fs.StringVar(&g.UserHeader, "gateway-user-header", g.UserHeader, "header the gateway's authentication fills with the user's id (GRANTRY_GATEWAY_USER_HEADER)")
	fs.StringVar(&g.JWKSURL, "gateway-jwks-url", g.JWKSURL, "URL of the JSON Web Key Set that verifies users' JWTs (GRANTRY_GATEWAY_JWKS_URL)")
	fs.StringVar(&g.JWKSFile, "gateway-jwks-file", g.JWKSFile, "file of the JSON Web Key Set that verifies users' JWTs (GRANTRY_GATEWAY_JWKS_FILE)")
	fs.StringVar(&g.JWTIssuer, "gateway-jwt-issuer", g.JWTIssuer, "the iss users' JWTs must have (GRANTRY_GATEWAY_JWT_ISSUER)")
	fs.StringVar(&g.JWTAudience, "gateway-jwt-audience", g.JWTAudience, "the aud users' JWTs must hold (GRANTRY_GATEWAY_JWT_AUDIENCE)")
	fs.StringVar(&g.JWTUserClaim, "gateway-jwt-user-claim", g.JWTUserClaim, "the claim of a JWT that holds the user's id (GRANTRY_GATEWAY_JWT_USER_CLAIM)")
	fs.StringVar(&g.JWTHeader, "gateway-jwt-header", g.JWTHeader, "the header that carries the JWT, as a bearer token or alone (GRANTRY_GATEWAY_JWT_HEADER)")
	fs.DurationVar(&g.JWTLeeway, "gateway-jwt-leeway", g.JWTLeeway, "how far clocks may be off when a JWT's exp, nbf and iat are judged (GRANTRY_GATEWAY_JWT_LEEWAY)")
	fs.StringVar(&g.ModelHeader, "gateway-model-header", g.ModelHeader, "header naming the model when the body does not (GRANTRY_GATEWAY_MODEL_HEADER)")
	fs.StringVar(&g.ModelPath, "gateway-model-path", g.ModelPath, "path pattern with {model}, naming the model when neither the body nor the header does (GRANTRY_GATEWAY_MODEL_PATH)")
	fs.StringVar(&g.ModelAliases, "gateway-model-aliases", g.ModelAliases, "alias=model_name,… names that requests may use for registered models (GRANTRY_GATEWAY_MODEL_ALIASES)")
	fs.IntVar(&g.MaxBody, "gateway-max-body", g.MaxBody, "largest request body forward-auth reads, in bytes (GRANTRY_GATEWAY_MAX_BODY)")
	fs.StringVar(&g.ExtAuthzAddr, "extauthz-addr", g.ExtAuthzAddr, "listen address of the Envoy ext_authz gRPC server; empty = off (GRANTRY_EXTAUTHZ_ADDR)")
}

// validateGateway reports what is wrong with the gateway settings.
func (c Config) validateGateway() []error {
	g := c.Gateway
	var errs []error
	for name, v := range map[string]string{
		"GRANTRY_GATEWAY_USER_HEADER": g.UserHeader, "GRANTRY_GATEWAY_JWT_HEADER": g.JWTHeader, "GRANTRY_GATEWAY_MODEL_HEADER": g.ModelHeader,
	} {
		if v != "" && !validHeaderName(v) {
			errs = append(errs, fmt.Errorf("%s %q is not a header name", name, v))
		}
	}
	if g.JWKSURL != "" && g.JWKSFile != "" {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_JWKS_URL and GRANTRY_GATEWAY_JWKS_FILE may not both be set"))
	}
	if u, err := url.Parse(g.JWKSURL); g.JWKSURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_JWKS_URL must be an http:// or https:// URL"))
	}
	if g.JWT() {
		if g.JWTIssuer == "" {
			errs = append(errs, errors.New("GRANTRY_GATEWAY_JWT_ISSUER must be set with a JWKS"))
		}
		if g.JWTAudience == "" {
			errs = append(errs, errors.New("GRANTRY_GATEWAY_JWT_AUDIENCE must be set with a JWKS"))
		}
	} else if g.JWTIssuer != "" || g.JWTAudience != "" {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_JWT_ISSUER and _AUDIENCE need GRANTRY_GATEWAY_JWKS_URL or GRANTRY_GATEWAY_JWKS_FILE"))
	}
	if g.JWTUserClaim == "" {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_JWT_USER_CLAIM may not be empty"))
	}
	if g.JWTLeeway < 0 {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_JWT_LEEWAY must be a duration such as 30s, 0 or more"))
	}
	if g.ModelPath != "" && (!strings.HasPrefix(g.ModelPath, "/") || strings.Count(g.ModelPath, "{model}") != 1) {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_MODEL_PATH must start with / and hold {model} once, such as /openai/deployments/{model}/"))
	}
	if _, err := g.Aliases(); err != nil {
		errs = append(errs, err)
	}
	if g.MaxBody < 1 {
		errs = append(errs, errors.New("GRANTRY_GATEWAY_MAX_BODY must be a whole number of bytes, 1 or more"))
	}
	if g.ExtAuthzAddr != "" {
		if _, _, err := net.SplitHostPort(g.ExtAuthzAddr); err != nil {
			errs = append(errs, fmt.Errorf("GRANTRY_EXTAUTHZ_ADDR %q is not host:port", g.ExtAuthzAddr))
		}
	}
	return errs
}

// validHeaderName reports whether v is an HTTP header name (RFC 9110 token).
func validHeaderName(v string) bool {
	for _, r := range v {
		if r > '~' || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return v != ""
}
