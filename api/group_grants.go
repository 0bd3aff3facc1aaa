package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// groupGrantRequest is add_to_group's body; expires_at is declared last (expiresAt relies on
// it).
type groupGrantRequest struct {
	GroupID   string  `json:"group_id" validate:"required,max=256"`
	SvcID     string  `json:"svc_id" validate:"required,uuid"`
	ExpiresAt *string `json:"expires_at" validate:"omitnil,rfc3339"`
}

type groupRevokeRequest struct {
	GroupID string `json:"group_id" validate:"required,max=256"`
	SvcID   string `json:"svc_id" validate:"required,uuid"`
}

// addToGroup grants a resource to every member of a group, plain or SCIM-managed, until
// expires_at if given. Granting again keeps the grant and gives it the latest expiry.
func (s *Server) addToGroup(c *gin.Context) {
	var req groupGrantRequest
	err := s.bindJSON(c, &req)
	expires, err := s.expiresAt(err, req.ExpiresAt)
	if err != nil {
		s.writeError(c, err)
		return
	}
	// The store says which of the group and the resource is missing (the group first), and
	// errorResponse names it.
	g := storage.GroupGrant{OrgID: orgID(c), GroupID: req.GroupID, ResourceID: canonicalID(req.SvcID), CreatedAt: s.clock(), ExpiresAt: expires}
	if _, err := s.store.SetGroupGrant(c.Request.Context(), g); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"group_id": req.GroupID})
}

// removeFromGroup revokes a resource from a group and answers what remains granted to it.
// Revoking what is not granted, or what does not exist, changes nothing.
func (s *Server) removeFromGroup(c *gin.Context) {
	var req groupRevokeRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, org := c.Request.Context(), orgID(c)
	if _, err := s.store.RevokeGroupGrant(ctx, org, req.GroupID, canonicalID(req.SvcID)); err != nil {
		s.writeError(c, err) // ErrGroupNotFound names the group
		return
	}
	gs, err := s.store.GroupGrants(ctx, org, []string{req.GroupID})
	if err != nil {
		s.writeError(c, err)
		return
	}
	live, err := s.liveGrants(ctx, org, gs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	refs := []resourceRef{}
	for _, g := range live[req.GroupID] {
		refs = append(refs, resourceRef{ID: g.ID, Name: g.Name})
	}
	c.JSON(http.StatusOK, gin.H{"group_id": req.GroupID, "resources": refs})
}
