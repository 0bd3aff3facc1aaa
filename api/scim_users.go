package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/scim"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// A SCIM user is a Grantry user of the token's integration. Its userName is the user's email,
// name.givenName and name.familyName its first and last names, and externalId and active are
// kept as they are; every other attribute of the User schema and the Enterprise User
// extension is kept as given, in User.Attributes, and given back.

// userAttributes returns the user's SCIM attributes without id, meta and schemas: what PATCH
// operations apply to.
func userAttributes(u storage.User) (map[string]any, error) {
	doc := map[string]any{}
	if len(u.Attributes) > 0 {
		if err := json.Unmarshal(u.Attributes, &doc); err != nil {
			return nil, fmt.Errorf("decode SCIM attributes of user %s: %w", u.ID, err)
		}
	}
	doc["userName"] = u.Email
	doc["active"] = u.Active
	if u.ExternalID != "" {
		doc["externalId"] = u.ExternalID
	}
	name, _ := doc["name"].(map[string]any)
	if name == nil {
		name = map[string]any{}
	}
	for k, v := range map[string]string{"givenName": u.First, "familyName": u.Last} {
		if v != "" {
			name[k] = v
		}
	}
	if len(name) > 0 {
		doc["name"] = name
	}
	return doc, nil
}

// userResource is the user as SCIM shows it.
func userResource(c *gin.Context, u storage.User) (map[string]any, error) {
	doc, err := userAttributes(u)
	if err != nil {
		return nil, err
	}
	schemas := []string{scim.UserSchema}
	if _, ok := doc[scim.EnterpriseUserSchema]; ok {
		schemas = append(schemas, scim.EnterpriseUserSchema)
	}
	doc["schemas"] = schemas
	doc["id"] = u.ID
	doc["meta"] = map[string]any{
		"resourceType": scim.User.Name,
		"created":      timestamp(u.ImportedAt),
		"lastModified": timestamp(u.ModifiedAt),
		"location":     scimLocation(c, "/Users/"+u.ID),
		"version":      userVersion(u),
	}
	return doc, nil
}

func userVersion(u storage.User) string { return scimVersion(u.ModifiedAt.UnixMilli()) }

// setUserAttributes makes u what the SCIM attributes doc say, and moves ModifiedAt to now if
// anything changed. userName is required (RFC 7643 §4.1.1): nothing else stands in for it.
// active, when absent, stays as it was: a PUT that leaves it out must not bring a deactivated
// user back.
func setUserAttributes(u *storage.User, doc map[string]any, now time.Time) error {
	before := *u
	userName, _ := doc["userName"].(string)
	if userName == "" {
		return &scim.Error{Type: scim.InvalidValue, Detail: "userName is required"}
	}
	name, _ := doc["name"].(map[string]any)
	first, _ := name["givenName"].(string)
	last, _ := name["familyName"].(string)
	externalID, _ := doc["externalId"].(string)
	for attr, v := range map[string]string{"userName": userName, "name.givenName": first, "name.familyName": last, "externalId": externalID} {
		if err := checkLength(attr, v); err != nil {
			return err
		}
	}
	u.Email, u.First, u.Last, u.ExternalID = userName, first, last, externalID
	if active, ok := doc["active"].(bool); ok {
		u.Active = active
	}

	rest := maps.Clone(doc)
	for _, k := range []string{"id", "meta", "schemas", "userName", "externalId", "active"} {
		delete(rest, k)
	}
	if name != nil {
		name = maps.Clone(name)
		delete(name, "givenName")
		delete(name, "familyName")
		if len(name) == 0 {
			delete(rest, "name")
		} else {
			rest["name"] = name
		}
	}
	u.Attributes = nil
	if len(rest) > 0 {
		var err error
		if u.Attributes, err = json.Marshal(rest); err != nil {
			return fmt.Errorf("encode SCIM attributes: %w", err)
		}
	}
	if !reflect.DeepEqual(*u, before) {
		u.ModifiedAt = now
	}
	return nil
}

// scimUserError maps what the store says about a user to SCIM's answers.
func scimUserError(err error, id string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return scimNotFound("User", id, err)
	case errors.Is(err, storage.ErrConflict):
		return scimError(http.StatusConflict, "uniqueness", "A user with this userName already exists in this integration.", err)
	}
	return scimBadRequest(err)
}

func (s *Server) scimCreateUser(c *gin.Context) {
	body, _, err := readSCIMBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	doc, err := scim.Build(scim.User, body)
	if err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	now := s.clock()
	u := storage.User{
		OrgID: orgID(c), ID: uid.New(), IntegrationID: scimIntegration(c), Active: true, ImportedAt: now,
	}
	if err := setUserAttributes(&u, doc, now); err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	u.ModifiedAt = now
	if err := s.store.CreateUser(c.Request.Context(), u); err != nil {
		s.writeError(c, scimUserError(err, u.ID))
		return
	}
	s.writeUser(c, http.StatusCreated, u)
}

func (s *Server) writeUser(c *gin.Context, status int, u storage.User) {
	res, err := userResource(c, u)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.scimResource(c, scim.User, status, res)
}

// integrationUser returns the integration's user id, or a SCIM 404.
func (s *Server) integrationUser(c *gin.Context, id string) (storage.User, error) {
	u, err := s.store.GetUser(c.Request.Context(), orgID(c), id)
	if err == nil && u.IntegrationID != scimIntegration(c) {
		err = storage.ErrNotFound
	}
	if err != nil {
		return storage.User{}, scimUserError(err, id)
	}
	return u, nil
}

func (s *Server) scimGetUser(c *gin.Context) {
	u, err := s.integrationUser(c, c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.writeUser(c, http.StatusOK, u)
}

// scimUsersPage answers a page of the integration's users that match the query's filter.
func (s *Server) scimUsersPage(c *gin.Context, q listQuery) {
	ctx, org, integ := c.Request.Context(), orgID(c), scimIntegration(c)
	var err error
	var users []storage.User
	total := 0
	if q.filter == nil {
		users, total, err = s.store.IntegrationUsers(ctx, org, integ, q.startIndex-1, q.count)
	} else {
		users, err = s.userCandidates(ctx, org, integ, q.filter)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	resources := make([]map[string]any, 0, len(users))
	for i, u := range users {
		if err := checkDeadline(ctx, i); err != nil {
			s.writeError(c, err)
			return
		}
		res, err := userResource(c, u)
		if err != nil {
			s.writeError(c, err)
			return
		}
		resources = append(resources, res)
	}
	if q.filter != nil {
		if resources, total, err = filterPage(ctx, scim.User, q, resources); err != nil {
			s.writeError(c, err)
			return
		}
	}
	s.scimList(c, scim.User, q, total, resources)
}

// userCandidates returns the integration's users that may match filter: found by index when
// the filter asks for one userName, externalId or id, else all of them, if filtering them all
// is within maxFilterWork.
func (s *Server) userCandidates(ctx context.Context, org, integ string, f *scim.Filter) ([]storage.User, error) {
	if v, ok := f.Equality(scim.User, "userName"); ok {
		u, err := s.store.UserByEmail(ctx, org, integ, v)
		return optional(u, err)
	}
	if v, ok := f.Equality(scim.User, "externalId"); ok {
		return s.store.UsersByExternalID(ctx, org, integ, v)
	}
	if v, ok := f.Equality(scim.User, "id"); ok {
		u, err := s.store.GetUser(ctx, org, v)
		if err == nil && u.IntegrationID != integ {
			return nil, nil
		}
		return optional(u, err)
	}
	_, total, err := s.store.IntegrationUsers(ctx, org, integ, 0, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFilterWork(f, total); err != nil {
		return nil, err
	}
	users, _, err := s.store.IntegrationUsers(ctx, org, integ, 0, -1)
	return users, err
}

// optional turns a lookup of one record into a list of none or one.
func optional[T any](v T, err error) ([]T, error) {
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []T{v}, nil
}

// updateUser applies change to the integration's user id in one atomic read-modify-write,
// after checking If-Match against the version read, and answers with the user.
func (s *Server) updateUser(c *gin.Context, change func(doc map[string]any) (map[string]any, error)) {
	id, ifMatch, now := c.Param("id"), c.GetHeader("If-Match"), s.clock()
	u, err := s.store.UpdateUser(c.Request.Context(), orgID(c), scimIntegration(c), id, func(u *storage.User) error {
		if err := checkIfMatch(ifMatch, userVersion(*u)); err != nil {
			return err
		}
		doc, err := userAttributes(*u)
		if err != nil {
			return err
		}
		if doc, err = change(doc); err != nil {
			return err
		}
		return setUserAttributes(u, doc, now)
	})
	if err != nil {
		s.writeError(c, scimUserError(err, id))
		return
	}
	s.writeUser(c, http.StatusOK, u)
}

// scimReplaceUser is PUT: the body replaces every attribute the client may write, except
// that a missing active leaves the user as active or inactive as it was.
func (s *Server) scimReplaceUser(c *gin.Context) {
	body, _, err := readSCIMBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	doc, err := scim.Build(scim.User, body)
	if err != nil {
		s.writeError(c, scimBadRequest(err))
		return
	}
	s.updateUser(c, func(map[string]any) (map[string]any, error) { return doc, nil })
}

func (s *Server) scimPatchUser(c *gin.Context) {
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
	s.updateUser(c, func(doc map[string]any) (map[string]any, error) {
		return doc, scim.Apply(scim.User, doc, ops)
	})
}

// scimDeleteUser removes the user, its grants and its group memberships: every check for it
// is false from the next request on.
func (s *Server) scimDeleteUser(c *gin.Context) {
	ctx, id := c.Request.Context(), c.Param("id")
	if ifMatch := c.GetHeader("If-Match"); ifMatch != "" {
		u, err := s.integrationUser(c, id)
		if err == nil {
			err = checkIfMatch(ifMatch, userVersion(u))
		}
		if err != nil {
			s.writeError(c, err)
			return
		}
	}
	if err := s.store.DeleteUser(ctx, orgID(c), scimIntegration(c), id, s.clock()); err != nil {
		s.writeError(c, scimUserError(err, id))
		return
	}
	scimNoContent(c)
}
