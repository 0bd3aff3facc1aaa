package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// Decider is the decision engine as the API calls it; *authz.Engine is one. It decides with
// whatever policy runs, over the facts of the store the server writes to.
type Decider interface {
	// Decide answers one question; an error means the store could not be read.
	Decide(ctx context.Context, q authz.Question) (authz.Decision, error)
	// DecideEach answers questions with one policy, returning their answers in order and its
	// revision.
	DecideEach(ctx context.Context, qs []authz.Question) ([]bool, string, error)
	// Explain decides a question with allow and gives the policy's reasons.
	Explain(ctx context.Context, q authz.Question) (policy.Explanation, error)
	// UserHoldings is what a user holds, as the policy sees it; authz.ErrNoUser for none.
	UserHoldings(ctx context.Context, orgID, userID string) (authz.Holdings, error)
	// ResourceNames are the names of resources ids, "" for an id of none.
	ResourceNames(ctx context.Context, orgID string, ids []string) ([]string, error)
	// ResourcesNamed are the ids of the resources of a kind and name.
	ResourcesNamed(ctx context.Context, orgID string, kind storage.Kind, name string) ([]string, error)
	// Revision and Modules describe the policy deciding now; Memoised says whether its rules'
	// answers are remembered, and if not why.
	Revision() string
	Modules() []policy.Module
	Memoised() (allow, allowAll bool, why string)
}

// question is the question of a request about a user and the resources ids: allow_all when
// all, else allow; asked at now, with the request's API key.
func (s *Server) question(c *gin.Context, userID string, ids []string, all bool, now time.Time) authz.Question {
	return authz.Question{OrgID: orgID(c), UserID: userID, ResourceIDs: ids, All: all, APIKeyID: requestOf(c).keyID, Now: now}
}

// resourceRef is the spec's resource reference, an item of resource_list.
type resourceRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// resourceList returns the user's own grants as the spec's resource_list, in grant order. A
// grant whose resource no longer exists, or that has expired, is left out; grants through
// groups are not in it.
func (s *Server) resourceList(ctx context.Context, orgID, userID string) ([]resourceRef, error) {
	grants, err := s.store.UserGrants(ctx, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", userID, err)
	}
	now := s.now()
	ids := make([]string, 0, len(grants))
	for _, g := range grants {
		if !storage.Expired(g.ExpiresAt, now) {
			ids = append(ids, g.ResourceID)
		}
	}
	names, err := s.decider.ResourceNames(ctx, orgID, ids)
	if err != nil {
		return nil, fmt.Errorf("resources granted to %s: %w", userID, err)
	}
	refs := make([]resourceRef, 0, len(ids))
	for i, id := range ids {
		if names[i] != "" {
			refs = append(refs, resourceRef{ID: id, Name: names[i]})
		}
	}
	return refs, nil
}

// accessible returns those of rs that the user may use, as can_user_access would answer for
// each. It returns errUserNotFound if the organization has no such user.
func (s *Server) accessible(c *gin.Context, userID string, rs []storage.Resource) ([]storage.Resource, error) {
	return s.usable(c.Request.Context(), s.question(c, userID, nil, false, s.now()), rs)
}

// usable returns those of rs that q's user may use, each asked as q asks.
func (s *Server) usable(ctx context.Context, q authz.Question, rs []storage.Resource) ([]storage.Resource, error) {
	if _, err := s.decider.UserHoldings(ctx, q.OrgID, q.UserID); errors.Is(err, authz.ErrNoUser) {
		return nil, errUserNotFound
	} else if err != nil {
		return nil, err
	}
	qs := make([]authz.Question, len(rs))
	for i, r := range rs {
		qs[i] = q
		qs[i].ResourceIDs = []string{r.ID}
	}
	allowed, _, err := s.decider.DecideEach(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(rs)[:0]
	for i, r := range rs {
		if allowed[i] {
			out = append(out, r)
		}
	}
	return out, nil
}
