package storage

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"
)

// IntegrationSCIM is the Type of an authentication integration whose users and groups an
// identity provider manages through SCIM 2.0; IntegrationImport is the Type of a plain import.
const (
	IntegrationImport = "import"
	IntegrationSCIM   = "scim"
)

// ErrUnknownMember means a group was given a member that is not a user of the group's
// integration.
var ErrUnknownMember = errors.New("member is not a user of the integration")

// ErrSCIMAttributes means an import gave attributes to users of a SCIM integration, whose
// User.Attributes hold the SCIM document their identity provider keeps.
var ErrSCIMAttributes = errors.New("the attributes of a SCIM integration's users come from SCIM")

// SCIMStore keeps what SCIM provisioning needs: the bearer tokens of SCIM integrations, and
// the users and groups an identity provider creates, changes and deletes one at a time.
//
// Every method is scoped to an organization and one of its integrations: a user or group of
// another integration, or of another organization, behaves exactly as one that does not exist.
// Users are the same records UserStore keeps, so SCIM users appear in ListUsers and are
// checked by the policy like imported ones.
//
// UpdateUser and UpdateGroup read a record, let the caller change it, and write it back
// only if nobody wrote it in between (a transaction, or a conditional write on a version the
// store keeps privately, retried on a race), so that a change is never lost to a concurrent
// one. Their fn may therefore run more than once, and must depend only on its argument.
type SCIMStore interface {
	// CreateSCIMIntegration stores a new integration (of Type IntegrationSCIM) together with
	// the token that authenticates its provider. It returns ErrConflict, storing nothing, if
	// the integration's id or name is taken as CreateAuthIntegration says, or the token's id
	// or hash is taken.
	CreateSCIMIntegration(ctx context.Context, a AuthIntegration, t SCIMToken) error
	// SCIMTokenByHash returns the token whose Hash is hash, or ErrNotFound.
	SCIMTokenByHash(ctx context.Context, hash string) (SCIMToken, error)
	// SetSCIMToken gives the organization's SCIM integration integrationID the token t in
	// place of the one it has, or leaves it without one when t is nil, and returns the token
	// it replaced (nil if none): from then on that token authenticates nothing. It returns
	// ErrNotFound if the organization has no integration of Type IntegrationSCIM with this id,
	// and ErrConflict if t's hash is taken.
	SetSCIMToken(ctx context.Context, orgID, integrationID string, t *SCIMToken) (*SCIMToken, error)

	// CreateUser stores a new user u in integration u.IntegrationID of u.OrgID, taking
	// IntegrationName from the integration. It returns ErrNotFound if the organization has no
	// such integration, and ErrConflict if u.ID is taken in the organization or u.Email is
	// taken in the integration, ignoring letter case.
	CreateUser(ctx context.Context, u User) error
	// UpdateUser calls fn on the integration's user id and stores what fn leaves in it: Email,
	// First, Last, Active, ExternalID, Attributes and ModifiedAt may change; the other fields
	// are kept whatever fn does. It writes nothing when fn changes nothing, and returns the
	// user as stored. An error of fn is returned (wrapped) and nothing is written. It returns
	// ErrNotFound if the integration has no user id, and ErrConflict if the new Email is
	// another user's in the integration, ignoring letter case.
	UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*User) error) (User, error)
	// DeleteUser removes the integration's user id, every grant of the user, and the user
	// from every group (whose ModifiedAt becomes now). It returns ErrNotFound if the
	// integration has no user id.
	DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error
	// UserByEmail returns the integration's user with this email, ignoring letter case, or
	// ErrNotFound.
	UserByEmail(ctx context.Context, orgID, integrationID, email string) (User, error)
	// UsersByExternalID returns the integration's users whose ExternalID is exactly
	// externalID, ordered by ID. An empty externalID names no user.
	UsersByExternalID(ctx context.Context, orgID, integrationID, externalID string) ([]User, error)
	// IntegrationUsers returns the integration's users ordered by ID, skipping the first
	// offset and returning at most limit (all the rest if limit is negative), and how many
	// users the integration has in all.
	IntegrationUsers(ctx context.Context, orgID, integrationID string, offset, limit int) ([]User, int, error)

	// CreateGroup stores a new group. It returns ErrNotFound if the organization has no
	// integration g.IntegrationID, ErrConflict if g.ID is taken in the organization or
	// g.DisplayName is taken in the integration (ignoring letter case), and ErrUnknownMember if
	// a member is not a user of the integration.
	CreateGroup(ctx context.Context, g Group) error
	// GetGroup returns the integration's group id, or ErrNotFound.
	GetGroup(ctx context.Context, orgID, integrationID, id string) (Group, error)
	// GroupByName returns the integration's group with this display name, ignoring letter
	// case, or ErrNotFound.
	GroupByName(ctx context.Context, orgID, integrationID, name string) (Group, error)
	// IntegrationGroups returns the integration's groups ordered by ID, paged as
	// IntegrationUsers pages users, and how many groups the integration has in all.
	IntegrationGroups(ctx context.Context, orgID, integrationID string, offset, limit int) ([]Group, int, error)
	// UpdateGroup calls fn on the integration's group id and stores what fn leaves in it:
	// DisplayName, ExternalID, Members, MemberDisplays and ModifiedAt may change; the other
	// fields are kept.
	// It writes nothing when fn changes nothing, and returns the group as stored. An error of
	// fn is returned (wrapped) and nothing is written. It returns ErrNotFound if the
	// integration has no group id, ErrConflict if the new DisplayName is another group's, and
	// ErrUnknownMember if a member added is not a user of the integration.
	UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*Group) error) (Group, error)
	// DeleteGroup removes the integration's group id, or returns ErrNotFound.
	DeleteGroup(ctx context.Context, orgID, integrationID, id string) error
	// UserGroups returns the groups the organization's user is a member of, ordered by ID.
	UserGroups(ctx context.Context, orgID, userID string) ([]Group, error)
}

// SCIMToken authenticates the identity provider of one SCIM integration. Only the SHA-256 of
// the token is stored.
type SCIMToken struct {
	ID            string
	OrgID         string
	IntegrationID string
	Prefix        string // the first characters of the token, for display; not secret
	Hash          string // lowercase hex SHA-256 of the whole token
	CreatedAt     time.Time
}

// Group is a group of users of one SCIM integration, kept with its members for group-based
// access.
type Group struct {
	OrgID         string
	ID            string
	IntegrationID string
	DisplayName   string
	ExternalID    string
	// Members are the ids of the users in the group, each once, in the order they were added.
	Members []string
	// MemberDisplays are the display names the identity provider sent with members, by member
	// id, for those it sent one with; nil when there are none. The store keeps them as given,
	// and drops a member's when the member leaves the group because the user was deleted.
	MemberDisplays map[string]string
	CreatedAt      time.Time
	ModifiedAt     time.Time
}

// UpdateGroupFrom is st.UpdateGroup that also returns the group as it was before the update:
// as fn last saw it, since fn may run more than once and only its last run is kept.
func UpdateGroupFrom(ctx context.Context, st interface {
	UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*Group) error) (Group, error)
}, orgID, integrationID, id string, fn func(*Group) error) (before, after Group, err error) {
	after, err = st.UpdateGroup(ctx, orgID, integrationID, id, func(g *Group) error {
		before = *g
		before.Members = slices.Clone(g.Members)
		before.MemberDisplays = maps.Clone(g.MemberDisplays)
		return fn(g)
	})
	return before, after, err
}
