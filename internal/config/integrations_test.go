package config

import (
	"bytes"
	"encoding/base64"
	"flag"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIntegrationsFromEnv(t *testing.T) {
	key1, key2 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	got := FromEnv(env(map[string]string{
		"GRANTRY_OPENAI_BASE_URL":           "http://127.0.0.1:9001/v1",
		"GRANTRY_ANTHROPIC_BASE_URL":        "http://127.0.0.1:9002",
		"GRANTRY_PINECONE_BASE_URL":         "http://127.0.0.1:9003",
		"GRANTRY_QDRANT_BASE_URL":           "https://cluster.cloud.qdrant.io:6333",
		"GRANTRY_DEFAULT_MODEL_PROVIDER":    "anthropic",
		"GRANTRY_DEFAULT_VECTORDB_PROVIDER": "qdrant",
		"GRANTRY_SECRET_KEY_PREVIOUS":       key1 + ", " + key2,
	}))
	want := Integrations{
		OpenAIBaseURL: "http://127.0.0.1:9001/v1", AnthropicBaseURL: "http://127.0.0.1:9002",
		PineconeBaseURL: "http://127.0.0.1:9003", QdrantBaseURL: "https://cluster.cloud.qdrant.io:6333",
		DefaultModelProvider: "anthropic", DefaultVectorDBProvider: "qdrant",
	}
	if diff := cmp.Diff(want, got.Integrations); diff != "" {
		t.Errorf("Integrations (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	keys, err := got.PreviousMasterKeys()
	if err != nil || len(keys) != 2 || keys[0][0] != 1 || keys[1][0] != 2 {
		t.Errorf("PreviousMasterKeys = %v, %v", keys, err)
	}
}

func TestIntegrationDefaults(t *testing.T) {
	c := FromEnv(env(nil))
	want := Integrations{
		OpenAIBaseURL: "https://api.openai.com/v1", AnthropicBaseURL: "https://api.anthropic.com",
		PineconeBaseURL: "https://api.pinecone.io", QdrantBaseURL: "http://localhost:6333",
		DefaultModelProvider: "openai", DefaultVectorDBProvider: "pinecone",
	}
	if diff := cmp.Diff(want, c.Integrations); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if keys, err := c.PreviousMasterKeys(); keys != nil || err != nil {
		t.Errorf("PreviousMasterKeys without the setting = %v, %v", keys, err)
	}
}

func TestValidateIntegrations(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // in the error; empty for none
	}{
		{"defaults", func(*Config) {}, ""},
		{"base URL with a path", func(c *Config) { c.Integrations.OpenAIBaseURL = "https://gateway.example/openai/v1" }, ""},
		{"no scheme", func(c *Config) { c.Integrations.OpenAIBaseURL = "api.openai.com/v1" }, "GRANTRY_OPENAI_BASE_URL"},
		{"other scheme", func(c *Config) { c.Integrations.AnthropicBaseURL = "ftp://x" }, "GRANTRY_ANTHROPIC_BASE_URL"},
		{"no host", func(c *Config) { c.Integrations.PineconeBaseURL = "https://" }, "GRANTRY_PINECONE_BASE_URL"},
		{"query", func(c *Config) { c.Integrations.QdrantBaseURL = "http://q:6333/?x=1" }, "GRANTRY_QDRANT_BASE_URL"},
		{"unknown model provider", func(c *Config) { c.Integrations.DefaultModelProvider = "cohere" }, "GRANTRY_DEFAULT_MODEL_PROVIDER"},
		{"alias as the default", func(c *Config) { c.Integrations.DefaultModelProvider = "hostedllm" }, "GRANTRY_DEFAULT_MODEL_PROVIDER"},
		{"unknown vector database", func(c *Config) { c.Integrations.DefaultVectorDBProvider = "openai" }, "GRANTRY_DEFAULT_VECTORDB_PROVIDER"},
		{"short previous key", func(c *Config) { c.SecretKeyPrevious = "c2hvcnQ=" }, "GRANTRY_SECRET_KEY_PREVIOUS"},
		{"one bad previous key of two", func(c *Config) {
			c.SecretKeyPrevious = base64.StdEncoding.EncodeToString(make([]byte, 32)) + ",nope"
		}, "GRANTRY_SECRET_KEY_PREVIOUS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestIntegrationSecretsNotShown(t *testing.T) {
	c := Default()
	c.SecretKeyPrevious = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	c.Integrations.QdrantBaseURL = "https://user:hunter2@q.example:6333"
	c.Integrations.OpenAIBaseURL = "https://tok3n@gw.example/v1"
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", c)
	for _, secret := range []string{c.SecretKeyPrevious, "hunter2", "tok3n"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the logged settings show %q: %s", secret, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "q.example:6333") || !strings.Contains(buf.String(), `"secret_key_previous_set":true`) {
		t.Errorf("the logged settings lack the integration settings: %s", buf.String())
	}

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if fs.Lookup("secret-key-previous") != nil {
		t.Error("a secret is a flag (it would show in ps)")
	}
	if err := fs.Parse([]string{"--qdrant-base-url", "http://q2:6333", "--default-vectordb-provider", "qdrant"}); err != nil {
		t.Fatal(err)
	}
	if c.Integrations.QdrantBaseURL != "http://q2:6333" || c.Integrations.DefaultVectorDBProvider != "qdrant" {
		t.Errorf("flags did not override: %+v", c.Integrations)
	}
}
