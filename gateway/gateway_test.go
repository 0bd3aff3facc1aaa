package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func TestJWTVerifier(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	raw, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	v, err := NewJWTVerifier(JWTConfig{JWKSFile: file, Issuer: "https://idp/", Audience: "llm", UserClaim: "email", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey, c jwt.Claims, email string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
		tok, err := jwt.Signed(s).Claims(c).Claims(map[string]any{"email": email}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := jwt.Claims{Issuer: "https://idp/", Audience: jwt.Audience{"llm"}, Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	with := func(f func(*jwt.Claims)) jwt.Claims { c := good; f(&c); return c }
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"valid", sign(key, good, "ada@example.com"), nil},
		{"signed by another key", sign(other, good, "ada@example.com"), errUnknownKey},
		{"expired", sign(key, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Second)) }), "a"), errExpired},
		{"no expiry", sign(key, with(func(c *jwt.Claims) { c.Expiry = nil }), "a"), errNoExpiry},
		{"not yet valid", sign(key, with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)) }), "a"), errNotYetValid},
		{"another issuer", sign(key, with(func(c *jwt.Claims) { c.Issuer = "https://evil/" }), "a"), errIssuer},
		{"another audience", sign(key, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other"} }), "a"), errAudience},
		{"no user claim", sign(key, good, ""), errNoUserClaim},
		{"not a JWT", "abc.def", errMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, err := v.Verify(context.Background(), tt.token)
			if err != tt.want {
				t.Fatalf("Verify = %q, %v; want %v", user, err, tt.want)
			}
			if tt.want == nil && user != "ada@example.com" {
				t.Errorf("user %q", user)
			}
		})
	}
}

func TestPathPattern(t *testing.T) {
	p, err := parsePathPattern("/openai/deployments/{model}/")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/openai/deployments/gpt-4o/chat/completions?api-version=1": "gpt-4o",
		"/openai/deployments/my%20model/embeddings":                 "my model",
		"/openai/deployments//chat":                                 "",
		"/v1/chat/completions":                                      "",
	} {
		if got, _ := p.model(path); got != want {
			t.Errorf("model(%q) = %q, want %q", path, got, want)
		}
	}
	for _, bad := range []string{"openai/{model}/", "/openai/x{model}/", "/a/{model}/{model}/"} {
		if _, err := parsePathPattern(bad); err == nil {
			t.Errorf("parsePathPattern(%q) accepted", bad)
		}
	}
}

// FuzzBodyModel holds BodyModel to encoding/json: it finds a model exactly when the body is a
// JSON object whose "model" is a non-empty string.
func FuzzBodyModel(f *testing.F) {
	for _, s := range []string{`{"model":"gpt-4o","messages":[]}`, `{"messages":[],"model":"x"}`, `{"model":5}`, `[]`, `{"model":""}`, `nope`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, ok := BodyModel(body)
		var v map[string]any
		err := json.Unmarshal(body, &v)
		want, _ := v["model"].(string)
		if err == nil && v != nil && want != "" {
			if !ok || name != want {
				t.Fatalf("BodyModel(%q) = %q, %v; want %q", body, name, ok, want)
			}
		} else if ok && err != nil {
			t.Fatalf("BodyModel(%q) = %q from a body that is not JSON", body, name)
		}
	})
}
