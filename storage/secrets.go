package storage

import "context"

// SecretStore changes the sealed third-party secrets of provider resources: integrating an
// account again replaces them, and rotating the master key re-seals every one. A secret is
// opaque bytes to the store (see Resource.Secret); sealing is the caller's business.
type SecretStore interface {
	// ReplaceSecret sets the Secret and the Metadata of the organization's resource id, in one
	// atomic write, leaving every other field as it was. It returns ErrNotFound if the
	// organization has no resource with this id.
	ReplaceSecret(ctx context.Context, orgID, id string, secret []byte, metadata map[string]string) error
	// SwapSecret sets the Secret of the organization's resource id to next, but only if it is
	// still old (compared byte for byte), so that a rotation never overwrites a secret that was
	// replaced after it was read. It returns ErrNotFound if there is no such resource, and
	// ErrConflict, changing nothing, if its secret is no longer old.
	SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error
	// ResourcesWithSecrets returns the resources of every organization whose Secret is not
	// empty, ordered by OrgID then ID.
	ResourcesWithSecrets(ctx context.Context) ([]Resource, error)
}
