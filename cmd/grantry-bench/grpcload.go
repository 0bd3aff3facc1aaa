package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/grantry/grantry/extauthz"
)

// grpcCallsPerConn is how many of the ext_authz target's callers share one HTTP/2 connection:
// Envoy multiplexes its checks over a few connections to the ext_authz cluster, one per worker
// thread, rather than opening one per request in flight.
const grpcCallsPerConn = 8

// grpcCaller makes ext_authz Check calls with go-control-plane's official client, over a
// connection it may share with other callers.
type grpcCaller struct {
	conn   *grpc.ClientConn
	err    error // why there is no conn
	owner  bool  // the caller that closes conn
	client authv3.AuthorizationClient
	ctx    context.Context // carries the gateway's Grantry key, as Envoy's initial_metadata does
}

// newGRPCCallers returns n callers, grpcCallsPerConn to a connection, the connections to
// addrs in turn.
func newGRPCCallers(addrs []string, key string, n int) []*grpcCaller {
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(extauthz.KeyMetadata, key))
	out := make([]*grpcCaller, n)
	var conn *grpc.ClientConn
	var dialErr error
	for i := range out {
		owner := i%grpcCallsPerConn == 0
		if owner {
			// NewClient only parses the target; connect dials, and reports a failure then.
			conn, dialErr = grpc.NewClient(addrs[(i/grpcCallsPerConn)%len(addrs)], grpc.WithTransportCredentials(insecure.NewCredentials()))
		}
		c := &grpcCaller{conn: conn, err: dialErr, owner: owner, ctx: ctx}
		if dialErr == nil {
			c.client = authv3.NewAuthorizationClient(conn)
		}
		out[i] = c
	}
	return out
}

// connect waits until the connection is ready, so that setting it up is not measured.
func (c *grpcCaller) connect() error {
	if c.err != nil {
		return fmt.Errorf("ext_authz client: %w", c.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.conn.Connect()
	for {
		state := c.conn.GetState()
		if state == connectivity.Ready {
			return nil
		}
		if !c.conn.WaitForStateChange(ctx, state) {
			return fmt.Errorf("connect to %s: %s after 5 s", c.conn.Target(), state)
		}
	}
}

// do makes x's Check call and answers as Envoy would answer the client: 200 for OK, else the
// denied response's status and body.
func (c *grpcCaller) do(x exchange) (int, []byte, error) {
	res, err := c.client.Check(c.ctx, x.check)
	if err != nil {
		return 0, nil, err
	}
	if d := res.GetDeniedResponse(); d != nil {
		return int(d.GetStatus().GetCode()), []byte(d.GetBody()), nil
	}
	if code := codes.Code(res.GetStatus().GetCode()); code != codes.OK {
		return 0, nil, fmt.Errorf("ext_authz answered %s without a denied response", code)
	}
	return http.StatusOK, nil, nil
}

func (c *grpcCaller) close() {
	if c.owner && c.conn != nil {
		c.conn.Close()
	}
}

// checkRequest is the CheckRequest Envoy sends for a chat completion of user's with body,
// configured as docs/gateways.md shows: the body packed as bytes, header names in lower case.
func checkRequest(user string, body []byte) *authv3.CheckRequest {
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
		Http: &authv3.AttributeContext_HttpRequest{
			Method: http.MethodPost, Path: "/v1/chat/completions", Host: "llm", Protocol: "HTTP/1.1",
			Headers: map[string]string{strings.ToLower(benchUserHeader): user, "content-type": "application/json"},
			RawBody: body, Size: int64(len(body)),
		},
	}}}
}
