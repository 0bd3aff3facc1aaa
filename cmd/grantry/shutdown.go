package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Fixed limits of the HTTP server. Request deadlines and the drain on shutdown are settings
// (GRANTRY_REQUEST_TIMEOUT, GRANTRY_SHUTDOWN_TIMEOUT); these only bound what slow or idle
// clients can hold.
const (
	// readHeaderTimeout bounds the request line and headers: a client that trickles them
	// (slowloris) is dropped.
	readHeaderTimeout = 5 * time.Second
	// readTimeout bounds reading a whole request, headers and a body of at most 1 MiB: 15 s
	// allows a client at 70 KiB/s.
	readTimeout = 15 * time.Second
	// writeMargin is added to the request timeout to bound a response: the handler gives up
	// at the request deadline, and the margin leaves time to write the answer it then has.
	writeMargin = 10 * time.Second
	// idleTimeout is how long a keep-alive connection may wait for its next request; longer
	// than the 60 s that common load balancers keep idle connections, so that the balancer,
	// not Grantry, closes them and never sends on a connection Grantry is closing.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds request headers; Grantry needs a bearer token and a few short
	// headers, not Go's default of 1 MiB.
	maxHeaderBytes = 64 << 10
	// closeTimeout bounds the closers (decision-log flush, store) after the drain, all
	// together. With the default drain of 15 s, shutdown ends within 25 s, inside the 30 s
	// that Kubernetes and Docker wait after SIGTERM before they kill.
	closeTimeout = 10 * time.Second
)

// newHTTPServer returns the http.Server of `grantry serve` with its limits set.
func newHTTPServer(h http.Handler, requestTimeout time.Duration, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      requestTimeout + writeMargin,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// closers is what serve releases when it stops, most recently added first, as deferred calls
// run: a component opened after the store, and writing to it (the decision log), is closed —
// and flushed — before the store it writes to. One add per component is all the wiring needs.
type closers struct {
	log  *slog.Logger
	list []namedCloser
}

type namedCloser struct {
	name  string
	close func(context.Context) error
}

// add registers close to be called, under name, when serve stops.
func (cs *closers) add(name string, close func(context.Context) error) {
	cs.list = append(cs.list, namedCloser{name, close})
}

// goUntilStop runs run in a goroutine until serve stops: its closer, registered under name,
// cancels run's context and waits for it to return, so that nothing it does outlives the
// closers added before it (the store's among them).
func (cs *closers) goUntilStop(ctx context.Context, name string, run func(context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	cs.add(name, func(wait context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-wait.Done():
			return wait.Err()
		}
	})
}

// closeAll calls every closer, most recently added first, within closeTimeout altogether, and
// forgets them, so that calling it again does nothing. A closer that fails does not stop the
// others; every failure is logged and returned.
func (cs *closers) closeAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	for i := len(cs.list) - 1; i >= 0; i-- {
		c := cs.list[i]
		if err := c.close(ctx); err != nil {
			cs.log.Error("close "+c.name, "error", err.Error())
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
		}
	}
	cs.list = nil
	return errors.Join(errs...)
}

// serveUntilDone serves hs on ln until ctx is done (SIGTERM or SIGINT), then shuts down
// gracefully: readiness turns false at once, the listener closes, requests in flight get up to
// drain to finish, and then the closers run. If serving fails, it still closes everything.
func serveUntilDone(ctx context.Context, log *slog.Logger, hs *http.Server, ln net.Listener, setReady func(bool), drain time.Duration, cs *closers) error {
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-served:
		return errors.Join(fmt.Errorf("serve: %w", err), cs.closeAll())
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", drain.String())
	setReady(false)
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	var drainErr error
	if err := hs.Shutdown(drainCtx); err != nil {
		// Requests still running are cut off, so that the closers below are not waited on
		// by handlers that never end.
		drainErr = fmt.Errorf("shutdown: requests in flight did not finish within %s: %w", drain, errors.Join(err, hs.Close()))
	}
	if err := errors.Join(drainErr, cs.closeAll()); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
