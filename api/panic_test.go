package api_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/grantry/grantry/storage"
)

// panickyStore panics when asked for the user "boom", as a bug in a handler would.
type panickyStore struct{ storage.Store }

func (s panickyStore) GetUser(ctx context.Context, orgID, id string) (storage.User, error) {
	if id == "boom" {
		panic("kaboom: secret internals")
	}
	return s.Store.GetUser(ctx, orgID, id)
}

// TestPanicAnswers500: a panic in a handler answers a 500 that shows nothing of it, in the
// error shape of the path (SCIM's under /scim/v2/), and is logged once with its stack.
func TestPanicAnswers500(t *testing.T) {
	var log bytes.Buffer
	f := newFixture(t, func(c *fixtureConfig) {
		c.store = func(s storage.Store) storage.Store { return panickyStore{s} }
		c.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	tests := []struct {
		name, path, token, want string
	}{
		{"API", "/users/boom/access", key, `{"detail":"Internal Server Error"}`},
		{"SCIM", "/scim/v2/Users/boom", token, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"500","detail":"Internal Server Error"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log.Reset()
			var r response
			if strings.HasPrefix(tc.path, "/scim/") {
				r = f.scimDo("GET", tc.path, tc.token, "")
			} else {
				r = f.do("GET", tc.path, tc.token, nil)
			}
			if r.Status != http.StatusInternalServerError {
				t.Fatalf("status = %d %s, want 500", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, tc.want)
			if n := strings.Count(log.String(), "kaboom"); n != 1 || !strings.Contains(log.String(), "goroutine") {
				t.Errorf("log has the panic %d times, want once with its stack:\n%s", n, log.String())
			}
		})
	}
}
