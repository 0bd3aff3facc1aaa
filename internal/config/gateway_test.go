package config

import (
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGatewaySettings(t *testing.T) {
	jwt := map[string]string{"GRANTRY_GATEWAY_JWKS_URL": "https://idp.example/jwks", "GRANTRY_GATEWAY_JWT_ISSUER": "https://idp.example/", "GRANTRY_GATEWAY_JWT_AUDIENCE": "llm"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range jwt {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string // what the errors must name; none = valid
	}{
		{"defaults", nil, nil},
		{"a user header", map[string]string{"GRANTRY_GATEWAY_USER_HEADER": "X-Forwarded-User"}, nil},
		{"a JWKS URL with issuer and audience", jwt, nil},
		{"a JWKS file", map[string]string{"GRANTRY_GATEWAY_JWKS_FILE": "/etc/jwks.json", "GRANTRY_GATEWAY_JWT_ISSUER": "i", "GRANTRY_GATEWAY_JWT_AUDIENCE": "a"}, nil},
		{"both key sets", with(map[string]string{"GRANTRY_GATEWAY_JWKS_FILE": "/etc/jwks.json"}), []string{"may not both"}},
		{"a JWKS without issuer or audience", map[string]string{"GRANTRY_GATEWAY_JWKS_FILE": "f"}, []string{"JWT_ISSUER must", "JWT_AUDIENCE must"}},
		{"an issuer without a JWKS", map[string]string{"GRANTRY_GATEWAY_JWT_ISSUER": "i"}, []string{"need GRANTRY_GATEWAY_JWKS_URL"}},
		{"a JWKS URL that is not one", with(map[string]string{"GRANTRY_GATEWAY_JWKS_URL": "idp.example/jwks"}), []string{"GRANTRY_GATEWAY_JWKS_URL must"}},
		{"a leeway", with(map[string]string{"GRANTRY_GATEWAY_JWT_LEEWAY": "30s"}), nil},
		{"a leeway that is not a duration", map[string]string{"GRANTRY_GATEWAY_JWT_LEEWAY": "soon"}, []string{"GRANTRY_GATEWAY_JWT_LEEWAY"}},
		{"a header name with a space", map[string]string{"GRANTRY_GATEWAY_USER_HEADER": "X User", "GRANTRY_GATEWAY_MODEL_HEADER": "X:M"}, []string{"GRANTRY_GATEWAY_USER_HEADER", "GRANTRY_GATEWAY_MODEL_HEADER"}},
		{"a model path", map[string]string{"GRANTRY_GATEWAY_MODEL_PATH": "/openai/deployments/{model}/"}, nil},
		{"a model path without {model}", map[string]string{"GRANTRY_GATEWAY_MODEL_PATH": "/openai/deployments/"}, []string{"GRANTRY_GATEWAY_MODEL_PATH"}},
		{"aliases", map[string]string{"GRANTRY_GATEWAY_MODEL_ALIASES": "gpt4=gpt-4o, fast = gpt-4o-mini"}, nil},
		{"an alias without a name", map[string]string{"GRANTRY_GATEWAY_MODEL_ALIASES": "gpt4="}, []string{"GRANTRY_GATEWAY_MODEL_ALIASES"}},
		{"an alias twice", map[string]string{"GRANTRY_GATEWAY_MODEL_ALIASES": "a=b,a=c"}, []string{"given twice"}},
		{"a body limit", map[string]string{"GRANTRY_GATEWAY_MAX_BODY": "1048576"}, nil},
		{"a body limit of nothing", map[string]string{"GRANTRY_GATEWAY_MAX_BODY": "0"}, []string{"GRANTRY_GATEWAY_MAX_BODY"}},
		{"an ext_authz address", map[string]string{"GRANTRY_EXTAUTHZ_ADDR": "127.0.0.1:9001"}, nil},
		{"an ext_authz address without a port", map[string]string{"GRANTRY_EXTAUTHZ_ADDR": "localhost"}, []string{"GRANTRY_EXTAUTHZ_ADDR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := FromEnv(env(tt.env)).Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %v, want an error about %s", err, want)
				}
			}
		})
	}
}

func TestGatewaySettingsRead(t *testing.T) {
	c := FromEnv(env(map[string]string{
		"GRANTRY_GATEWAY_USER_HEADER": "X-User", "GRANTRY_GATEWAY_JWT_USER_CLAIM": "email", "GRANTRY_GATEWAY_JWT_LEEWAY": "1m",
		"GRANTRY_GATEWAY_MODEL_ALIASES": "gpt4=gpt-4o,fast=gpt-4o-mini", "GRANTRY_GATEWAY_MAX_BODY": "100",
	}))
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--gateway-model-header", "X-Model", "--extauthz-addr", "127.0.0.1:9001"}); err != nil {
		t.Fatal(err)
	}
	aliases, err := c.Gateway.Aliases()
	if err != nil {
		t.Fatal(err)
	}
	want := Gateway{UserHeader: "X-User", JWTUserClaim: "email", JWTHeader: "Authorization", JWTLeeway: 60e9,
		ModelHeader: "X-Model", ModelAliases: "gpt4=gpt-4o,fast=gpt-4o-mini", MaxBody: 100, ExtAuthzAddr: "127.0.0.1:9001"}
	if diff := cmp.Diff(want, c.Gateway); diff != "" {
		t.Errorf("Gateway (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"gpt4": "gpt-4o", "fast": "gpt-4o-mini"}, aliases); diff != "" {
		t.Errorf("Aliases (-want +got):\n%s", diff)
	}
}
