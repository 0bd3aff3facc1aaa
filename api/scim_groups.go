package api

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/scim"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// A SCIM group is a group of users of the token's integration, kept with its members (user
// ids, with the display names the provider sent) for group-based access.

// groupAttributes returns the group's SCIM attributes without id, meta and schemas: what PATCH
// operations apply to.
func groupAttributes(g storage.Group) map[string]any {
	doc := map[string]any{"displayName": g.DisplayName}
	if g.ExternalID != "" {
		doc["externalId"] = g.ExternalID
	}
	if len(g.Members) > 0 {
		members := make([]any, len(g.Members))
		for i, m := range g.Members {
			members[i] = memberOf(g, m)
		}
		doc["members"] = members
	}
	return doc
}

// memberOf is member m of g as PATCH operations see it: its value, and its display if it has
// one.
func memberOf(g storage.Group, m string) map[string]any {
	member := map[string]any{"value": m}
	if d, ok := g.MemberDisplays[m]; ok {
		member["display"] = d
	}
	return member
}

// groupResource is the group as SCIM shows it. members is always there, empty or not, so that
// a client sees the state after removing the last member without guessing.
func groupResource(c *gin.Context, g storage.Group) map[string]any {
	doc := groupAttributes(g)
	members := make([]any, len(g.Members))
	for i, m := range g.Members {
		member := memberOf(g, m)
		member["$ref"], member["type"] = scimLocation(c, "/Users/"+m), "User"
		members[i] = member
	}
	doc["members"] = members
	doc["schemas"] = []string{scim.GroupSchema}
	doc["id"] = g.ID
	doc["meta"] = map[string]any{
		"resourceType": scim.Group.Name,
		"created":      timestamp(g.CreatedAt),
		"lastModified": timestamp(g.ModifiedAt),
		"location":     scimLocation(c, "/Groups/"+g.ID),
		"version":      groupVersion(g),
	}
	return doc
}

func groupVersion(g storage.Group) string { return scimVersion(g.ModifiedAt.UnixMilli()) }

// setGroupAttributes makes g what the SCIM attributes doc say, and moves ModifiedAt to now if
// anything changed. Members are named by their value, the user's id; each is kept once, with
// the display of its first mention that has one.
func setGroupAttributes(g *storage.Group, doc map[string]any, now time.Time) error {
	before := *g
	name, _ := doc["displayName"].(string)
	if name == "" {
		return &scim.Error{Type: scim.InvalidValue, Detail: "displayName is required"}
	}
	externalID, _ := doc["externalId"].(string)
	for attr, v := range map[string]string{"displayName": name, "externalId": externalID} {
		if err := checkLength(attr, v); err != nil {
			return err
		}
	}
	var members []string
	var displays map[string]string
	seen := map[string]bool{}
	list, _ := doc["members"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		v, _ := m["value"].(string)
		if v == "" {
			return &scim.Error{Type: scim.InvalidValue, Detail: "every member needs a value, the id of a user"}
		}
		if !seen[v] {
			seen[v] = true
			members = append(members, v)
		}
		if d, ok := m["display"].(string); ok && d != "" {
			if err := checkLength("members.display", d); err != nil {
				return err
			}
			if _, kept := displays[v]; !kept {
				if displays == nil {
					displays = map[string]string{}
				}
				displays[v] = d
			}
		}
	}
	g.DisplayName, g.ExternalID, g.Members, g.MemberDisplays = name, externalID, members, displays
	if g.DisplayName != before.DisplayName || g.ExternalID != before.ExternalID || !slices.Equal(g.Members, before.Members) ||
		!maps.Equal(g.MemberDisplays, before.MemberDisplays) {
		g.ModifiedAt = now
	}
	return nil
}

// scimGroupError maps what the store says about a group to SCIM's answers.
func scimGroupError(err error, id string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return scimNotFound("Group", id, err)
	case errors.Is(err, storage.ErrConflict):
		return scimError(http.StatusConflict, "uniqueness", "A group with this displayName already exists in this integration.", err)
	case errors.Is(err, storage.ErrUnknownMember):
		return scimError(http.StatusBadRequest, scim.InvalidValue, "Every member must be a user provisioned through this integration.", err)
	}
	return scimBadRequest(err)
}

func (s *Server) scimCreateGroup(c *gin.Context) {
	body, _, err := readSCIMBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	doc, err := scim.Build(scim.Group, body)
	if err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	now := s.clock()
	g := storage.Group{OrgID: orgID(c), ID: uid.New(), IntegrationID: scimIntegration(c), CreatedAt: now}
	if err := setGroupAttributes(&g, doc, now); err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	g.ModifiedAt = now
	if err := s.store.CreateGroup(c.Request.Context(), g); err != nil {
		s.writeError(c, scimGroupError(err, g.ID))
		return
	}
	s.scimResource(c, scim.Group, http.StatusCreated, groupResource(c, g))
}

func (s *Server) scimGetGroup(c *gin.Context) {
	id := c.Param("id")
	g, err := s.store.GetGroup(c.Request.Context(), orgID(c), scimIntegration(c), id)
	if err != nil {
		s.writeError(c, scimGroupError(err, id))
		return
	}
	s.scimResource(c, scim.Group, http.StatusOK, groupResource(c, g))
}

// scimGroupsPage answers a page of the integration's groups that match the query's filter.
func (s *Server) scimGroupsPage(c *gin.Context, q listQuery) {
	ctx, org, integ := c.Request.Context(), orgID(c), scimIntegration(c)
	var err error
	var groups []storage.Group
	total := 0
	if q.filter == nil {
		groups, total, err = s.store.IntegrationGroups(ctx, org, integ, q.startIndex-1, q.count)
	} else {
		groups, err = s.groupCandidates(ctx, org, integ, q.filter)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	resources := make([]map[string]any, len(groups))
	for i, g := range groups {
		if err := checkDeadline(ctx, i); err != nil {
			s.writeError(c, err)
			return
		}
		resources[i] = groupResource(c, g)
	}
	if q.filter != nil {
		if resources, total, err = filterPage(ctx, scim.Group, q, resources); err != nil {
			s.writeError(c, err)
			return
		}
	}
	s.scimList(c, scim.Group, q, total, resources)
}

// groupCandidates returns the integration's groups that may match filter: found by index when
// the filter asks for one displayName or id (as Entra ID does to learn whether a user is a
// member: `id eq "…" and members[value eq "…"]`), else all of them, if filtering them all is
// within maxFilterWork.
func (s *Server) groupCandidates(ctx context.Context, org, integ string, f *scim.Filter) ([]storage.Group, error) {
	if v, ok := f.Equality(scim.Group, "id"); ok {
		return optional(s.store.GetGroup(ctx, org, integ, v))
	}
	if v, ok := f.Equality(scim.Group, "displayName"); ok {
		return optional(s.store.GroupByName(ctx, org, integ, v))
	}
	_, total, err := s.store.IntegrationGroups(ctx, org, integ, 0, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFilterWork(f, total); err != nil {
		return nil, err
	}
	groups, _, err := s.store.IntegrationGroups(ctx, org, integ, 0, -1)
	return groups, err
}

// updateGroup applies change to the integration's group id in one atomic read-modify-write,
// after checking If-Match against the version read, and answers with the group, or, when
// brief, with 204 and its ETag alone.
func (s *Server) updateGroup(c *gin.Context, brief bool, change func(doc map[string]any) (map[string]any, error)) {
	id, ifMatch, now := c.Param("id"), c.GetHeader("If-Match"), s.clock()
	g, err := s.store.UpdateGroup(c.Request.Context(), orgID(c), scimIntegration(c), id, func(g *storage.Group) error {
		if err := checkIfMatch(ifMatch, groupVersion(*g)); err != nil {
			return err
		}
		doc, err := change(groupAttributes(*g))
		if err != nil {
			return err
		}
		return setGroupAttributes(g, doc, now)
	})
	if err != nil {
		s.writeError(c, scimGroupError(err, id))
		return
	}
	if brief {
		c.Header("ETag", groupVersion(g))
		scimNoContent(c)
		return
	}
	s.scimResource(c, scim.Group, http.StatusOK, groupResource(c, g))
}

// scimReplaceGroup is PUT: the body replaces the group's name, externalId and members.
func (s *Server) scimReplaceGroup(c *gin.Context) {
	body, _, err := readSCIMBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	doc, err := scim.Build(scim.Group, body)
	if err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	s.updateGroup(c, false, func(map[string]any) (map[string]any, error) { return doc, nil })
}

// scimPatchGroup answers 204 without a body, as Entra ID expects (a group's members may be
// many), unless the request asks for attributes or excludedAttributes: then 200 with the
// group, projected so (RFC 7644 §3.5.2).
func (s *Server) scimPatchGroup(c *gin.Context) {
	_, raw, err := readSCIMBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	ops, err := scim.ParsePatch(raw)
	if err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	brief := queryFold(c, "attributes") == "" && queryFold(c, "excludedAttributes") == ""
	s.updateGroup(c, brief, func(doc map[string]any) (map[string]any, error) {
		return doc, scim.Apply(scim.Group, doc, ops)
	})
}

func (s *Server) scimDeleteGroup(c *gin.Context) {
	ctx, org, integ, id := c.Request.Context(), orgID(c), scimIntegration(c), c.Param("id")
	if ifMatch := c.GetHeader("If-Match"); ifMatch != "" {
		g, err := s.store.GetGroup(ctx, org, integ, id)
		if err == nil {
			err = checkIfMatch(ifMatch, groupVersion(g))
		}
		if err != nil {
			s.writeError(c, scimGroupError(err, id))
			return
		}
	}
	if err := s.store.DeleteGroup(ctx, org, integ, id); err != nil {
		s.writeError(c, scimGroupError(err, id))
		return
	}
	scimNoContent(c)
}
