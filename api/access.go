package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// resourceRef is the spec's resource reference, an item of resource_list.
type resourceRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// resourceList returns the user's grants as the spec's resource_list, in grant order. A grant
// whose resource no longer exists is left out.
func (s *Server) resourceList(ctx context.Context, orgID, userID string) ([]resourceRef, error) {
	grants, err := s.store.UserGrants(ctx, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", userID, err)
	}
	ids := make([]string, len(grants))
	for i, g := range grants {
		ids[i] = g.ResourceID
	}
	rs, err := s.store.GetResources(ctx, orgID, ids)
	if err != nil {
		return nil, fmt.Errorf("resources granted to %s: %w", userID, err)
	}
	refs := make([]resourceRef, len(rs))
	for i, r := range rs {
		refs[i] = resourceRef{ID: r.ID, Name: r.Name}
	}
	return refs, nil
}

// policyInput gathers from the caller's organization what the policy reads to decide whether
// userID may use the resources ids. Unknown users and resources are simply absent.
func (s *Server) policyInput(ctx context.Context, orgID, userID string, ids []string) (policy.Input, error) {
	in := policy.Input{ResourceIDs: ids, Resources: make(map[string]policy.Resource, len(ids))}
	rs, err := s.store.GetResources(ctx, orgID, ids)
	if err != nil {
		return in, fmt.Errorf("resources asked about: %w", err)
	}
	for _, r := range rs {
		in.Resources[r.ID] = policy.Resource{Kind: string(r.Kind), Name: r.Name}
	}
	u, err := s.store.GetUser(ctx, orgID, userID)
	if errors.Is(err, storage.ErrNotFound) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("user %s: %w", userID, err)
	}
	in.User, err = s.policyUser(ctx, u)
	return in, err
}

func (s *Server) policyUser(ctx context.Context, u storage.User) (*policy.User, error) {
	refs, err := s.resourceList(ctx, u.OrgID, u.ID)
	if err != nil {
		return nil, err
	}
	pu := &policy.User{ID: u.ID, Active: u.Active, Grants: make(map[string]string, len(refs))}
	for _, r := range refs {
		pu.Grants[r.ID] = r.Name
	}
	return pu, nil
}

// decide asks the policy, failing closed: an evaluation error is logged and denies. It also
// returns the revision of the policy that decided.
func (s *Server) decide(ctx context.Context, all bool, in policy.Input) (bool, string) {
	d, revision := s.pinPolicy()
	decide := d.Allow
	if all {
		decide = d.AllowAll
	}
	allowed, err := decide(ctx, in)
	s.metrics.decision(allowed, err)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "policy evaluation failed; denied", slog.String("error", err.Error()))
		return false, revision
	}
	return allowed, revision
}

// accessible returns those of rs that the user may use, as the access check would answer for
// each. It returns ErrNotFound if the organization has no such user.
func (s *Server) accessible(ctx context.Context, orgID, userID string, rs []storage.Resource) ([]storage.Resource, error) {
	u, err := s.store.GetUser(ctx, orgID, userID)
	if err != nil {
		return nil, notFound(err, errUserNotFound.Detail)
	}
	pu, err := s.policyUser(ctx, u)
	if err != nil {
		return nil, err
	}
	var out []storage.Resource
	for _, r := range rs {
		in := policy.Input{User: pu, ResourceIDs: []string{r.ID}, Resources: map[string]policy.Resource{r.ID: {Kind: string(r.Kind), Name: r.Name}}}
		if allowed, _ := s.decide(ctx, false, in); allowed {
			out = append(out, r)
		}
	}
	return out, nil
}
