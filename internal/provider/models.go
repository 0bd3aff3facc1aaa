package provider

import (
	"context"
	"net/http"
)

// anthropicVersion is the Anthropic API version Grantry speaks; the API requires the header.
const anthropicVersion = "2023-06-01"

// OpenAI checks keys of an OpenAI-compatible model API: GET {base}/models with
// "Authorization: Bearer <key>", answered by {"data":[{"id":...},...]}.
type OpenAI struct{ c client }

// NewOpenAI returns a client of the OpenAI-compatible API at baseURL, which ends in /v1
// (https://api.openai.com/v1).
func NewOpenAI(baseURL string, opts ...Option) *OpenAI {
	return &OpenAI{newClient(NameOpenAI, baseURL, func(h http.Header, key string) {
		h.Set("Authorization", "Bearer "+key)
	}, opts)}
}

// Name returns "openai".
func (p *OpenAI) Name() string { return NameOpenAI }

// CheckKey returns nil if the API accepts key, an error wrapping ErrRejected if it refuses it,
// and one wrapping ErrUnavailable otherwise.
func (p *OpenAI) CheckKey(ctx context.Context, key string) error {
	return checkModelList(ctx, p.c, "/models", key)
}

// Anthropic checks keys of the Anthropic API: GET {base}/v1/models with "x-api-key: <key>" and
// "anthropic-version: 2023-06-01", answered by {"data":[{"id":...},...],...}.
type Anthropic struct{ c client }

// NewAnthropic returns a client of the Anthropic API at baseURL, without /v1
// (https://api.anthropic.com).
func NewAnthropic(baseURL string, opts ...Option) *Anthropic {
	return &Anthropic{newClient(NameAnthropic, baseURL, func(h http.Header, key string) {
		h.Set("x-api-key", key)
		h.Set("anthropic-version", anthropicVersion)
	}, opts)}
}

// Name returns "anthropic".
func (p *Anthropic) Name() string { return NameAnthropic }

// CheckKey returns nil if the API accepts key, an error wrapping ErrRejected if it refuses it,
// and one wrapping ErrUnavailable otherwise.
func (p *Anthropic) CheckKey(ctx context.Context, key string) error {
	return checkModelList(ctx, p.c, "/v1/models", key)
}

// checkModelList lists models with key: both APIs answer {"data":[...]}, and a list, even an
// empty one, means the key is good.
func checkModelList(ctx context.Context, c client, path, key string) error {
	var answer struct {
		Data *[]struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := c.get(ctx, path, key, &answer); err != nil {
		return err
	}
	return required(c.name, "data", answer.Data != nil)
}
