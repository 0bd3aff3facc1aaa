package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/storage"
)

// Paging of GET /provisions/users_with_access.
const (
	defaultReverseLimit = 100
	maxReverseLimit     = 1000
)

// userWithAccess is one user of GET /provisions/users_with_access: who, and through what —
// "direct" for a grant of the user's own, "group:<id>" for each group whose grant allows.
type userWithAccess struct {
	ID    string   `json:"id"`
	Email string   `json:"email"`
	Via   []string `json:"via"`
}

// usersWithAccess lists the users who may use a resource now, as can_user_access would answer
// for each, in the order of their ids, a page at a time. The cursor is the last id of the
// previous page, so that pages never repeat a user and, read one after the other, miss none
// whose access held all along, whatever changed in between.
func (s *Server) usersWithAccess(c *gin.Context) {
	org := orgID(c)
	svcID, limit, after, err := parseReverseQuery(c, org)
	if err != nil {
		s.writeError(c, err)
		return
	}
	ctx, now := c.Request.Context(), s.now()
	if _, err := s.store.GetResource(ctx, org, svcID); err != nil {
		s.writeError(c, notFound(err, errResourceNotFound.Detail))
		return
	}
	candidates, err := s.grantees(ctx, org, svcID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := []userWithAccess{}
	var next *string
	for _, id := range candidates {
		if id <= after {
			continue
		}
		d, err := s.decider.Decide(ctx, s.question(c, id, []string{svcID}, false, now))
		if err != nil {
			s.writeError(c, err)
			return
		}
		if !d.Allowed {
			continue
		}
		if len(out) == limit {
			next = orNull(encodeCursor(reverseList(svcID), org, out[len(out)-1].ID))
			break
		}
		h, err := s.decider.UserHoldings(ctx, org, id)
		if errors.Is(err, authz.ErrNoUser) {
			continue // deleted just now
		}
		if err != nil {
			s.writeError(c, err)
			return
		}
		u, err := s.store.GetUser(ctx, org, id)
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted just now
		}
		if err != nil {
			s.writeError(c, fmt.Errorf("user %s: %w", id, err))
			return
		}
		out = append(out, userWithAccess{ID: u.ID, Email: u.Email, Via: via(h, svcID, now)})
	}
	c.JSON(http.StatusOK, gin.H{"users": out, "next_cursor": next})
}

// grantees returns, sorted and each once, the ids of the users who hold a grant on the
// resource, live or not, of their own or as members of a group: those the check may allow.
func (s *Server) grantees(ctx context.Context, org, svcID string) ([]string, error) {
	grants, err := s.store.ResourceGrants(ctx, org, svcID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", svcID, err)
	}
	groupGrants, err := s.store.ResourceGroupGrants(ctx, org, svcID)
	if err != nil {
		return nil, fmt.Errorf("group grants of %s: %w", svcID, err)
	}
	ids := make([]string, 0, len(grants))
	for _, g := range grants {
		ids = append(ids, g.UserID)
	}
	for _, gg := range groupGrants {
		g, err := s.store.GetOrgGroup(ctx, org, gg.GroupID)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", gg.GroupID, err)
		}
		ids = append(ids, g.Members...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// via says through what the user holding h may use the resource at now.
func via(h authz.Holdings, svcID string, now time.Time) []string {
	live := func(grants []authz.Held) bool {
		return slices.ContainsFunc(grants, func(g authz.Held) bool {
			return g.ResourceID == svcID && !storage.Expired(g.ExpiresAt, now)
		})
	}
	routes := []string{}
	if live(h.Grants) {
		routes = append(routes, "direct")
	}
	for _, g := range h.Groups { // ordered by id
		if live(g.Grants) {
			routes = append(routes, "group:"+g.ID)
		}
	}
	return routes
}

// reverseList names the list a cursor belongs to: one resource's users, so that a cursor of
// another resource is refused.
func reverseList(svcID string) string { return "users_with_access:" + svcID }

// parseReverseQuery reads svc_id (required), limit and cursor, reporting every problem at once
// as FastAPI would. after is the last user id of the previous page, "" for the first.
func parseReverseQuery(c *gin.Context, org string) (svcID string, limit int, after string, err error) {
	var problems []Problem
	bad := func(name, typ, msg string) {
		problems = append(problems, Problem{Loc: []any{"query", name}, Msg: msg, Type: typ})
	}
	v, ok := c.GetQuery("svc_id")
	switch {
	case !ok:
		bad("svc_id", "missing", msgMissing)
	case !isUUID(v):
		bad("svc_id", "uuid_parsing", msgUUID)
	default:
		svcID = canonicalID(v)
	}
	limit = queryLimit(c, defaultReverseLimit, maxReverseLimit, bad)
	if v, ok := c.GetQuery("cursor"); ok {
		id, ok := decodeCursor(reverseList(svcID), org, v)
		if !ok {
			bad("cursor", "value_error", "Value error, the cursor is not one this list gave for this resource and these credentials")
		}
		after = id
	}
	if len(problems) > 0 {
		return "", 0, "", &ValidationError{Problems: problems}
	}
	return svcID, limit, after, nil
}
