package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// Groups of users. A plain group belongs to the organization: it is made and filled through
// this API, and any user of the organization may be a member. A group that an identity
// provider pushes through SCIM belongs to that provider, which alone changes its name and
// members; resources may be granted to both kinds alike (group_grants.go).

var (
	errGroupNotFound = &Error{Status: http.StatusNotFound, Detail: "Group not found."}
	errGroupManaged  = &Error{Status: http.StatusConflict, Detail: "This group is managed by its identity provider through SCIM; change it there."}
)

// groupJSON is a group as this API shows it.
type groupJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// AuthIntegrationID is the SCIM integration that manages the group; null for a plain group.
	AuthIntegrationID *string `json:"auth_integration_id"`
	// Members are the ids of the users in the group, in the order they joined.
	Members []string `json:"members"`
	// ResourceList is what is granted to the group and has not expired.
	ResourceList []grantJSON `json:"resource_list"`
	CreatedAt    string      `json:"created_at"`
	ModifiedAt   string      `json:"modified_at"`
}

// grantJSON is a resource granted, with the grant's expiry (null: never).
type grantJSON struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	ExpiresAt *string `json:"expires_at"`
}

type createGroupRequest struct {
	Name string `json:"name" validate:"required,max=256"`
}

type groupMemberRequest struct {
	GroupID string `json:"group_id" validate:"required,max=256"`
	UserID  string `json:"user_id" validate:"required,max=256"`
}

type groupRequest struct {
	GroupID string `json:"group_id" validate:"required,max=256"`
}

// createGroup makes a plain group, with no members yet.
func (s *Server) createGroup(c *gin.Context) {
	var req createGroupRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	now := s.clock()
	g := storage.Group{OrgID: orgID(c), ID: uid.New(), DisplayName: req.Name, CreatedAt: now, ModifiedAt: now}
	if err := s.store.CreateGroup(c.Request.Context(), g); err != nil {
		s.writeError(c, conflict(err, "A group with this name already exists."))
		return
	}
	s.respondGroup(c, g)
}

// addGroupMember puts a user of the organization in a plain group; a member already in it
// stays, once.
func (s *Server) addGroupMember(c *gin.Context) {
	var req groupMemberRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	s.changeMembers(c, req.GroupID, func(g *storage.Group) {
		if !slices.Contains(g.Members, req.UserID) {
			g.Members = append(g.Members, req.UserID)
		}
	}, req.UserID)
}

// removeGroupMember takes a user out of a plain group; taking out a user who is not in it
// changes nothing.
func (s *Server) removeGroupMember(c *gin.Context) {
	var req groupMemberRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.store.GetUser(ctx, orgID(c), req.UserID); err != nil {
		s.writeError(c, notFound(err, errUserNotFound.Detail))
		return
	}
	s.changeMembers(c, req.GroupID, func(g *storage.Group) {
		g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == req.UserID })
	}, req.UserID)
}

// changeMembers applies change to the members of the caller's plain group id in one atomic
// read-modify-write, and answers with the group. A member who is no user of the organization is
// a 404 naming the user.
func (s *Server) changeMembers(c *gin.Context, id string, change func(*storage.Group), userID string) {
	ctx, org := c.Request.Context(), orgID(c)
	if _, err := s.plainGroup(ctx, org, id); err != nil {
		s.writeError(c, err)
		return
	}
	now := s.clock()
	g, err := s.store.UpdateGroup(ctx, org, "", id, func(g *storage.Group) error {
		before := slices.Clone(g.Members)
		change(g)
		if !slices.Equal(before, g.Members) {
			g.ModifiedAt = now
		}
		return nil
	})
	if errors.Is(err, storage.ErrUnknownMember) {
		err = &Error{Status: http.StatusNotFound, Detail: errUserNotFound.Detail, Err: fmt.Errorf("member %s: %w", userID, err)}
	}
	if err != nil {
		s.writeError(c, notFound(err, errGroupNotFound.Detail))
		return
	}
	s.respondGroup(c, g)
}

// removeGroup deletes a plain group, and with it every grant to the group.
func (s *Server) removeGroup(c *gin.Context) {
	var req groupRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, org := c.Request.Context(), orgID(c)
	if _, err := s.plainGroup(ctx, org, req.GroupID); err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.store.DeleteGroup(ctx, org, "", req.GroupID); err != nil {
		s.writeError(c, notFound(err, errGroupNotFound.Detail))
		return
	}
	c.JSON(http.StatusOK, gin.H{"message": "Group deleted successfully"})
}

// listGroups answers every group of the organization, plain and SCIM-managed, in creation
// order, each with its members and live grants.
func (s *Server) listGroups(c *gin.Context) {
	ctx, org := c.Request.Context(), orgID(c)
	groups, err := s.store.ListGroups(ctx, org)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out, err := s.groupsJSON(ctx, org, groups)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"groups": out})
}

// plainGroup returns the organization's group id if it is a plain group: 404 if there is no
// such group, 409 if an identity provider manages it.
func (s *Server) plainGroup(ctx context.Context, org, id string) (storage.Group, error) {
	g, err := s.store.GetOrgGroup(ctx, org, id)
	if err != nil {
		return g, notFound(err, errGroupNotFound.Detail)
	}
	if g.IntegrationID != "" {
		return g, errGroupManaged
	}
	return g, nil
}

func (s *Server) respondGroup(c *gin.Context, g storage.Group) {
	out, err := s.groupsJSON(c.Request.Context(), g.OrgID, []storage.Group{g})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"group": out[0]})
}

// groupsJSON shows groups with their live grants, read in one call for all of them.
func (s *Server) groupsJSON(ctx context.Context, org string, groups []storage.Group) ([]groupJSON, error) {
	ids := storage.GroupIDs(groups)
	grants := map[string][]grantJSON{}
	if len(ids) > 0 {
		gs, err := s.store.GroupGrants(ctx, org, ids)
		if err != nil {
			return nil, fmt.Errorf("grants of %d groups: %w", len(ids), err)
		}
		byGroup, err := s.liveGrants(ctx, org, gs)
		if err != nil {
			return nil, err
		}
		grants = byGroup
	}
	out := make([]groupJSON, len(groups))
	for i, g := range groups {
		members := g.Members
		if members == nil {
			members = []string{}
		}
		list := grants[g.ID]
		if list == nil {
			list = []grantJSON{}
		}
		out[i] = groupJSON{
			ID: g.ID, Name: g.DisplayName, AuthIntegrationID: orNull(g.IntegrationID), Members: members,
			ResourceList: list, CreatedAt: timestamp(g.CreatedAt), ModifiedAt: timestamp(g.ModifiedAt),
		}
	}
	return out, nil
}

// liveGrants returns the group grants that have not expired and whose resource exists, by
// group, in the order given.
func (s *Server) liveGrants(ctx context.Context, org string, gs []storage.GroupGrant) (map[string][]grantJSON, error) {
	now := s.now()
	ids := make([]string, 0, len(gs))
	for _, g := range gs {
		if !storage.Expired(g.ExpiresAt, now) {
			ids = append(ids, g.ResourceID)
		}
	}
	names, err := s.decider.ResourceNames(ctx, org, ids)
	if err != nil {
		return nil, fmt.Errorf("resources granted to groups: %w", err)
	}
	name := make(map[string]string, len(ids))
	for i, id := range ids {
		if names[i] != "" {
			name[id] = names[i]
		}
	}
	out := map[string][]grantJSON{}
	for _, g := range gs {
		if n, ok := name[g.ResourceID]; ok && !storage.Expired(g.ExpiresAt, now) {
			out[g.GroupID] = append(out[g.GroupID], grantJSON{ID: g.ResourceID, Name: n, ExpiresAt: expiryJSON(g.ExpiresAt)})
		}
	}
	return out, nil
}
