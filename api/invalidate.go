package api

import (
	"context"
	"slices"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// invalidating is the store as the server uses it: every write that may change a decision
// drops what the check path cached of the users it touched (or of the whole organization,
// where a write reaches many users), and then touches the organization in the store's change
// feed so that other processes drop theirs. Both happen before the write is acknowledged, so a
// check that follows a write always sees it. Writes that change no decision (secrets, API
// keys, events) pass straight through; TestEveryStoreMethodIsClassified keeps the two lists
// complete.
type invalidating struct {
	storage.Store
	cache *accessCache[*policy.User]
}

// changed drops, with drop, what the check path keeps of what a write reached, and touches the
// organization if the write succeeded. A failed write may still have happened, so it drops
// too.
func (st invalidating) changed(ctx context.Context, err error, orgID string, drop func()) error {
	drop()
	if err != nil {
		return err
	}
	return st.Store.Touch(ctx, orgID)
}

// changedUser drops the cached facts of one user after a write.
func (st invalidating) changedUser(ctx context.Context, err error, orgID, userID string) error {
	return st.changed(ctx, err, orgID, func() { st.cache.invalidateUser(orgID, userID) })
}

// changedOrg drops what is cached of every user of an organization after a write.
func (st invalidating) changedOrg(ctx context.Context, err error, orgID string) error {
	return st.changed(ctx, err, orgID, func() { st.cache.invalidateOrg(orgID) })
}

// Resources: a decision reads whether the resources asked about exist, and removing one also
// removes its grants, so both reach the whole organization.

// CreateResource changes no user's grants: no one holds one of a new resource.
func (st invalidating) CreateResource(ctx context.Context, r storage.Resource) error {
	return st.changed(ctx, st.Store.CreateResource(ctx, r), r.OrgID, func() { st.cache.invalidateResources(r.OrgID) })
}

func (st invalidating) DeleteResource(ctx context.Context, orgID, id string) error {
	return st.changedOrg(ctx, st.Store.DeleteResource(ctx, orgID, id), orgID)
}

// Users.

// ImportUsers reaches the users it returns, matched or new (a new user may have been cached as
// unknown); a failed import, which may have written part of them, the whole organization.
func (st invalidating) ImportUsers(ctx context.Context, orgID, integrationID string, users []storage.UserImport, now time.Time) ([]storage.User, error) {
	out, err := st.Store.ImportUsers(ctx, orgID, integrationID, users, now)
	if err != nil {
		return out, st.changedOrg(ctx, err, orgID)
	}
	return out, st.changed(ctx, nil, orgID, func() {
		for _, u := range out {
			st.cache.invalidateUser(orgID, u.ID)
		}
	})
}

func (st invalidating) CreateUser(ctx context.Context, u storage.User) error {
	return st.changedUser(ctx, st.Store.CreateUser(ctx, u), u.OrgID, u.ID)
}

func (st invalidating) UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*storage.User) error) (storage.User, error) {
	u, err := st.Store.UpdateUser(ctx, orgID, integrationID, id, fn)
	return u, st.changedUser(ctx, err, orgID, id)
}

func (st invalidating) DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error {
	return st.changedUser(ctx, st.Store.DeleteUser(ctx, orgID, integrationID, id, now), orgID, id)
}

// DeleteAuthIntegration removes every user of the integration, and the users' source the
// policy reads: it reaches the whole organization.
func (st invalidating) DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (storage.RemovedIntegration, error) {
	removed, err := st.Store.DeleteAuthIntegration(ctx, orgID, id, now)
	return removed, st.changedOrg(ctx, err, orgID)
}

// Grants to users.

func (st invalidating) Grant(ctx context.Context, g storage.Grant) error {
	return st.changedUser(ctx, st.Store.Grant(ctx, g), g.OrgID, g.UserID)
}

func (st invalidating) GrantChanged(ctx context.Context, g storage.Grant) (bool, error) {
	changed, err := st.Store.GrantChanged(ctx, g)
	return changed, st.changedUser(ctx, err, g.OrgID, g.UserID)
}

func (st invalidating) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	before, err := st.Store.SetGrant(ctx, g)
	return before, st.changedUser(ctx, err, g.OrgID, g.UserID)
}

func (st invalidating) Revoke(ctx context.Context, orgID, userID, resourceID string) error {
	return st.changedUser(ctx, st.Store.Revoke(ctx, orgID, userID, resourceID), orgID, userID)
}

func (st invalidating) RevokeChanged(ctx context.Context, orgID, userID, resourceID string) (bool, error) {
	removed, err := st.Store.RevokeChanged(ctx, orgID, userID, resourceID)
	return removed, st.changedUser(ctx, err, orgID, userID)
}

// Groups and their grants reach every member.

// CreateGroup reaches the group's members only: of a group, a decision reads only the groups
// of the user it is about.
func (st invalidating) CreateGroup(ctx context.Context, g storage.Group) error {
	err := st.Store.CreateGroup(ctx, g)
	if err != nil {
		return st.changedOrg(ctx, err, g.OrgID)
	}
	return st.changed(ctx, nil, g.OrgID, func() { st.cache.invalidateUsers(g.OrgID, g.Members) })
}

// UpdateGroup reaches the users who joined or left the group, or, if it was renamed, everyone
// who was or is a member (groupChangeReaches). A failed update reaches the whole organization,
// as it may have happened.
func (st invalidating) UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*storage.Group) error) (storage.Group, error) {
	before, g, err := storage.UpdateGroupFrom(ctx, st.Store, orgID, integrationID, id, fn)
	if err != nil {
		return g, st.changedOrg(ctx, err, orgID)
	}
	return g, st.changed(ctx, nil, orgID, func() { st.cache.invalidateUsers(orgID, groupChangeReaches(before, g)) })
}

// groupChangeReaches returns the users whose decisions a change of a group from before to after
// may change: those who joined or left it, or every member of either if its name changed, the
// one other thing of a group's record the policy reads.
func groupChangeReaches(before, after storage.Group) []string {
	if before.DisplayName != after.DisplayName {
		return append(slices.Clone(before.Members), after.Members...)
	}
	was := make(map[string]bool, len(before.Members))
	for _, m := range before.Members {
		was[m] = true
	}
	var reached []string
	for _, m := range after.Members {
		if !was[m] {
			reached = append(reached, m) // joined
		}
		delete(was, m)
	}
	for m := range was {
		reached = append(reached, m) // left
	}
	return reached
}

func (st invalidating) DeleteGroup(ctx context.Context, orgID, integrationID, id string) error {
	return st.changedOrg(ctx, st.Store.DeleteGroup(ctx, orgID, integrationID, id), orgID)
}

// SetGroupGrant and RevokeGroupGrant reach the group's members (changedGroupGrants).
func (st invalidating) SetGroupGrant(ctx context.Context, g storage.GroupGrant) (*storage.GroupGrant, error) {
	before, err := st.Store.SetGroupGrant(ctx, g)
	return before, st.changedGroupGrants(ctx, err, g.OrgID, g.GroupID)
}

func (st invalidating) RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error) {
	removed, err := st.Store.RevokeGroupGrant(ctx, orgID, groupID, resourceID)
	return removed, st.changedGroupGrants(ctx, err, orgID, groupID)
}

// changedGroupGrants drops the members of a group whose grants a write changed, read after the
// write: whoever was a member when it was made is one still, or has left since, which drops
// them too. A failed write, or a group that cannot be read, reaches the whole organization.
func (st invalidating) changedGroupGrants(ctx context.Context, err error, orgID, groupID string) error {
	if err != nil {
		return st.changedOrg(ctx, err, orgID)
	}
	g, err := st.Store.GetOrgGroup(ctx, orgID, groupID)
	if err != nil {
		return st.changedOrg(ctx, nil, orgID)
	}
	return st.changed(ctx, nil, orgID, func() { st.cache.invalidateUsers(orgID, g.Members) })
}

// DeleteExpiredGrants removes grants that already allow nothing, so no decision changes; the
// users' facts are dropped all the same, so that explain stops calling them "expired".
func (st invalidating) DeleteExpiredGrants(ctx context.Context, now time.Time) (storage.ExpiredGrants, error) {
	gone, err := st.Store.DeleteExpiredGrants(ctx, now)
	for _, g := range gone.Users {
		st.cache.invalidateUser(g.OrgID, g.UserID)
	}
	for _, g := range gone.Groups {
		st.cache.invalidateOrg(g.OrgID)
	}
	return gone, err
}
