package authz

import (
	"context"
	"slices"
	"time"

	"github.com/grantry/grantry/storage"
)

// changing is the store as the engine's users write to it: every write that may change a
// decision drops what the engine holds of what it reached (or changes the organization's
// catalog to match), and then touches exactly that in the store's change feed, so that other
// processes drop the same: the users and groups it reached, or the whole organization for a
// change of its catalog (which other processes cannot change in place) and for a write that
// drops the whole organization here. Both happen before the write returns, so a question asked
// after a write always sees it. A write that failed may still have happened, so it drops and
// touches too. Writes that change no decision (secrets, API keys, events) pass straight
// through; TestEveryStoreMethodIsClassified keeps the two lists complete.
type changing struct {
	storage.Store
	cache *cache
}

// changed drops what a write reached, with drop, and touches c, what drop dropped. It returns
// the write's error if it failed, else the touch's.
func (st changing) changed(ctx context.Context, err error, c storage.Change, drop func()) error {
	drop()
	if !c.Org && len(c.Users) == 0 && len(c.Groups) == 0 {
		return err // nothing reached, nothing to tell
	}
	if terr := st.Store.Touch(ctx, c); err == nil {
		return terr
	}
	return err
}

func (st changing) changedUser(ctx context.Context, err error, orgID, userID string) error {
	return st.changedUsers(ctx, err, orgID, []string{userID})
}

func (st changing) changedUsers(ctx context.Context, err error, orgID string, userIDs []string) error {
	return st.changed(ctx, err, storage.Change{OrgID: orgID, Users: userIDs}, func() {
		for _, id := range userIDs {
			st.cache.dropUser(orgID, id)
		}
	})
}

func (st changing) changedGroup(ctx context.Context, err error, orgID, groupID string) error {
	return st.changed(ctx, err, storage.Change{OrgID: orgID, Groups: []string{groupID}}, func() { st.cache.dropGroup(orgID, groupID) })
}

// changedGroupAndUsers drops the group and the users (its members, or those who joined or
// left it).
func (st changing) changedGroupAndUsers(ctx context.Context, err error, orgID, groupID string, userIDs []string) error {
	return st.changed(ctx, err, storage.Change{OrgID: orgID, Users: userIDs, Groups: []string{groupID}}, func() {
		st.cache.dropGroup(orgID, groupID)
		for _, id := range userIDs {
			st.cache.dropUser(orgID, id)
		}
	})
}

func (st changing) changedOrg(ctx context.Context, err error, orgID string) error {
	return st.changed(ctx, err, wholeOrg(orgID), func() { st.cache.dropOrg(orgID) })
}

// wholeOrg is the change of an organization as a whole.
func wholeOrg(orgID string) storage.Change { return storage.Change{OrgID: orgID, Org: true} }

// Resources and integrations: the organization's catalog.

// CreateResource adds the resource to the catalog: no one holds a grant of it yet.
func (st changing) CreateResource(ctx context.Context, r storage.Resource) error {
	err := st.Store.CreateResource(ctx, r)
	if err != nil {
		return st.changedOrg(ctx, err, r.OrgID)
	}
	return st.changed(ctx, nil, wholeOrg(r.OrgID), func() {
		st.cache.changeCatalog(r.OrgID, func(c *catalog) *catalog { return c.withResource(r.ID, newResource(r)) })
	})
}

// DeleteResource takes the resource out of the catalog and marks it gone, so that the grants
// of it that held users and groups still list allow nothing, as the store, which removed them
// with it, says.
func (st changing) DeleteResource(ctx context.Context, orgID, id string) error {
	err := st.Store.DeleteResource(ctx, orgID, id)
	if err != nil {
		return st.changedOrg(ctx, err, orgID)
	}
	return st.changed(ctx, nil, wholeOrg(orgID), func() {
		st.cache.changeCatalog(orgID, func(c *catalog) *catalog {
			if r, ok := c.resources[id]; ok {
				r.gone.Store(true)
			}
			return c.withResource(id, nil)
		})
	})
}

// CreateAuthIntegration adds the integration to the catalog: no user comes from it yet.
func (st changing) CreateAuthIntegration(ctx context.Context, a storage.AuthIntegration) error {
	return st.changedSource(ctx, st.Store.CreateAuthIntegration(ctx, a), a)
}

// CreateSCIMIntegration adds the integration to the catalog, as CreateAuthIntegration.
func (st changing) CreateSCIMIntegration(ctx context.Context, a storage.AuthIntegration, t storage.SCIMToken) error {
	return st.changedSource(ctx, st.Store.CreateSCIMIntegration(ctx, a, t), a)
}

func (st changing) changedSource(ctx context.Context, err error, a storage.AuthIntegration) error {
	if err != nil {
		return st.changedOrg(ctx, err, a.OrgID)
	}
	return st.changed(ctx, nil, wholeOrg(a.OrgID), func() {
		st.cache.changeCatalog(a.OrgID, func(c *catalog) *catalog { return c.withSource(newSource(a)) })
	})
}

// DeleteAuthIntegration removes every user and group of the integration: it reaches the whole
// organization.
func (st changing) DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (storage.RemovedIntegration, error) {
	removed, err := st.Store.DeleteAuthIntegration(ctx, orgID, id, now)
	return removed, st.changedOrg(ctx, err, orgID)
}

// Users.

// ImportUsers reaches the users it returns, matched or new (a new user may be held as
// unknown); a failed import, which may have written part of them, the whole organization.
func (st changing) ImportUsers(ctx context.Context, orgID, integrationID string, users []storage.UserImport, now time.Time) ([]storage.User, error) {
	out, err := st.Store.ImportUsers(ctx, orgID, integrationID, users, now)
	if err != nil {
		return out, st.changedOrg(ctx, err, orgID)
	}
	ids := make([]string, len(out))
	for i, u := range out {
		ids[i] = u.ID
	}
	return out, st.changedUsers(ctx, nil, orgID, ids)
}

func (st changing) CreateUser(ctx context.Context, u storage.User) error {
	return st.changedUser(ctx, st.Store.CreateUser(ctx, u), u.OrgID, u.ID)
}

func (st changing) UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*storage.User) error) (storage.User, error) {
	u, err := st.Store.UpdateUser(ctx, orgID, integrationID, id, fn)
	return u, st.changedUser(ctx, err, orgID, id)
}

// DeleteUser removes the user and their memberships: it reaches the user alone.
func (st changing) DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error {
	return st.changedUser(ctx, st.Store.DeleteUser(ctx, orgID, integrationID, id, now), orgID, id)
}

// Grants to users reach the user.

func (st changing) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	before, err := st.Store.SetGrant(ctx, g)
	return before, st.changedUser(ctx, err, g.OrgID, g.UserID)
}

func (st changing) RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error) {
	removed, err := st.Store.RevokeGrant(ctx, orgID, userID, resourceID)
	return removed, st.changedUser(ctx, err, orgID, userID)
}

// Groups: a group's name and grants are held with the group; who is a member, with each user.

// CreateGroup reaches the group (which may be held as unknown) and its members.
func (st changing) CreateGroup(ctx context.Context, g storage.Group) error {
	err := st.Store.CreateGroup(ctx, g)
	if err != nil {
		return st.changedOrg(ctx, err, g.OrgID)
	}
	return st.changedGroupAndUsers(ctx, nil, g.OrgID, g.ID, g.Members)
}

// UpdateGroup reaches the group, and the users who joined or left it. A failed update reaches
// the whole organization, as it may have happened.
func (st changing) UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*storage.Group) error) (storage.Group, error) {
	before, g, err := storage.UpdateGroupFrom(ctx, st.Store, orgID, integrationID, id, fn)
	if err != nil {
		return g, st.changedOrg(ctx, err, orgID)
	}
	return g, st.changedGroupAndUsers(ctx, nil, orgID, id, membersChanged(before.Members, g.Members))
}

// membersChanged returns the users in one of before and after and not the other.
func membersChanged(before, after []string) []string {
	was := make(map[string]bool, len(before))
	for _, m := range before {
		was[m] = true
	}
	var changed []string
	for _, m := range after {
		if !was[m] {
			changed = append(changed, m) // joined
		}
		delete(was, m)
	}
	for m := range was {
		changed = append(changed, m) // left
	}
	slices.Sort(changed)
	return changed
}

// DeleteGroup reaches the group and its members, whose held lists name it: a group made again
// with the same id must not find them members. If the members cannot be read first, it
// reaches the whole organization.
func (st changing) DeleteGroup(ctx context.Context, orgID, integrationID, id string) error {
	g, err := st.Store.GetGroup(ctx, orgID, integrationID, id)
	if err != nil {
		return st.changedOrg(ctx, st.Store.DeleteGroup(ctx, orgID, integrationID, id), orgID)
	}
	return st.changedGroupAndUsers(ctx, st.Store.DeleteGroup(ctx, orgID, integrationID, id), orgID, id, g.Members)
}

func (st changing) SetGroupGrant(ctx context.Context, g storage.GroupGrant) (*storage.GroupGrant, error) {
	before, err := st.Store.SetGroupGrant(ctx, g)
	return before, st.changedGroup(ctx, err, g.OrgID, g.GroupID)
}

func (st changing) RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error) {
	removed, err := st.Store.RevokeGroupGrant(ctx, orgID, groupID, resourceID)
	return removed, st.changedGroup(ctx, err, orgID, groupID)
}

// DeleteExpiredGrants removes grants that allow nothing any more, so no decision changes; what
// held users and groups list is dropped all the same, so that explain stops calling them
// "expired". A clean-up that failed may have removed others: everything is dropped.
func (st changing) DeleteExpiredGrants(ctx context.Context, now time.Time) (storage.ExpiredGrants, error) {
	gone, err := st.Store.DeleteExpiredGrants(ctx, now)
	if err != nil {
		st.cache.dropAll()
		return gone, err
	}
	for _, g := range gone.Users {
		st.cache.dropUser(g.OrgID, g.UserID)
	}
	for _, g := range gone.Groups {
		st.cache.dropGroup(g.OrgID, g.GroupID)
	}
	return gone, nil
}
