// Package provider talks to the third parties whose accounts Grantry integrates: hosted model
// providers (OpenAI-compatible APIs, Anthropic), whose keys it checks, and vector databases
// (Pinecone, Qdrant), whose indexes it lists.
//
// Each is a small HTTP client with its own base URL, a time limit, and the caller's context.
// Every failure is one of two sentinels: ErrRejected when the provider refused the key (401 or
// 403), ErrUnavailable for everything else (unreachable, too slow, a 5xx, a redirect, or a body
// that is not the expected JSON). Error messages name the provider and what went wrong, never
// the key, and never the provider's response body, which may quote the key back.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrRejected means the provider answered 401 or 403: the key is wrong, revoked, or not
	// allowed to do what was asked.
	ErrRejected = errors.New("the provider rejected the key")
	// ErrUnavailable means the provider could not be reached or did not answer as expected, so
	// nothing is known about the key.
	ErrUnavailable = errors.New("the provider could not be reached or answered wrongly")
)

// The providers' names: the path segment of the routes, a model's integration_type, a
// dataset's source.
const (
	NameOpenAI    = "openai"
	NameAnthropic = "anthropic"
	NamePinecone  = "pinecone"
	NameQdrant    = "qdrant"
)

// DefaultTimeout bounds one call to a provider, from connecting to reading the whole answer.
const DefaultTimeout = 10 * time.Second

// maxBody is the most of an answer that is read. Lists of models or indexes are a few hundred
// kilobytes at most; a larger answer is not what was asked for.
const maxBody = 4 << 20

// Index is one index (Pinecone) or collection (Qdrant) of a vector database account.
type Index struct {
	Name string
	// Host is where the index is served, if the provider says; it is not secret.
	Host string
}

// Option changes how a provider client is built.
type Option func(*client)

// WithTimeout sets the time limit of one call instead of DefaultTimeout.
func WithTimeout(d time.Duration) Option { return func(c *client) { c.http.Timeout = d } }

// WithTransport sets the HTTP transport instead of a clone of http.DefaultTransport.
func WithTransport(rt http.RoundTripper) Option { return func(c *client) { c.http.Transport = rt } }

// client is what every provider shares: one GET with headers, read within limits, decoded.
type client struct {
	name string
	base string
	// auth sets the headers that carry the key, and any others the provider requires.
	auth func(h http.Header, key string)
	http *http.Client
}

func newClient(name, baseURL string, auth func(http.Header, string), opts []Option) client {
	c := client{
		name: name,
		base: strings.TrimRight(baseURL, "/"),
		auth: auth,
		http: &http.Client{
			Timeout:   DefaultTimeout,
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// A redirect would carry the key's header to wherever it points (Go drops only
			// Authorization on a change of host), so a redirect is an answer, and a wrong one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// get sends GET base+path with the key, and decodes a 200 answer into into. The key appears in
// no error it returns.
func (c client) get(ctx context.Context, path, key string, into any) error {
	if key == "" || strings.ContainsFunc(key, notHeaderSafe) {
		// No provider issues such a key, and sending it could split the request's headers.
		return fmt.Errorf("%s: the key is empty or holds characters a header cannot carry: %w", c.name, ErrRejected)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("%s: base URL is not usable: %w", c.name, ErrUnavailable)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "grantry")
	c.auth(req.Header, key)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", c.name, ErrUnavailable, scrub(transportProblem(err), key))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s answered %d: %w", c.name, resp.StatusCode, ErrRejected)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %w: answered %d", c.name, ErrUnavailable, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("%s: %w: answer cut off: %s", c.name, ErrUnavailable, scrub(transportProblem(err), key))
	}
	if len(body) > maxBody {
		return fmt.Errorf("%s: %w: answer larger than %d bytes", c.name, ErrUnavailable, maxBody)
	}
	if err := json.Unmarshal(body, into); err != nil {
		// The JSON error may quote the body, and the body may quote the key: say only where.
		return fmt.Errorf("%s: %w: answer is not the expected JSON (%s)", c.name, ErrUnavailable, jsonProblem(err))
	}
	return nil
}

// transportProblem describes a failed exchange without the URL, which *url.Error would add.
func transportProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return "no answer in time"
		}
		err = ue.Err
	}
	if errors.Is(err, context.Canceled) {
		return "the request was cancelled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the connection was closed before the answer was complete"
	}
	return err.Error()
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is not a %s", te.Field, te.Type)
	}
	return "invalid JSON"
}

// scrub removes the key from a message, should a lower layer ever have quoted it.
func scrub(msg, key string) string { return strings.ReplaceAll(msg, key, "[key]") }

// notHeaderSafe reports characters that no provider's key holds and that could not all be sent
// in a header value: anything but visible ASCII.
func notHeaderSafe(r rune) bool { return r <= ' ' || r > '~' }

// required checks that a field the provider always sends was there, so that an answer of some
// other API (or a JSON null) is not taken for an empty list.
func required(name, field string, present bool) error {
	if !present {
		return fmt.Errorf("%s: %w: answer has no %q", name, ErrUnavailable, field)
	}
	return nil
}
