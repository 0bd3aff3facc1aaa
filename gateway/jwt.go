package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JWTConfig is how a JWTVerifier verifies tokens.
type JWTConfig struct {
	// JWKSURL or JWKSFile (exactly one) holds the JSON Web Key Set of the keys that sign
	// tokens.
	JWKSURL  string
	JWKSFile string
	// Issuer and Audience are what the token's iss must be and its aud must hold.
	Issuer   string
	Audience string
	// UserClaim is the claim that holds the user's id: a non-empty string. Default "sub".
	UserClaim string
	// Leeway is how far the clock may be off when exp, nbf and iat are judged.
	Leeway time.Duration
	// Refresh is how long a key set is used before it is read again; default 5 minutes. A
	// token signed by a key the set does not hold reads it again at once, at most every
	// minRefresh.
	Refresh time.Duration
	// Client fetches JWKSURL; nil means a client that gives up after 5 seconds.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// algorithms are the signature algorithms accepted: the asymmetric ones, so that a key set,
// which is public, can never hold what signs a token.
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// minRefresh is the least time between two reads of the key set caused by unknown keys, so
// that tokens naming made-up keys cannot make Grantry fetch the set for each request.
const minRefresh = 10 * time.Second

// maxJWKSBytes bounds a key set read: real ones are a few kilobytes.
const maxJWKSBytes = 1 << 20

// JWTVerifier verifies signed JWTs against a key set read from a file or a URL, kept in memory
// and read again every Refresh. It is safe for concurrent use.
type JWTVerifier struct {
	cfg JWTConfig

	keys atomic.Pointer[keySet]
	mu   sync.Mutex // one read of the key set at a time
}

type keySet struct {
	set  jose.JSONWebKeySet
	read time.Time // when it was read
}

// NewJWTVerifier returns a verifier of cfg. A key set file is read now, and must be valid; a
// key set URL is fetched at the first token, so that an identity provider that is down does
// not keep Grantry from starting.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if (cfg.JWKSURL == "") == (cfg.JWKSFile == "") {
		return nil, errors.New("JWT verification needs exactly one of a JWKS URL and a JWKS file")
	}
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("JWT verification needs an issuer and an audience")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Minute
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &JWTVerifier{cfg: cfg}
	if cfg.JWKSFile != "" {
		if _, err := v.reload(context.Background(), nil); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Errors of Verify, shown to the client after "The bearer token was refused: ".
var (
	errMalformed   = errors.New("it is not a signed JWT of an accepted algorithm")
	errUnknownKey  = errors.New("no key of the key set verifies it")
	errExpired     = errors.New("it has expired")
	errNotYetValid = errors.New("it is not valid yet")
	errNoExpiry    = errors.New("it has no expiry (exp)")
	errIssuer      = errors.New("its issuer is not the one expected")
	errAudience    = errors.New("its audience is not the one expected")
	errClaims      = errors.New("its claims are not valid")
	errNoUserClaim = errors.New("it names no user")
)

// Verify checks token's signature against the key set, its exp (which it must have), nbf and
// iat against the clock, its iss and aud, and returns its user claim.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (string, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil || len(tok.Headers) != 1 {
		return "", errMalformed
	}
	h := tok.Headers[0]
	ks, err := v.current(ctx)
	if err != nil {
		return "", err
	}
	var std jwt.Claims
	custom := map[string]any{}
	if !verifyWith(ks, h, tok, &std, &custom) {
		// The signer may have rotated its keys since the set was read.
		if ks, err = v.reload(ctx, ks); err != nil || !verifyWith(ks, h, tok, &std, &custom) {
			return "", errUnknownKey
		}
	}
	if std.Expiry == nil {
		return "", errNoExpiry
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.cfg.Now()}, v.cfg.Leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return "", errExpired
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return "", errNotYetValid
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return "", errIssuer
	case errors.Is(err, jwt.ErrInvalidAudience):
		return "", errAudience
	case err != nil:
		return "", errClaims
	}
	user, _ := custom[v.cfg.UserClaim].(string)
	if user == "" {
		return "", errNoUserClaim
	}
	return user, nil
}

// verifyWith reports whether a key of ks that fits the token's header verifies it, and then
// decodes its claims into dest.
func verifyWith(ks *keySet, h jose.Header, tok *jwt.JSONWebToken, dest ...any) bool {
	if ks == nil {
		return false
	}
	keys := ks.set.Keys
	if h.KeyID != "" {
		keys = ks.set.Key(h.KeyID)
	}
	for _, k := range keys {
		if k.IsPublic() && (k.Use == "" || k.Use == "sig") && (k.Algorithm == "" || k.Algorithm == h.Algorithm) {
			if tok.Claims(k, dest...) == nil {
				return true
			}
		}
	}
	return false
}

// current returns the key set, read again when it is older than Refresh. A set that cannot be
// read again is used as it was until it can.
func (v *JWTVerifier) current(ctx context.Context) (*keySet, error) {
	ks := v.keys.Load()
	if ks != nil && v.cfg.Now().Sub(ks.read) < v.cfg.Refresh {
		return ks, nil
	}
	fresh, err := v.reload(ctx, ks)
	if err != nil {
		if ks != nil {
			return ks, nil
		}
		return nil, err
	}
	return fresh, nil
}

// reload reads the key set again unless another caller has since seen had (or read it
// less than minRefresh ago), and returns the set in use. While a set is in use, a read that
// fails leaves it in use, and the time of the try is kept so that it is not tried again at
// once.
func (v *JWTVerifier) reload(ctx context.Context, had *keySet) (*keySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ks := v.keys.Load()
	now := v.cfg.Now()
	if ks != had || ks != nil && now.Sub(ks.read) < minRefresh {
		return ks, nil
	}
	set, err := v.read(ctx)
	if err != nil {
		if ks != nil {
			v.keys.Store(&keySet{set: ks.set, read: now})
		}
		return ks, err
	}
	fresh := &keySet{set: set, read: now}
	v.keys.Store(fresh)
	return fresh, nil
}

// read reads the key set from its file or URL.
func (v *JWTVerifier) read(ctx context.Context) (jose.JSONWebKeySet, error) {
	var raw []byte
	var err error
	if v.cfg.JWKSFile != "" {
		raw, err = os.ReadFile(v.cfg.JWKSFile)
		if err != nil {
			return jose.JSONWebKeySet{}, fmt.Errorf("read JWKS file: %w", err)
		}
	} else if raw, err = v.fetch(ctx); err != nil {
		return jose.JSONWebKeySet{}, err
	}
	set, err := ParseJWKS(raw)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("JWKS of %s: %w", v.source(), err)
	}
	return set, nil
}

func (v *JWTVerifier) source() string {
	if v.cfg.JWKSFile != "" {
		return v.cfg.JWKSFile
	}
	return v.cfg.JWKSURL
}

// fetch gets the key set from its URL, within the client's time limit.
func (v *JWTVerifier) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("JWKS URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.Client.Do(req)
	if err != nil {
		return nil, errors.New("the key set could not be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the key set could not be fetched (HTTP %d)", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil || len(raw) > maxJWKSBytes {
		return nil, errors.New("the key set could not be fetched")
	}
	return raw, nil
}

// ParseJWKS decodes a JSON Web Key Set, which must hold at least one public key.
func ParseJWKS(raw []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	for _, k := range set.Keys {
		if k.IsPublic() {
			return set, nil
		}
	}
	return jose.JSONWebKeySet{}, errors.New("the key set holds no public key")
}
