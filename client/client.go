// Package client is a Go client of Grantry's API for applications: typed calls for the access
// checks (one resource, all of several, a batch), grants and revokes, and the lists, with
// retries on 429 and 503 that honour Retry-After, deadlines from the caller's context, and an
// http.Handler middleware that lets a request through only when its user may use its resource.
//
// It depends on nothing but the standard library, and on no package of the server: its types
// are the API's wire shapes.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one Grantry server with one API key. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	key     string
	hc      *http.Client
	retries int
	backoff time.Duration
	maxWait time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a call answered 429 or 503, or that could not reach the
// server, is tried again (default 3; 0 = never).
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// WithBackoff sets the first pause between tries when the server gives no Retry-After (default
// 100 ms, doubling each time), and the longest pause (default 10 s).
func WithBackoff(first, longest time.Duration) Option {
	return func(c *Client) { c.backoff, c.maxWait = first, longest }
}

// New returns a client of the server at baseURL (such as http://127.0.0.1:8080) that sends
// apiKey as its bearer token.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("grantry client: base URL %q is not an http:// or https:// URL", baseURL)
	}
	c := &Client{base: u, key: apiKey, hc: http.DefaultClient, retries: 3, backoff: 100 * time.Millisecond, maxWait: 10 * time.Second}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is an answer of the server other than 200: its status and the sentence of its
// {"detail"} (or, for a 422, the body as it is).
type Error struct {
	Status int
	Detail string
	// RetryAfter is what the server asked to wait, when it did.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("grantry: %d %s: %s", e.Status, http.StatusText(e.Status), e.Detail)
}

// IsNotFound reports whether err is the server's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// CanUserAccess asks whether the user may use the resource svcID (POST
// /provisions/can_user_access). Anything unknown is false, not an error.
func (c *Client) CanUserAccess(ctx context.Context, userID, svcID string) (bool, error) {
	var ok bool
	err := c.do(ctx, http.MethodPost, "/provisions/can_user_access", map[string]string{"user_id": userID, "svc_id": svcID}, &ok)
	return ok, err
}

// CanUserAccessAll asks whether the user may use every one of svcIDs (1 to 1000).
func (c *Client) CanUserAccessAll(ctx context.Context, userID string, svcIDs []string) (bool, error) {
	var ok bool
	err := c.do(ctx, http.MethodPost, "/provisions/can_user_access_all", map[string]any{"user_id": userID, "tags": svcIDs}, &ok)
	return ok, err
}

// Check is one question of a batch; CorrelationID, if set, comes back with its answer.
type Check struct {
	UserID        string  `json:"user_id"`
	SvcID         string  `json:"svc_id"`
	CorrelationID *string `json:"correlation_id,omitempty"`
}

// CheckResult answers one Check.
type CheckResult struct {
	CorrelationID *string `json:"correlation_id"`
	UserID        string  `json:"user_id"`
	SvcID         string  `json:"svc_id"`
	Allowed       bool    `json:"allowed"`
}

// CheckBatch asks up to 1000 questions at once (POST /provisions/check_batch); the answers
// come in the order asked.
func (c *Client) CheckBatch(ctx context.Context, checks []Check) ([]CheckResult, error) {
	var out struct {
		Results []CheckResult `json:"results"`
	}
	err := c.do(ctx, http.MethodPost, "/provisions/check_batch", map[string]any{"checks": checks}, &out)
	return out.Results, err
}

// Grant lets the user use the resource for good (POST /provisions/add_to_user).
func (c *Client) Grant(ctx context.Context, userID, svcID string) error {
	return c.do(ctx, http.MethodPost, "/provisions/add_to_user", map[string]string{"user_id": userID, "svc_id": svcID}, nil)
}

// GrantUntil lets the user use the resource until expires.
func (c *Client) GrantUntil(ctx context.Context, userID, svcID string, expires time.Time) error {
	body := map[string]string{"user_id": userID, "svc_id": svcID, "expires_at": expires.UTC().Format(time.RFC3339)}
	return c.do(ctx, http.MethodPost, "/provisions/add_to_user", body, nil)
}

// ResourceRef is an item of a user's resource_list.
type ResourceRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Revoke takes the resource from the user (POST /provisions/remove_from_user) and returns the
// resources the user still holds.
func (c *Client) Revoke(ctx context.Context, userID, svcID string) ([]ResourceRef, error) {
	var out struct {
		Resources []ResourceRef `json:"resources"`
	}
	err := c.do(ctx, http.MethodPost, "/provisions/remove_from_user", map[string]string{"user_id": userID, "svc_id": svcID}, &out)
	return out.Resources, err
}

// Model is a registered model.
type Model struct {
	ID              string `json:"id"`
	ModelName       string `json:"model_name"`
	IntegrationType string `json:"integration_type"`
	SvcID           string `json:"svc_id"`
}

// Function is a registered model function.
type Function struct {
	ID           string `json:"id"`
	FunctionName string `json:"function_name"`
	Description  string `json:"description"`
	SvcID        string `json:"svc_id"`
}

// Dataset is a registered dataset integration.
type Dataset struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Metadata string `json:"metadata"`
	SvcID    string `json:"svc_id"`
}

// User is a user of the organization.
type User struct {
	ID             string        `json:"id"`
	Email          string        `json:"email"`
	First          string        `json:"first"`
	Last           string        `json:"last"`
	ImportedAt     string        `json:"imported_at"`
	ModifiedAt     string        `json:"modified_at"`
	BaseUserID     string        `json:"baseUser_id"`
	SourceMetadata ResourceRef   `json:"source_metadata"`
	ResourceList   []ResourceRef `json:"resource_list"`
}

// Models lists the organization's models; with userID, only those the user may use.
func (c *Client) Models(ctx context.Context, userID string) ([]Model, error) {
	var out struct {
		Models []Model `json:"models"`
	}
	err := c.do(ctx, http.MethodGet, "/llm_integration/list/"+userQuery(userID), nil, &out)
	return out.Models, err
}

// Functions lists the organization's functions; with userID, only those the user may use.
func (c *Client) Functions(ctx context.Context, userID string) ([]Function, error) {
	var out struct {
		Functions []Function `json:"functions"`
	}
	err := c.do(ctx, http.MethodGet, "/functions/list/"+userQuery(userID), nil, &out)
	return out.Functions, err
}

// Datasets lists the organization's datasets; with userID, only those the user may use.
func (c *Client) Datasets(ctx context.Context, userID string) ([]Dataset, error) {
	var out struct {
		Indexes []Dataset `json:"indexes"`
	}
	err := c.do(ctx, http.MethodGet, "/data_integration/list/"+userQuery(userID), nil, &out)
	return out.Indexes, err
}

// Users lists the organization's users.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out struct {
		Users []User `json:"users"`
	}
	err := c.do(ctx, http.MethodGet, "/users/list", nil, &out)
	return out.Users, err
}

func userQuery(userID string) string {
	if userID == "" {
		return ""
	}
	return "?" + url.Values{"user_id": {userID}}.Encode()
}

// do sends one call, trying again on 429, 503 and failures to reach the server, and decodes a
// 200's body into out (unless nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return fmt.Errorf("grantry: encode %s %s: %w", method, path, err)
		}
	}
	for try := 0; ; try++ {
		resp, err := c.send(ctx, method, path, raw)
		if err == nil && resp.status == http.StatusOK {
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(resp.body, out); err != nil {
				return fmt.Errorf("grantry: %s %s answered %q: %w", method, path, resp.body, err)
			}
			return nil
		}
		var wait time.Duration
		if err == nil {
			e := resp.err()
			if e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable {
				return e
			}
			err, wait = e, e.RetryAfter
		} else if ctx.Err() != nil {
			return err
		}
		if try >= c.retries {
			return err
		}
		if wait <= 0 {
			wait = c.backoff << try
			wait = wait/2 + rand.N(wait/2+1) // jitter, so that clients refused together do not return together
		}
		wait = min(wait, c.maxWait)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return err // the answer could not come in time: fail now rather than at the deadline
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("grantry: %s %s: %w (after: %w)", method, path, ctx.Err(), err)
		case <-t.C:
		}
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) send(ctx context.Context, method, path string, body []byte) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return answer{}, fmt.Errorf("grantry: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("grantry: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return answer{}, fmt.Errorf("grantry: %s %s: read answer: %w", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

// err is the Error of an answer other than 200.
func (a answer) err() *Error {
	e := &Error{Status: a.status, RetryAfter: retryAfter(a.header.Get("Retry-After"))}
	var d struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(a.body, &d) == nil && len(d.Detail) > 0 {
		if json.Unmarshal(d.Detail, &e.Detail) != nil {
			e.Detail = string(d.Detail) // a 422's list of problems
		}
	} else {
		e.Detail = strings.TrimSpace(string(a.body))
	}
	return e
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
