package extauthz_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/extauthz"
	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// call sends one request to srv and decodes its JSON answer into out (when not nil).
func call(tb testing.TB, srv http.Handler, method, path, token string, body, out any) {
	tb.Helper()
	raw, _ := json.Marshal(body)
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s %s = %d %s", method, path, rec.Code, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			tb.Fatal(err)
		}
	}
}

// setUp starts an ext_authz server over a Grantry server whose organization has a user granted
// the model "gpt-4o-mini" and not "gpt-4o", and returns a client of the official protos, the
// organization's key, the user and the Grantry server.
func setUp(t *testing.T) (authv3.AuthorizationClient, string, string, *api.Server) {
	t.Helper()
	engine, err := policy.New(context.Background(), policy.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	eng := authz.New(authz.Config{Store: bolttest.Open(t), Policies: policy.NewLive(engine)})
	srv := api.New(api.Config{Store: eng.Store(), Decider: eng, AdminToken: "admin"})
	gw, err := gateway.New(gateway.Config{UserHeader: "X-User"}, srv, srv, srv)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetGateway(gw)
	var org struct {
		APIKey string `json:"api_key"`
	}
	call(t, srv, "POST", "/admin/orgs", "admin", map[string]string{"name": "acme"}, &org)
	var m struct{ Model struct{ ID string } }
	call(t, srv, "POST", "/llm_integration/custom_model", org.APIKey, map[string]string{"model_name": "gpt-4o-mini"}, &m)
	call(t, srv, "POST", "/llm_integration/custom_model", org.APIKey, map[string]string{"model_name": "gpt-4o"}, nil)
	var integ struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}
	call(t, srv, "POST", "/auth_integration/create", org.APIKey, map[string]string{"name": "idp"}, &integ)
	call(t, srv, "POST", "/users/import", org.APIKey, map[string]any{"auth_integration_id": integ.AuthIntegration.ID,
		"users": []map[string]string{{"id": "ada", "email": "ada@example.com", "first": "A", "last": "L"}}}, nil)
	call(t, srv, "POST", "/provisions/add_to_user", org.APIKey, map[string]string{"user_id": "ada", "svc_id": m.Model.ID}, nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	extauthz.New(gw, srv, 0, nil).Register(g)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return authv3.NewAuthorizationClient(conn), org.APIKey, "ada", srv
}

func checkRequest(user, body string, raw bool) *authv3.CheckRequest {
	h := &authv3.AttributeContext_HttpRequest{
		Id: "envoy-req-1", Method: "POST", Path: "/v1/chat/completions",
		Headers: map[string]string{"x-user": user, "content-type": "application/json"},
	}
	if user == "" {
		delete(h.Headers, "x-user")
	}
	if raw {
		h.RawBody = []byte(body)
	} else {
		h.Body = body
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{Http: h}}}
}

func TestCheck(t *testing.T) {
	client, key, user, _ := setUp(t)
	tests := []struct {
		name   string
		key    string
		req    *authv3.CheckRequest
		code   codes.Code
		status int // the denied response's HTTP status; 0 for OK
		reason string
	}{
		{"granted model in the body", key, checkRequest(user, `{"model":"gpt-4o-mini","messages":[]}`, false), codes.OK, 0, ""},
		{"granted model in a raw body", key, checkRequest(user, `{"model":"gpt-4o-mini","messages":[]}`, true), codes.OK, 0, ""},
		{"model not granted", key, checkRequest(user, `{"model":"gpt-4o"}`, false), codes.PermissionDenied, 403, gateway.ReasonNotPermitted},
		{"unknown model", key, checkRequest(user, `{"model":"nope"}`, false), codes.PermissionDenied, 403, gateway.ReasonNotPermitted},
		{"no body sent", key, checkRequest(user, "", false), codes.PermissionDenied, 403, gateway.ReasonNoModel},
		{"no user", key, checkRequest("", `{"model":"gpt-4o-mini"}`, false), codes.Unauthenticated, 401, gateway.ReasonNoUser},
		{"no Grantry key", "", checkRequest(user, `{"model":"gpt-4o-mini"}`, false), codes.Unauthenticated, 401, ""},
		{"an unknown Grantry key", "gry_nope", checkRequest(user, `{"model":"gpt-4o-mini"}`, false), codes.Unauthenticated, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.key != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, extauthz.KeyMetadata, tt.key)
			}
			res, err := client.Check(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if codes.Code(res.GetStatus().GetCode()) != tt.code {
				t.Fatalf("status %v, want %v (%v)", res.GetStatus(), tt.code, res)
			}
			if tt.status == 0 {
				hs := map[string]string{}
				for _, h := range res.GetOkResponse().GetHeaders() {
					hs[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
				}
				if hs["x-grantry-decision-id"] == "" || hs["x-grantry-user"] != user || hs["x-grantry-model"] != "gpt-4o-mini" {
					t.Errorf("ok headers %v", hs)
				}
				return
			}
			d := res.GetDeniedResponse()
			if int(d.GetStatus().GetCode()) != tt.status {
				t.Errorf("HTTP status %v, want %d", d.GetStatus(), tt.status)
			}
			var body struct{ Detail, Reason, DecisionID string }
			if err := json.Unmarshal([]byte(d.GetBody()), &body); err != nil || body.Detail == "" || body.Reason != tt.reason {
				t.Errorf("body %s (%v), want reason %q", d.GetBody(), err, tt.reason)
			}
		})
	}
}
