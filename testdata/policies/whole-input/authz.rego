# Oversized questions are denied: an input of more than 64 KiB as JSON belongs to no person (no
# one holds that many grants, groups or attributes) but to a service account that must be moved
# to its own API key, or to an identity provider stuffing attributes with data; either is
# reviewed before it is served. The size is that of the whole input, whatever part is large.
# Otherwise as the shipped policy: an active user may use a resource that exists when they hold
# a live grant on it, of their own or through a group.
#
# memo: unbounded (json.marshal reads the whole input)
package grantry.authz

# Nothing is allowed unless a rule below proves it.
default allow := false

default allow_all := false

# can_user_access: exactly one resource was asked about (the pattern matches no other length).
allow if {
	[id] := input.resource_ids
	permitted(id)
}

# can_user_access_all: an empty request must never read as allowed, so at least one is asked.
allow_all if {
	count(input.resource_ids) > 0
	every id in input.resource_ids {
		permitted(id)
	}
}

# An active user may use a resource that exists and that they hold, unless the input is oversized.
permitted(id) if {
	input.user.active == true
	not oversized
	input.resources[id]
	holds(id)
}

# More than 64 KiB of JSON, counted in characters, which is no more than its bytes.
oversized if count(json.marshal(input)) > 65536

# A grant of the user's own counts, as the shipped policy has it.
holds(id) if live(input.user.resource_list[id])

# So does a grant of any group the user is a member of.
holds(id) if {
	some group in input.user.groups
	live(group.resource_list[id])
}

# A grant that never expires stays live until it is revoked.
live(grant) if not grant.expires_at

# An expiring grant is live until its expiry; without input.now it is not, failing closed.
live(grant) if grant.expires_at > input.now
