package apikey

import "strings"

// SCIMPrefix starts every SCIM token, so that a SCIM token is told from an API key at a
// glance (by people and by secret scanners) and refused without a store lookup where the
// other kind is expected.
const SCIMPrefix = "gscim_"

// GenerateSCIM returns a new random SCIM token: SCIMPrefix and 43 base62 digits, as random as
// an API key. It is hashed and displayed like one.
func GenerateSCIM() string { return SCIMPrefix + strings.TrimPrefix(Generate(), Prefix) }
