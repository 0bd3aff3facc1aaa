// Package storage defines what Grantry keeps: organizations, API keys, registered resources,
// authentication integrations, users and grants, and the one interface every store implements.
//
// Every record but an organization belongs to one organization, and every method that reads or
// changes such records takes that organization's id: a record of another organization behaves
// exactly as if it did not exist. Two implementations exist: storage/mongo (production) and
// storage/bolt (the embedded default); storage/storagetest is the behavioural suite both pass.
//
// Times are kept to the millisecond: callers pass UTC times truncated to the millisecond and
// get back times equal to them.
package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Implementations wrap them with context; callers match them with errors.Is.
var (
	// ErrNotFound means the record does not exist in the organization asked about.
	ErrNotFound = errors.New("not found")
	// ErrUserNotFound, ErrResourceNotFound and ErrGroupNotFound are ErrNotFound said of the
	// user, the resource or the group that a grant or revoke names, so that a caller learns
	// which one is missing from the write itself instead of reading each first.
	ErrUserNotFound     = fmt.Errorf("user %w", ErrNotFound)
	ErrResourceNotFound = fmt.Errorf("resource %w", ErrNotFound)
	ErrGroupNotFound    = fmt.Errorf("group %w", ErrNotFound)
	// ErrConflict means a record with the same unique name or id already exists.
	ErrConflict = errors.New("already exists")
	// ErrRevoked is ErrNotFound said of an API key's hash whose key was deleted: it never
	// authenticates again, and no key may be stored with it again.
	ErrRevoked = fmt.Errorf("api key revoked: %w", ErrNotFound)
	// ErrUnavailable means the store could not be reached or did not answer in time. Nothing
	// can be said about whether a write that failed this way was applied.
	ErrUnavailable = errors.New("store unavailable")
)

// Store is what the service needs from a database. Every method takes ctx first, honours its
// deadline, and is safe for concurrent use. Each mutation is one atomic step in the store. Lists
// are complete (no paging) and come in the order each method names, so that every store answers
// identically.
type Store interface {
	// Ping reports whether the store answers; it returns an error wrapping ErrUnavailable if not.
	Ping(ctx context.Context) error
	// Close releases the store. No method may be called after it.
	Close(ctx context.Context) error

	OrgStore
	ResourceStore
	UserStore
	GrantStore
	SecretStore
	EventStore
	DecisionStore
	SCIMStore
	ChangeFeed
	AccessStore
	APIKeyLister
	FactsScanner
}

// OrgStore keeps organizations and their API keys. These methods are not scoped to an
// organization: they serve the admin API and authentication.
type OrgStore interface {
	// CreateOrg stores a new organization. It returns ErrConflict if the id or the name is taken.
	CreateOrg(ctx context.Context, org Org) error
	// GetOrg returns the organization with this id, or ErrNotFound.
	GetOrg(ctx context.Context, id string) (Org, error)
	// OrgByName returns the organization with this exact name, or ErrNotFound.
	OrgByName(ctx context.Context, name string) (Org, error)
	// ListOrgs returns every organization, ordered by CreatedAt then ID.
	ListOrgs(ctx context.Context) ([]Org, error)

	// CreateAPIKey stores a new key. It returns ErrNotFound if key.OrgID names no organization,
	// ErrConflict if the id or the hash is taken, and ErrRevoked if the hash was a deleted
	// key's.
	CreateAPIKey(ctx context.Context, key APIKey) error
	// APIKeyByHash returns the key whose Hash is hash, or ErrNotFound (ErrRevoked if it was a
	// deleted key's).
	APIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	// DeleteAPIKey removes a key so that it no longer authenticates, and keeps its hash as
	// revoked for good (ErrRevoked), so that no restart or replica can store it again. It
	// returns ErrNotFound if no key has this id.
	DeleteAPIKey(ctx context.Context, id string) error
	// GetAPIKey returns the key with this id, or ErrNotFound.
	GetAPIKey(ctx context.Context, id string) (APIKey, error)
	// CountAPIKeys returns how many keys exist across all organizations.
	CountAPIKeys(ctx context.Context) (int, error)
}

// ResourceStore keeps registered resources and authentication integrations.
type ResourceStore interface {
	// CreateResource stores a new resource. It returns ErrConflict if r.ID is taken, or if the
	// organization already has a resource of the same Kind, Source and Name.
	CreateResource(ctx context.Context, r Resource) error
	// GetResource returns the organization's resource with this id, of any kind, or ErrNotFound.
	GetResource(ctx context.Context, orgID, id string) (Resource, error)
	// GetResources returns those of ids that name resources of the organization, in the order of
	// ids, each once. Ids that name nothing are left out; it is not an error.
	GetResources(ctx context.Context, orgID string, ids []string) ([]Resource, error)
	// ResourceByName returns the organization's resource of this kind, source and exact name,
	// or ErrNotFound.
	ResourceByName(ctx context.Context, orgID string, kind Kind, source, name string) (Resource, error)
	// ListResources returns the organization's resources of one kind (every kind if kind is
	// empty), ordered by CreatedAt then ID.
	ListResources(ctx context.Context, orgID string, kind Kind) ([]Resource, error)
	// DeleteResource removes every grant of the resource and then the resource itself. It
	// returns ErrNotFound if the organization has no resource with this id.
	DeleteResource(ctx context.Context, orgID, id string) error

	// CreateAuthIntegration stores a new authentication integration. It returns ErrConflict if
	// the id is taken or the organization already has one with the same Name.
	CreateAuthIntegration(ctx context.Context, a AuthIntegration) error
	// GetAuthIntegration returns the organization's integration with this id, or ErrNotFound.
	GetAuthIntegration(ctx context.Context, orgID, id string) (AuthIntegration, error)
	// ListAuthIntegrations returns the organization's integrations, ordered by CreatedAt then ID.
	ListAuthIntegrations(ctx context.Context, orgID string) ([]AuthIntegration, error)
	// DeleteAuthIntegration removes the organization's integration id and what came through
	// it: its SCIM token, its users with their grants and group memberships (plain groups the
	// users leave take now as ModifiedAt), and its groups with their grants. The token goes
	// first, and the integration last, so that a call cut short can be made again to finish.
	// It returns what it removed, or ErrNotFound if the organization has no such integration.
	DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (RemovedIntegration, error)
}

// RemovedIntegration is what DeleteAuthIntegration removed: the integration, and the ids of
// its users and of its groups, each ordered.
type RemovedIntegration struct {
	Integration AuthIntegration
	Users       []string
	Groups      []string
}

// UserStore keeps users imported from authentication integrations.
type UserStore interface {
	// ImportUsers upserts users into the organization from one of its integrations and returns
	// the stored users in the order of the input. A user is matched by email within the
	// integration, ignoring letter case:
	//   - matched: First and Last are replaced (Email too, which may differ in case), and
	//     Attributes when the item's are not nil; ModifiedAt becomes now if any of them changed;
	//     ID, ImportedAt and Active are kept. A UserImport.ID that differs from the matched
	//     user's ID is a conflict.
	//   - not matched: a new active user with ImportedAt = ModifiedAt = now and the given ID, or
	//     a new UUID when ID is empty. An ID already used by another user of the organization is
	//     a conflict.
	// Attributes are stored as ImportedAttributes encodes them. Later items win over earlier
	// items with the same email. It returns ErrNotFound if the integration does not exist in
	// the organization, ErrSCIMAttributes (changing nothing) if it is a SCIM integration and an
	// item has Attributes, and ErrConflict (changing nothing, where the store can promise it)
	// on an id conflict.
	ImportUsers(ctx context.Context, orgID, integrationID string, users []UserImport, now time.Time) ([]User, error)
	// GetUser returns the organization's user with this id, or ErrNotFound.
	GetUser(ctx context.Context, orgID, id string) (User, error)
	// ListUsers returns the organization's users, ordered by ImportedAt then ID.
	ListUsers(ctx context.Context, orgID string) ([]User, error)
}

// GrantStore keeps which user may use which resource. Its writes are the two primitives every
// store implements and every decorator wraps; AddGrant and Revoke are built on them, once, for
// every store.
type GrantStore interface {
	// SetGrant records that g.UserID may use g.ResourceID until g.ExpiresAt (zero: for good).
	// Granting what is granted keeps its CreatedAt and replaces its ExpiresAt with
	// g.ExpiresAt. It returns the grant as it was before, or nil when the grant is new, decided
	// in the same atomic step as the change, so that two racing callers never both see it new
	// and the audit trail can tell a new grant from a new expiry. If the user does not exist in
	// g.OrgID it returns ErrUserNotFound, else if the resource does not, ErrResourceNotFound.
	SetGrant(ctx context.Context, g Grant) (*Grant, error)
	// RevokeGrant removes the grant if there is one, and reports whether there was, decided as
	// SetGrant decides. Revoking what is not granted is not an error. It returns
	// ErrUserNotFound if the user does not exist in the organization.
	RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error)
	// UserGrants returns the user's grants, ordered by CreatedAt then ResourceID. A user with
	// no grants, or no such user, yields an empty list.
	UserGrants(ctx context.Context, orgID, userID string) ([]Grant, error)
	// ListGrants returns every grant of the organization, ordered by UserID, then CreatedAt,
	// then ResourceID.
	ListGrants(ctx context.Context, orgID string) ([]Grant, error)
}

// GrantWriter is the part of a GrantStore that AddGrant and Revoke need.
type GrantWriter interface {
	SetGrant(ctx context.Context, g Grant) (*Grant, error)
	RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error)
}

// AddGrant is SetGrant for a caller that does not need the grant as it was.
func AddGrant(ctx context.Context, st GrantWriter, g Grant) error {
	_, err := st.SetGrant(ctx, g)
	return err
}

// Revoke is RevokeGrant for a caller that does not need to know whether a grant was removed.
func Revoke(ctx context.Context, st GrantWriter, orgID, userID, resourceID string) error {
	_, err := st.RevokeGrant(ctx, orgID, userID, resourceID)
	return err
}

// Org is an organization: a tenant. Its ID is the spec's baseUser_id.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// APIKey authenticates an organization. Only the SHA-256 of the key is stored.
type APIKey struct {
	ID     string
	OrgID  string
	Prefix string // the first characters of the key, for display; not secret
	Hash   string // lowercase hex SHA-256 of the whole key
	// Scope limits what the key may do; empty means every operation.
	Scope     string
	CreatedAt time.Time
}

// Kind is the kind of a registered resource.
type Kind string

// The kinds of resources. All share one id space.
const (
	KindModel    Kind = "model"
	KindFunction Kind = "function"
	KindDataset  Kind = "dataset"
)

// SourceCustom is the Source of resources registered by name rather than through a provider.
const SourceCustom = "custom"

// Resource is a registered model, function or dataset.
type Resource struct {
	OrgID string
	ID    string // a UUID: the spec's id and svc_id
	Kind  Kind
	// Source is SourceCustom or the provider's name (the model's integration_type, the
	// dataset's source).
	Source      string
	Name        string // model_name, function_name, dataset_name or index name
	Description string // functions only
	// Metadata holds non-secret facts (index name, environment, ...). Nil when there are none.
	Metadata map[string]string
	// Secret is the sealed third-party credential of a provider resource; nil for custom ones.
	// It is opaque to the store, which keeps and returns it byte for byte.
	Secret    []byte
	CreatedAt time.Time
}

// AuthIntegration is a source of users: an identity provider or a plain import.
type AuthIntegration struct {
	OrgID     string
	ID        string
	Name      string
	Metadata  string
	Type      string // "import" for plain imports
	CreatedAt time.Time
}

// User is a user of an organization, imported from one of its authentication integrations.
type User struct {
	OrgID           string
	ID              string
	Email           string
	First           string
	Last            string
	Active          bool
	IntegrationID   string
	IntegrationName string
	ImportedAt      time.Time
	ModifiedAt      time.Time
	// ExternalID is the identity provider's own id of a user it manages through SCIM; empty
	// for imported users.
	ExternalID string
	// Attributes is a JSON object whose meaning depends on the type of the user's integration:
	//   - IntegrationSCIM: the rest of the user's SCIM attributes (display name, title, phone
	//     numbers, the Enterprise User extension under its URN, …), for SCIM to give back;
	//   - IntegrationImport: the attributes the user was last imported with (an import that
	//     gives none keeps them), an object of strings as ImportedAttributes encodes it.
	// It is nil when there are none. The store keeps and returns it byte for byte, and never
	// mixes the two: ImportUsers refuses attributes for a SCIM integration's users.
	Attributes []byte
}

// UserImport is one user of an import request.
type UserImport struct {
	ID    string // optional
	Email string
	First string
	Last  string
	// Attributes replaces the user's attributes when it is not nil (an empty map removes
	// them), and leaves them as they are when it is nil.
	Attributes map[string]string
}

// ImportedAttributes encodes an import's attributes as User.Attributes keeps them: a JSON
// object of strings with its keys in order, or nil when there are none. Both stores encode with
// it, so that importing the same attributes again is no change.
func ImportedAttributes(attrs map[string]string) []byte {
	if len(attrs) == 0 {
		return nil
	}
	b, _ := json.Marshal(attrs) // a map of strings always encodes
	return b
}

// Grant says that a user may use a resource.
type Grant struct {
	OrgID      string
	UserID     string
	ResourceID string
	CreatedAt  time.Time
	// ExpiresAt is when the grant stops allowing; zero means never (see AccessStore).
	ExpiresAt time.Time
}
