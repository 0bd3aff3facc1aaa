package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/extauthz"
	"github.com/grantry/grantry/gateway"
	"github.com/grantry/grantry/internal/config"
)

// startGateway turns on the server's gateway endpoints, deciding as cfg says, and, when
// GRANTRY_EXTAUTHZ_ADDR is set, serves Envoy's ext_authz over gRPC there until serve stops.
func startGateway(cfg config.Gateway, srv *api.Server, log *slog.Logger, cs *closers) error {
	aliases, err := cfg.Aliases()
	if err != nil {
		return err
	}
	gcfg := gateway.Config{UserHeader: cfg.UserHeader, ModelHeader: cfg.ModelHeader, ModelPath: cfg.ModelPath, Aliases: aliases}
	if cfg.JWT() {
		v, err := gateway.NewJWTVerifier(gateway.JWTConfig{
			JWKSURL: cfg.JWKSURL, JWKSFile: cfg.JWKSFile, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience,
			UserClaim: cfg.JWTUserClaim, Leeway: cfg.JWTLeeway,
		})
		if err != nil {
			return fmt.Errorf("gateway JWT: %w", err)
		}
		gcfg.JWT, gcfg.JWTHeader = v, cfg.JWTHeader
	}
	gw, err := gateway.New(gcfg, srv, srv, srv)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	srv.SetGateway(gw)
	if cfg.ExtAuthzAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.ExtAuthzAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (ext_authz): %w", cfg.ExtAuthzAddr, err)
	}
	g := grpc.NewServer()
	extauthz.New(gw, srv, srv.RequestTimeout(), log).Register(g)
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	log.Info("ext_authz listening", "addr", ln.Addr().String())
	cs.add("ext_authz server", func(wait context.Context) error {
		stopped := make(chan struct{})
		go func() {
			g.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-wait.Done():
			g.Stop()
		}
		return nil
	})
	return nil
}
