package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/grantry/grantry/internal/seal"
)

// Integrations are the settings of the third parties whose accounts organizations integrate.
type Integrations struct {
	OpenAIBaseURL           string // GRANTRY_OPENAI_BASE_URL: any OpenAI-compatible API, ending in /v1
	AnthropicBaseURL        string // GRANTRY_ANTHROPIC_BASE_URL: without /v1
	PineconeBaseURL         string // GRANTRY_PINECONE_BASE_URL: the control plane
	QdrantBaseURL           string // GRANTRY_QDRANT_BASE_URL: the deployment or cloud cluster
	DefaultModelProvider    string // GRANTRY_DEFAULT_MODEL_PROVIDER: what /llm_integration/hostedllm stands for
	DefaultVectorDBProvider string // GRANTRY_DEFAULT_VECTORDB_PROVIDER: what /data_integration/vectordb stands for
}

// The providers Grantry knows, by the names the routes use: internal/provider's names, repeated
// here because config depends on the standard library alone.
var (
	modelProviders    = []string{"openai", "anthropic"}
	vectorDBProviders = []string{"pinecone", "qdrant"}
)

// DefaultIntegrations returns the public endpoints of each provider. Qdrant has none: it is
// self-hosted or one cluster per customer, so its default is a Qdrant on this host at its
// standard port.
func DefaultIntegrations() Integrations {
	return Integrations{
		OpenAIBaseURL:           "https://api.openai.com/v1",
		AnthropicBaseURL:        "https://api.anthropic.com",
		PineconeBaseURL:         "https://api.pinecone.io",
		QdrantBaseURL:           "http://localhost:6333",
		DefaultModelProvider:    "openai",
		DefaultVectorDBProvider: "pinecone",
	}
}

// readIntegrations reads the integration settings and GRANTRY_SECRET_KEY_PREVIOUS.
func (c *Config) readIntegrations(getenv func(string) string) {
	for name, field := range map[string]*string{
		"GRANTRY_OPENAI_BASE_URL":           &c.Integrations.OpenAIBaseURL,
		"GRANTRY_ANTHROPIC_BASE_URL":        &c.Integrations.AnthropicBaseURL,
		"GRANTRY_PINECONE_BASE_URL":         &c.Integrations.PineconeBaseURL,
		"GRANTRY_QDRANT_BASE_URL":           &c.Integrations.QdrantBaseURL,
		"GRANTRY_DEFAULT_MODEL_PROVIDER":    &c.Integrations.DefaultModelProvider,
		"GRANTRY_DEFAULT_VECTORDB_PROVIDER": &c.Integrations.DefaultVectorDBProvider,
		"GRANTRY_SECRET_KEY_PREVIOUS":       &c.SecretKeyPrevious,
	} {
		if v := getenv(name); v != "" {
			*field = v
		}
	}
}

func (c *Config) registerIntegrationFlags(fs *flag.FlagSet) {
	in := &c.Integrations
	fs.StringVar(&in.OpenAIBaseURL, "openai-base-url", in.OpenAIBaseURL, "base URL of the OpenAI-compatible API (GRANTRY_OPENAI_BASE_URL)")
	fs.StringVar(&in.AnthropicBaseURL, "anthropic-base-url", in.AnthropicBaseURL, "base URL of the Anthropic API (GRANTRY_ANTHROPIC_BASE_URL)")
	fs.StringVar(&in.PineconeBaseURL, "pinecone-base-url", in.PineconeBaseURL, "base URL of the Pinecone API (GRANTRY_PINECONE_BASE_URL)")
	fs.StringVar(&in.QdrantBaseURL, "qdrant-base-url", in.QdrantBaseURL, "base URL of the Qdrant deployment (GRANTRY_QDRANT_BASE_URL)")
	fs.StringVar(&in.DefaultModelProvider, "default-model-provider", in.DefaultModelProvider, "model provider that hostedllm stands for (GRANTRY_DEFAULT_MODEL_PROVIDER)")
	fs.StringVar(&in.DefaultVectorDBProvider, "default-vectordb-provider", in.DefaultVectorDBProvider, "vector database that vectordb stands for (GRANTRY_DEFAULT_VECTORDB_PROVIDER)")
}

func (c Config) validateIntegrations() []error {
	var errs []error
	in := c.Integrations
	for _, u := range []struct{ name, value string }{
		{"GRANTRY_OPENAI_BASE_URL", in.OpenAIBaseURL},
		{"GRANTRY_ANTHROPIC_BASE_URL", in.AnthropicBaseURL},
		{"GRANTRY_PINECONE_BASE_URL", in.PineconeBaseURL},
		{"GRANTRY_QDRANT_BASE_URL", in.QdrantBaseURL},
	} {
		if err := checkBaseURL(u.value); err != nil {
			errs = append(errs, fmt.Errorf("%s %w", u.name, err))
		}
	}
	if !slices.Contains(modelProviders, in.DefaultModelProvider) {
		errs = append(errs, fmt.Errorf("GRANTRY_DEFAULT_MODEL_PROVIDER %q is not one of %s", in.DefaultModelProvider, strings.Join(modelProviders, ", ")))
	}
	if !slices.Contains(vectorDBProviders, in.DefaultVectorDBProvider) {
		errs = append(errs, fmt.Errorf("GRANTRY_DEFAULT_VECTORDB_PROVIDER %q is not one of %s", in.DefaultVectorDBProvider, strings.Join(vectorDBProviders, ", ")))
	}
	if _, err := c.PreviousMasterKeys(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkBaseURL accepts an absolute http or https URL without query or fragment, to which the
// provider's paths are appended. The URL itself is never shown: it could carry credentials.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must start with http:// or https://")
	case u.Host == "":
		return errors.New("has no host")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return errors.New("may not have a query or a fragment")
	}
	return nil
}

// PreviousMasterKeys decodes GRANTRY_SECRET_KEY_PREVIOUS: master keys that sealed secrets before
// the current one, comma-separated, each the base64 of 32 bytes. They only open secrets; new
// ones are sealed under GRANTRY_SECRET_KEY.
func (c Config) PreviousMasterKeys() ([][]byte, error) {
	if c.SecretKeyPrevious == "" {
		return nil, nil
	}
	var keys [][]byte
	for part := range strings.SplitSeq(c.SecretKeyPrevious, ",") {
		key, err := seal.ParseKey(part)
		if err != nil {
			return nil, fmt.Errorf("GRANTRY_SECRET_KEY_PREVIOUS (keys separated by commas): %w", err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// LogValue shows the integration settings, with any credentials in the URLs masked.
func (in Integrations) LogValue() slog.Value {
	redact := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return "(invalid)"
		}
		if u.User != nil {
			u.User = url.User("redacted")
		}
		return u.String()
	}
	return slog.GroupValue(
		slog.String("openai_base_url", redact(in.OpenAIBaseURL)),
		slog.String("anthropic_base_url", redact(in.AnthropicBaseURL)),
		slog.String("pinecone_base_url", redact(in.PineconeBaseURL)),
		slog.String("qdrant_base_url", redact(in.QdrantBaseURL)),
		slog.String("default_model_provider", in.DefaultModelProvider),
		slog.String("default_vectordb_provider", in.DefaultVectorDBProvider),
	)
}
