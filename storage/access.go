package storage

import (
	"context"
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

	// SetGrant is Grant: it records that g.UserID may use g.ResourceID until g.ExpiresAt.
	// Granting what is granted keeps its CreatedAt and replaces its ExpiresAt with
	// g.ExpiresAt. It returns the grant as it was before, or nil when the grant is new, so
	// that the audit trail can tell a new grant from a new expiry. If the user does not exist
	// in g.OrgID it returns ErrUserNotFound, else if the resource does not, ErrResourceNotFound.
	SetGrant(ctx context.Context, g Grant) (*Grant, error)
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
