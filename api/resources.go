package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// Limits on request strings, from CONTRACT.md.
const (
	maxName        = 256
	maxDescription = 4096
)

// register stores a new resource of the caller's organization under a new id.
func (s *Server) register(ctx context.Context, orgID string, r storage.Resource) (storage.Resource, error) {
	r.OrgID, r.ID, r.CreatedAt = orgID, uid.New(), s.clock()
	if err := s.store.CreateResource(ctx, r); err != nil {
		return storage.Resource{}, fmt.Errorf("register %s %q: %w", r.Kind, r.Name, err)
	}
	return r, nil
}

type removeRequest struct {
	SvcID string `json:"svc_id" validate:"required,uuid"`
}

// removeResource removes a resource of one kind, revoking it from every user first. An id of
// another kind, or of another organization, is not found.
func (s *Server) removeResource(kind storage.Kind, notFoundDetail, doneMessage string) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req removeRequest
		if err := s.bindJSON(c, &req); err != nil {
			s.writeError(c, err)
			return
		}
		ctx, id := c.Request.Context(), canonicalID(req.SvcID)
		r, err := s.store.GetResource(ctx, orgID(c), id)
		if err == nil && r.Kind != kind {
			err = storage.ErrNotFound
		}
		if err == nil {
			err = s.store.DeleteResource(ctx, orgID(c), id)
		}
		if err != nil {
			s.writeError(c, notFound(err, notFoundDetail))
			return
		}
		c.JSON(http.StatusOK, gin.H{"message": doneMessage})
	}
}

// listFor returns the organization's resources of one kind: all of them, or with the user_id
// query parameter only those the user may use. An unknown user is a 404.
func (s *Server) listFor(c *gin.Context, kind storage.Kind) ([]storage.Resource, error) {
	userID, err := queryParam(c, "user_id")
	if err != nil {
		return nil, err
	}
	rs, err := s.store.ListResources(c.Request.Context(), orgID(c), kind)
	if err != nil || userID == "" {
		return rs, err
	}
	return s.accessible(c, userID, rs)
}

// canonicalID is the stored form of a resource id that passed the uuid check: lowercase.
func canonicalID(id string) string { return strings.ToLower(id) }

// metadataJSON is the JSON-encoded string of a dataset's non-secret facts, keys sorted.
func metadataJSON(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return string(b)
}
