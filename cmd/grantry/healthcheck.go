package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/grantry/grantry/internal/config"
)

// healthcheckTimeout bounds the whole check; Docker's own HEALTHCHECK timeout should be longer.
const healthcheckTimeout = 3 * time.Second

// healthcheck GETs /healthz of the service listening on GRANTRY_ADDR and fails unless it answers
// 200. It is the container's HEALTHCHECK: the image has no curl or shell to do it.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	rest, err := parse(newFlags("healthcheck"), args, healthcheckUsage, stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", rest[0], healthcheckUsage)
	}
	target := "http://" + localAddr(config.FromEnv(getenv).Addr) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", target, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

// localAddr turns a listen address into one to connect to on this host: a server listening on
// every interface (0.0.0.0:8080, [::]:8080, :8080) is reached on the loopback.
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}
