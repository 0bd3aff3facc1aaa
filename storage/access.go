package storage

import (
	"context"
	"errors"
	"time"
)

// AccessStore keeps what the richer access model needs beyond a user's own grants: groups
// that belong to the organization rather than to an identity provider, grants to groups,
// grants that expire, and the reverse indexes (who holds a resource) that lookups and clean-up
// read.
//
// A plain group is a Group whose IntegrationID is empty: it belongs to the organization, any
// user of the organization may be a member, and its display name is unique among the
// organization's plain groups (ignoring letter case). SCIMStore's group methods serve plain
// groups when given the integration id "", with that rule for members in place of "a user of
// the integration".
//
// Grants and group grants may expire: ExpiresAt zero means never. An expired grant stays
// stored, and is reported by the methods below, until DeleteExpiredGrants removes it; the
// policy, which compares ExpiresAt with the time of each request, never lets it allow anything.
type AccessStore interface {
	// GetOrgGroup returns the organization's group with this id, plain or of any integration,
	// or ErrNotFound.
	GetOrgGroup(ctx context.Context, orgID, id string) (Group, error)
	// ListGroups returns every group of the organization, plain and of every integration,
	// ordered by CreatedAt then ID.
	ListGroups(ctx context.Context, orgID string) ([]Group, error)

	// ResourceGrants returns the grants of the organization's resource, ordered by UserID.
	ResourceGrants(ctx context.Context, orgID, resourceID string) ([]Grant, error)

	// SetGroupGrant records that every member of group g.GroupID may use g.ResourceID until
	// g.ExpiresAt, as SetGrant does for one user, and returns the group grant as it was
	// before (nil when it is new). If the organization has no such group (plain or of any
	// integration) it returns ErrGroupNotFound, else if it has no such resource,
	// ErrResourceNotFound.
	SetGroupGrant(ctx context.Context, g GroupGrant) (*GroupGrant, error)
	// RevokeGroupGrant removes the group grant if there is one, and reports whether there
	// was. It returns ErrGroupNotFound if the organization has no such group.
	RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error)
	// GroupGrants returns the grants of the organization's groups groupIDs, ordered by
	// GroupID, then CreatedAt, then ResourceID. Unknown groups have none.
	GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]GroupGrant, error)
	// ResourceGroupGrants returns the group grants of the organization's resource, ordered
	// by GroupID.
	ResourceGroupGrants(ctx context.Context, orgID, resourceID string) ([]GroupGrant, error)
	// UserFacts returns, read at one moment, the organization's user with their grants, the
	// groups they are a member of and the groups' grants: see Facts. It is UserFactsOf's
	// answer, in one read.
	UserFacts(ctx context.Context, orgID, userID string) (Facts, error)

	// DeleteExpiredGrants removes the grants and group grants of every organization whose
	// ExpiresAt is not zero and not after now, and returns what it removed. A grant whose
	// expiry was moved past now, or removed, while it ran is kept.
	DeleteExpiredGrants(ctx context.Context, now time.Time) (ExpiredGrants, error)
}

// GroupGrant says that every member of a group may use a resource.
type GroupGrant struct {
	OrgID      string
	GroupID    string
	ResourceID string
	CreatedAt  time.Time
	// ExpiresAt is when the grant stops allowing; zero means never.
	ExpiresAt time.Time
}

// Holdings are a user's grants and groups as the policy reads them: the user's own grants, in
// UserGrants' order, and the groups the user is a member of, in UserGroups' order, with their
// grants, in GroupGrants' order.
type Holdings struct {
	Grants      []Grant
	Groups      []Group
	GroupGrants []GroupGrant
}

// Facts is what the policy may read of a user: the user, and all their holdings.
type Facts struct {
	// Found is whether the organization has the user; when not, the rest is empty.
	Found bool
	User  User
	Holdings
}

// UserFactsOf builds Facts with the store's methods of each part (GetUser, UserGrants,
// UserGroups, GroupGrants), each read on its own: for a store with no way to read them at one
// moment, and as the reference UserFacts is tested against.
func UserFactsOf(ctx context.Context, st interface {
	GetUser(ctx context.Context, orgID, id string) (User, error)
	UserGrants(ctx context.Context, orgID, userID string) ([]Grant, error)
	UserGroups(ctx context.Context, orgID, userID string) ([]Group, error)
	GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]GroupGrant, error)
}, orgID, userID string) (Facts, error) {
	u, err := st.GetUser(ctx, orgID, userID)
	switch {
	case errors.Is(err, ErrNotFound):
		return Facts{}, nil
	case err != nil:
		return Facts{}, err
	}
	f := Facts{Found: true, User: u}
	if f.Grants, err = st.UserGrants(ctx, orgID, userID); err != nil {
		return Facts{}, err
	}
	if f.Groups, err = st.UserGroups(ctx, orgID, userID); err != nil {
		return Facts{}, err
	}
	if len(f.Groups) > 0 {
		if f.GroupGrants, err = st.GroupGrants(ctx, orgID, GroupIDs(f.Groups)); err != nil {
			return Facts{}, err
		}
	}
	return f, nil
}

// GroupIDs returns the ids of groups, in their order.
func GroupIDs(groups []Group) []string {
	ids := make([]string, len(groups))
	for i, g := range groups {
		ids[i] = g.ID
	}
	return ids
}

// ExpiredGrants are the grants DeleteExpiredGrants removed.
type ExpiredGrants struct {
	Users  []Grant
	Groups []GroupGrant
}

// Expired reports whether a grant with this expiry no longer allows at now: it has an expiry,
// and the expiry is not after now.
func Expired(expiresAt, now time.Time) bool {
	return !expiresAt.IsZero() && !expiresAt.After(now)
}

// FactsScanner reads every user and every group of every organization with their grants, a
// pass each: what the decision engine reads into memory at start. Both stores implement it.
//
// What "read at one moment" means differs by store. The embedded store reads each scan in one
// read transaction: ScanUsers sees every user, grant and membership as they were at one
// moment, and ScanGroups every group and group grant at another. MongoDB has no such read
// across collections (its transactions need a replica set, and FerretDB has none): it streams
// users, grants and memberships with cursors of their own, each of which sees some of the
// writes made while it runs, so a scan is not a snapshot, and a user written during the scan
// may be read with part of that write. A caller that must not miss a write starts following
// the change feed (ChangeFeed) before it scans, and drops what a change it reports touched.
type FactsScanner interface {
	// ScanUsers calls fn with every user of every organization, ordered by organization id
	// then user id, each with the ids of the groups they are a member of (sorted) and their
	// own grants, live or expired, ordered by resource id. fn must not keep u.Groups or
	// u.Grants, which the next call may reuse. An error of fn stops the scan and is returned.
	ScanUsers(ctx context.Context, fn func(u ScannedUser) error) error
	// ScanGroups calls fn with every group of every organization, plain and of every
	// integration, ordered by organization id then group id, with its grants (as above).
	ScanGroups(ctx context.Context, fn func(g ScannedGroup) error) error
}

// ScannedUser is what ScanUsers reads of one user.
type ScannedUser struct {
	User            // the user's record, exactly as GetUser returns it
	Groups []string // ids of the user's groups, sorted
	Grants []ScannedGrant
}

// ScannedGroup is what ScanGroups reads of one group.
type ScannedGroup struct {
	OrgID, GroupID, DisplayName string
	Grants                      []ScannedGrant
}

// ScannedGrant is one of a user's or a group's grants: its resource, and when it expires (zero: never).
type ScannedGrant struct {
	ResourceID string
	ExpiresAt  time.Time
}
