package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/grantry/grantry/storage"
)

// view gathers the facts of q's question, from memory or the store, into a view of its input.
func (e *Engine) view(ctx context.Context, q *Question) (*view, error) {
	if !e.fresh() {
		return e.viewFromStore(ctx, q)
	}
	o := e.cache.org(q.OrgID)
	cat, err := e.catalog(ctx, o, q.OrgID)
	if err != nil {
		return nil, err
	}
	u, groups, err := e.user(ctx, o, q.OrgID, q.UserID, cat)
	if err != nil {
		return nil, err
	}
	return newView(q, cat, u, groups), nil
}

// viewFromStore gathers the facts of q's question from the store alone, reading no more than
// the question needs (the user, and of the catalog the resources asked about and those the
// user holds), and keeps nothing: the engine holds nothing, or on a shared store what it holds
// is not known to be fresh.
func (e *Engine) viewFromStore(ctx context.Context, q *Question) (*view, error) {
	f, err := e.store.UserFacts(ctx, q.OrgID, q.UserID)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", q.UserID, err)
	}
	ids := slices.Clone(q.ResourceIDs)
	for _, g := range f.Grants {
		ids = append(ids, g.ResourceID)
	}
	for _, g := range f.GroupGrants {
		ids = append(ids, g.ResourceID)
	}
	rs, err := e.store.GetResources(ctx, q.OrgID, ids)
	if err != nil {
		return nil, fmt.Errorf("resources of %s: %w", q.OrgID, err)
	}
	cat := newCatalog(rs, nil)
	if !f.Found {
		return newView(q, cat, nil, nil), nil
	}
	if f.User.IntegrationID != "" {
		a, err := e.store.GetAuthIntegration(ctx, q.OrgID, f.User.IntegrationID)
		switch {
		case err == nil:
			cat.sources[a.ID] = newSource(a)
		case !errors.Is(err, storage.ErrNotFound):
			return nil, fmt.Errorf("integration of %s: %w", q.UserID, err)
		}
	}
	read := groupsRead(cat, f)
	u := userOf(cat, f)
	groups := make([]*group, len(u.groups))
	for i, id := range u.groups {
		groups[i] = read[id]
	}
	return newView(q, cat, u, groups), nil
}

// catalog returns the organization's catalog, held or read from the store and kept.
func (e *Engine) catalog(ctx context.Context, o *org, orgID string) (*catalog, error) {
	if cat, ok := e.cache.catalog(o); ok {
		return cat, nil
	}
	st := e.cache.catalogStamp(o)
	rs, err := e.store.ListResources(ctx, orgID, "")
	if err != nil {
		return nil, fmt.Errorf("resources of %s: %w", orgID, err)
	}
	as, err := e.store.ListAuthIntegrations(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("integrations of %s: %w", orgID, err)
	}
	return e.cache.keepCatalog(o, newCatalog(rs, as), st), nil
}

// newCatalog is a catalog of rs, numbered in their order, and of the sources as.
func newCatalog(rs []storage.Resource, as []storage.AuthIntegration) *catalog {
	cat := &catalog{resources: make(map[string]*resource, len(rs)), sources: make(map[string]*source, len(as))}
	for _, r := range rs {
		res := newResource(r)
		res.num = cat.next
		cat.next++
		cat.resources[r.ID] = res
	}
	for _, a := range as {
		cat.sources[a.ID] = newSource(a)
	}
	return cat
}

// userOf is the user of facts f, which were found.
func userOf(cat *catalog, f storage.Facts) *user {
	ids := make([]string, len(f.Groups))
	for i, g := range f.Groups {
		ids[i] = g.ID
	}
	return newUser(cat, f.User, ids, len(f.Grants), func(add func(string, time.Time)) {
		for _, g := range f.Grants {
			add(g.ResourceID, g.ExpiresAt)
		}
	})
}

// user returns the organization's user (nil if there is none) and the user's groups, held or
// read from the store and kept.
func (e *Engine) user(ctx context.Context, o *org, orgID, userID string, cat *catalog) (*user, []*group, error) {
	if u, ok := e.cache.user(o, userID); ok {
		e.cache.hits.Add(1)
		if u == nil {
			return nil, nil, nil
		}
		groups, err := e.groupsOf(ctx, o, orgID, u, cat, nil)
		return u, groups, err
	}
	e.cache.misses.Add(1)
	st := e.cache.userStamp(o, userID)
	f, err := e.store.UserFacts(ctx, orgID, userID)
	if err != nil {
		return nil, nil, fmt.Errorf("user %s: %w", userID, err)
	}
	if !f.Found {
		e.cache.keepUser(o, userID, nil, st, cat)
		return nil, nil, nil
	}
	read := groupsRead(cat, f)
	u := userOf(cat, f)
	// The groups read with the user are as fresh as the user, and kept on the same terms.
	for id, g := range read {
		e.cache.keepGroup(o, id, g, st, cat)
	}
	e.cache.keepUser(o, userID, u, st, cat)
	groups, err := e.groupsOf(ctx, o, orgID, u, cat, read)
	return u, groups, err
}

// groupsRead are the groups of a user's facts, by id.
func groupsRead(cat *catalog, f storage.Facts) map[string]*group {
	read := make(map[string]*group, len(f.Groups))
	for _, g := range f.Groups {
		gg := f.GroupGrants
		read[g.ID] = &group{name: g.DisplayName, grants: grantsOf(cat, 0, func(add func(string, time.Time)) {
			for _, x := range gg {
				if x.GroupID == g.ID {
					add(x.ResourceID, x.ExpiresAt)
				}
			}
		})}
	}
	return read
}

// groupsOf returns u's groups in the order of u.groups: those in read, else held, else read
// from the store and kept; nil for a group that no longer exists.
func (e *Engine) groupsOf(ctx context.Context, o *org, orgID string, u *user, cat *catalog, read map[string]*group) ([]*group, error) {
	if len(u.groups) == 0 {
		return nil, nil
	}
	out := make([]*group, len(u.groups))
	for i, id := range u.groups {
		if g, ok := read[id]; ok {
			out[i] = g
			continue
		}
		if g, ok := e.cache.group(o, id); ok {
			out[i] = g
			continue
		}
		g, err := e.loadGroup(ctx, o, orgID, id, cat)
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

// loadGroup reads the organization's group from the store (nil if there is none), and keeps it.
func (e *Engine) loadGroup(ctx context.Context, o *org, orgID, groupID string, cat *catalog) (*group, error) {
	st := e.cache.groupStamp(o)
	rec, err := e.store.GetOrgGroup(ctx, orgID, groupID)
	var g *group
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("group %s: %w", groupID, err)
	default:
		gg, err := e.store.GroupGrants(ctx, orgID, []string{groupID})
		if err != nil {
			return nil, fmt.Errorf("grants of group %s: %w", groupID, err)
		}
		g = &group{name: rec.DisplayName, grants: grantsOf(cat, len(gg), func(add func(string, time.Time)) {
			for _, x := range gg {
				add(x.ResourceID, x.ExpiresAt)
			}
		})}
	}
	e.cache.keepGroup(o, groupID, g, st, cat)
	return g, nil
}
