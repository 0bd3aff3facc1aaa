# Quarantine: while the security operations centre investigates an incident, it marks what is
# involved by putting the word QUARANTINED into one of its strings (a user attribute such as
# title, a group's name, a resource's name), each in the system that owns it. A question whose
# input carries the mark anywhere, in any case, is denied whole, since the responders cannot
# know in advance which field of which system they will reach first. Otherwise as the shipped
# policy: an active user may use a resource that exists when they hold a live grant on it, of
# their own or through a group.
#
# memo: unbounded (walk reads the whole input)
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

# An active user may use a resource that exists and that they hold, unless anything is quarantined.
permitted(id) if {
	input.user.active == true
	not quarantined
	input.resources[id]
	holds(id)
}

# Any string anywhere in the input carries the mark, in any case.
quarantined if {
	walk(input, [_, value])
	is_string(value)
	contains(upper(value), "QUARANTINED")
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
