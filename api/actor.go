package api

import (
	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// setActor makes the authenticated caller, and the request's id, known to the store through
// the request's context, so that the audit trail can say who made each change and in which
// request. Authentication middleware calls it once the caller is known.
func setActor(c *gin.Context, a storage.Actor) {
	ctx := storage.WithRequestID(storage.WithActor(c.Request.Context(), a), requestID(c))
	c.Request = c.Request.WithContext(ctx)
}
