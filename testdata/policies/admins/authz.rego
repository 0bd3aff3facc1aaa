# A group named admins may use everything that exists: its members run the platform (they test
# new models, debug functions, restore datasets) and would otherwise grant themselves each
# resource as it is registered. Membership of admins is managed in the identity provider, under
# its own review, and it gives nothing to a deactivated member nor any resource that does not
# exist. Everyone else, and admins too, may use what they hold, as the shipped policy has it: an
# active user may use a resource that exists when they hold a live grant on it, of their own or
# through a group.
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

# An active user may use a resource that exists and that they hold, as the shipped policy has it.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	holds(id)
}

# An active member of the group named admins may use any resource that exists, granted or not.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	some group in input.user.groups
	group.name == "admins"
}

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
