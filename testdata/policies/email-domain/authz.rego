# Only the organization's own people, known by an email address at example.com, may use AI
# resources: contractors and guests, imported with their own companies' addresses, keep their
# accounts and grants for other systems but use no model, function or dataset. Otherwise as the
# shipped policy: an active user may use a resource that exists when they hold a live grant on
# it, of their own or through a group.
#
# memo: bounded
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

# An active user of the organization's own domain may use a resource that exists and that they hold.
permitted(id) if {
	input.user.active == true
	own_domain
	input.resources[id]
	holds(id)
}

# Addresses compare in any case; the "@" keeps look-alikes such as notexample.com out.
own_domain if endswith(lower(input.user.email), "@example.com")

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
