package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// userJSON is the spec's User.
type userJSON struct {
	ID             string         `json:"id"`
	Email          string         `json:"email"`
	First          string         `json:"first"`
	Last           string         `json:"last"`
	ImportedAt     string         `json:"imported_at"`
	ModifiedAt     string         `json:"modified_at"`
	BaseUserID     string         `json:"baseUser_id"`
	SourceMetadata sourceMetadata `json:"source_metadata"`
	ResourceList   []resourceRef  `json:"resource_list"`
}

type sourceMetadata struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

func userOf(u storage.User, refs []resourceRef) userJSON {
	if refs == nil {
		refs = []resourceRef{}
	}
	return userJSON{
		ID: u.ID, Email: u.Email, First: u.First, Last: u.Last,
		ImportedAt: timestamp(u.ImportedAt), ModifiedAt: timestamp(u.ModifiedAt),
		BaseUserID:     u.OrgID,
		SourceMetadata: sourceMetadata{Name: u.IntegrationName, ID: u.IntegrationID},
		ResourceList:   refs,
	}
}

// timestamp formats a time as ISO 8601 in UTC, to the millisecond.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type importRequest struct {
	AuthIntegrationID string       `json:"auth_integration_id" validate:"required,max=256"`
	Users             []importUser `json:"users" validate:"required,min=1,max=10000,dive"`
}

type importUser struct {
	ID    *string `json:"id" validate:"omitnil,min=1,max=256"`
	Email string  `json:"email" validate:"required,max=256"`
	First string  `json:"first" validate:"max=256"`
	Last  string  `json:"last" validate:"max=256"`
	// Attributes, when given (even empty), replace the user's; nil keeps them.
	Attributes map[string]string `json:"attributes" dict:"max=64,keymax=128,valuemax=1024"`
}

// importUsers upserts users by email within one authentication integration.
func (s *Server) importUsers(c *gin.Context) {
	var req importRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	in := make([]storage.UserImport, len(req.Users))
	for i, u := range req.Users {
		in[i] = storage.UserImport{Email: u.Email, First: u.First, Last: u.Last, Attributes: u.Attributes}
		if u.ID != nil {
			in[i].ID = *u.ID
		}
	}
	ctx, org := c.Request.Context(), orgID(c)
	users, err := s.store.ImportUsers(ctx, org, req.AuthIntegrationID, in, s.clock())
	if err != nil {
		err = notFound(err, "Auth integration not found.")
		err = scimAttributes(err)
		s.writeError(c, conflict(err, "A user id in the import is already used by another user, or differs from the id of the user with that email."))
		return
	}
	out := make([]userJSON, len(users))
	for i, u := range users {
		refs, err := s.resourceList(ctx, org, u.ID)
		if err != nil {
			s.writeError(c, err)
			return
		}
		out[i] = userOf(u, refs)
	}
	c.JSON(http.StatusOK, gin.H{"users": out})
}

// scimAttributes returns a 409 if err is storage.ErrSCIMAttributes, and err otherwise: the
// identity provider sets the attributes of a SCIM integration's users.
func scimAttributes(err error) error {
	if errors.Is(err, storage.ErrSCIMAttributes) {
		return &Error{Status: http.StatusConflict, Err: err,
			Detail: "The users of a SCIM integration take their attributes from their identity provider; import them without attributes."}
	}
	return err
}

func (s *Server) listUsers(c *gin.Context) {
	ctx, org := c.Request.Context(), orgID(c)
	users, err := s.store.ListUsers(ctx, org)
	if err != nil {
		s.writeError(c, err)
		return
	}
	grants, err := s.store.ListGrants(ctx, org)
	if err != nil {
		s.writeError(c, err)
		return
	}
	resources, err := s.store.ListResources(ctx, org, "")
	if err != nil {
		s.writeError(c, err)
		return
	}
	names := make(map[string]string, len(resources))
	for _, r := range resources {
		names[r.ID] = r.Name
	}
	refs := map[string][]resourceRef{}
	now := s.now()
	for _, g := range grants {
		if name, ok := names[g.ResourceID]; ok && !storage.Expired(g.ExpiresAt, now) {
			refs[g.UserID] = append(refs[g.UserID], resourceRef{ID: g.ResourceID, Name: name})
		}
	}
	out := make([]userJSON, len(users))
	for i, u := range users {
		out[i] = userOf(u, refs[u.ID])
	}
	c.JSON(http.StatusOK, gin.H{"users": out})
}
