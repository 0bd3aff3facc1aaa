package api

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/storage"
)

// userAccessJSON is GET /users/{id}/access: what is granted to the user directly, what through
// each group the user is a member of, and what the check allows now. Expired grants are left
// out of the first two; effective is the check's answer, so an inactive user's is empty.
type userAccessJSON struct {
	UserID    string           `json:"user_id"`
	Active    bool             `json:"active"`
	Direct    []grantJSON      `json:"direct"`
	ViaGroups []groupGrantJSON `json:"via_groups"`
	Effective []resourceRef    `json:"effective"`
}

// groupGrantJSON is one group of a user with what is granted to it.
type groupGrantJSON struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Resources []grantJSON `json:"resources"`
}

// userAccess answers where a user's access comes from, read through the same builder as the
// check, so that it can never disagree with it.
func (s *Server) userAccess(c *gin.Context) {
	ctx, org, now := c.Request.Context(), orgID(c), s.now()
	u, err := s.store.GetUser(ctx, org, c.Param("id"))
	if err != nil {
		s.writeError(c, notFound(err, errUserNotFound.Detail))
		return
	}
	h, err := s.decider.UserHoldings(ctx, org, u.ID)
	if errors.Is(err, authz.ErrNoUser) {
		err = errUserNotFound // deleted just now
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := userAccessJSON{UserID: u.ID, Active: u.Active, Direct: liveList(h.Grants, now), ViaGroups: []groupGrantJSON{}, Effective: []resourceRef{}}
	candidates := map[string]bool{}
	for _, g := range out.Direct {
		candidates[g.ID] = true
	}
	for _, g := range h.Groups {
		resources := liveList(g.Grants, now)
		for _, r := range resources {
			candidates[r.ID] = true
		}
		out.ViaGroups = append(out.ViaGroups, groupGrantJSON{ID: g.ID, Name: g.Name, Resources: resources})
	}
	slices.SortFunc(out.ViaGroups, func(a, b groupGrantJSON) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	ids := make([]string, 0, len(candidates))
	for id := range candidates {
		ids = append(ids, id)
	}
	rs, err := s.store.GetResources(ctx, org, ids)
	if err == nil {
		rs, err = s.accessible(c, u.ID, rs)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	for _, r := range rs {
		out.Effective = append(out.Effective, resourceRef{ID: r.ID, Name: r.Name})
	}
	slices.SortFunc(out.Effective, func(a, b resourceRef) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	c.JSON(http.StatusOK, out)
}

// liveList shows the grants that have not expired at now, by resource name then id.
func liveList(grants []authz.Held, now time.Time) []grantJSON {
	out := []grantJSON{}
	for _, g := range grants {
		if !storage.Expired(g.ExpiresAt, now) {
			out = append(out, grantJSON{ID: g.ResourceID, Name: g.Name, ExpiresAt: expiryJSON(g.ExpiresAt)})
		}
	}
	slices.SortFunc(out, func(a, b grantJSON) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return out
}
