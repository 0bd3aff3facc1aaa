package storage

import "context"

// The scopes of API keys. A key's Scope limits which calls it may make; the empty scope of
// keys made before scopes existed means ScopeAdmin.
const (
	// ScopeAdmin may make every call, the organization's key management included.
	ScopeAdmin = "admin"
	// ScopeManage may make every call but key management.
	ScopeManage = "manage"
	// ScopeCheck may only ask access checks, explain them, and read.
	ScopeCheck = "check"
)

// APIKeyLister lists an organization's API keys, for the organization's own key management.
type APIKeyLister interface {
	// ListAPIKeys returns the organization's keys, ordered by CreatedAt then ID.
	ListAPIKeys(ctx context.Context, orgID string) ([]APIKey, error)
}
