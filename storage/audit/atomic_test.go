package audit

import "github.com/grantry/grantry/storage/bolt"

// The embedded store writes a grant or revoke and its events in one transaction only through
// atomicGrants; were its methods to drift from the interface, every grant would silently take
// the two-step path. This stops the build instead.
var _ atomicGrants = (*bolt.Store)(nil)
