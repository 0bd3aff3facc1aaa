package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// healthz answers as long as the process serves HTTP.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// policyReadiness is what a Decider may also implement when it can be without a usable policy
// (while a policy is first loaded from elsewhere, say); readyz then asks it. A Decider without
// it is ready once it exists.
type policyReadiness interface {
	// Ready returns an error saying why no policy can decide yet, or nil.
	Ready() error
}

var errNoPolicy = errors.New("no policy loaded")

// readyz answers 200 only while the server accepts work, a policy is loaded, and the store
// answers. It turns 503 as soon as shutdown begins, so that load balancers stop sending
// requests before the listener closes.
func (s *Server) readyz(c *gin.Context) {
	if !s.ready.Load() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"detail": "Shutting down."})
		return
	}
	if err := s.policyReady(); err != nil {
		s.writeError(c, &Error{Status: http.StatusServiceUnavailable, Detail: "No policy is loaded.", Err: err})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

func (s *Server) policyReady() error {
	if s.decider == nil {
		return errNoPolicy
	}
	if pr, ok := s.decider.(policyReadiness); ok {
		return pr.Ready()
	}
	return nil
}
