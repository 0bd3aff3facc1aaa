# Access ends at a fixed date: the organization's contract with its AI providers, and with it
# the data-processing agreement, ends at 2027-01-01T00:00:00Z, and nothing may be used from
# that instant on (1798761600000000000 in Unix nanoseconds, as input.now is), whatever the
# grants say. Before it, as the shipped policy: an active user may use a resource that exists
# when they hold a live grant on it, of their own or through a group. A question without
# input.now cannot be shown to come before the end, and is denied.
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

# An active user may use a resource that exists and that they hold, before the contract ends.
permitted(id) if {
	input.user.active == true
	input.now < 1798761600000000000
	input.resources[id]
	holds(id)
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
