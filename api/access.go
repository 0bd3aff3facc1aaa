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
// userID may use the resources ids now. Unknown users and resources are simply absent.
func (s *Server) policyInput(ctx context.Context, orgID, userID string, ids []string) (policy.Input, error) {
	in := policy.Input{ResourceIDs: ids, Resources: make(map[string]policy.Resource, len(ids)), Now: s.now()}
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

// policyUser builds what the policy reads about a user: the user's own grants, and the groups
// the user is a member of with theirs, each grant with its expiry and its resource's name.
// Grants of resources that no longer exist are left out; expired ones are kept, for the policy
// to tell "expired" from "not granted". It is the one place where these facts are read from
// the store, and it never reads the clock, so that what it builds stays true until the store
// changes and can be kept for many decisions.
func (s *Server) policyUser(ctx context.Context, u storage.User) (*policy.User, error) {
	grants, err := s.store.UserGrants(ctx, u.OrgID, u.ID)
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", u.ID, err)
	}
	groups, err := s.store.UserGroups(ctx, u.OrgID, u.ID)
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", u.ID, err)
	}
	groupIDs := make([]string, len(groups))
	for i, g := range groups {
		groupIDs[i] = g.ID
	}
	var groupGrants []storage.GroupGrant
	if len(groupIDs) > 0 {
		if groupGrants, err = s.store.GroupGrants(ctx, u.OrgID, groupIDs); err != nil {
			return nil, fmt.Errorf("grants of the groups of %s: %w", u.ID, err)
		}
	}
	ids := make([]string, 0, len(grants)+len(groupGrants))
	for _, g := range grants {
		ids = append(ids, g.ResourceID)
	}
	for _, g := range groupGrants {
		ids = append(ids, g.ResourceID)
	}
	rs, err := s.store.GetResources(ctx, u.OrgID, ids)
	if err != nil {
		return nil, fmt.Errorf("resources granted to %s: %w", u.ID, err)
	}
	names := make(map[string]string, len(rs))
	for _, r := range rs {
		names[r.ID] = r.Name
	}
	pu := &policy.User{ID: u.ID, Active: u.Active, Grants: make(map[string]policy.Grant, len(grants)), Groups: make(map[string]policy.Group, len(groups))}
	for _, g := range grants {
		if name, ok := names[g.ResourceID]; ok {
			pu.Grants[g.ResourceID] = policy.Grant{Name: name, ExpiresAt: g.ExpiresAt}
		}
	}
	for _, g := range groups {
		pu.Groups[g.ID] = policy.Group{Name: g.DisplayName, Grants: map[string]policy.Grant{}}
	}
	for _, g := range groupGrants {
		if name, ok := names[g.ResourceID]; ok {
			pu.Groups[g.GroupID].Grants[g.ResourceID] = policy.Grant{Name: name, ExpiresAt: g.ExpiresAt}
		}
	}
	return pu, nil
}

// decide asks the policy, failing closed: an evaluation error is logged and denies. It also
// returns the revision of the policy that decided.
func (s *Server) decide(ctx context.Context, all bool, in policy.Input) (bool, string) {
	d, revision := s.pinPolicy()
	return s.decideWith(ctx, d, all, in), revision
}

// decideWith is decide with a policy already pinned, for answers made of many decisions
// that must all come from one revision.
func (s *Server) decideWith(ctx context.Context, d Decider, all bool, in policy.Input) bool {
	decide := d.Allow
	if all {
		decide = d.AllowAll
	}
	allowed, err := decide(ctx, in)
	s.metrics.decision(allowed, err)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "policy evaluation failed; denied", slog.String("error", err.Error()))
		return false
	}
	return allowed
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
	now := s.now()
	for _, r := range rs {
		in := policy.Input{User: pu, ResourceIDs: []string{r.ID}, Resources: map[string]policy.Resource{r.ID: {Kind: string(r.Kind), Name: r.Name}}, Now: now}
		if allowed, _ := s.decide(ctx, false, in); allowed {
			out = append(out, r)
		}
	}
	return out, nil
}
