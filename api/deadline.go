package api

import (
	"context"

	"github.com/gin-gonic/gin"
)

// deadline puts the request timeout on the request's context, so that every store call and
// policy evaluation made for the request gives up by then: a store that does not answer makes
// a 503 within the timeout rather than a request that hangs. It covers the whole handling,
// reading the body included.
func (s *Server) deadline(c *gin.Context) {
	if s.requestTimeout <= 0 {
		c.Next()
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.requestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}
