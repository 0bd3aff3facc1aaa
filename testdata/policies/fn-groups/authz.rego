# Functions only through groups whose name starts with "fn-": a function runs code with the
# caller's rights, so the security team grants each to a reviewed fn-* group and never to a
# person; a grant of a function of the user's own, or through any other group, allows nothing.
# Models and datasets are decided as the shipped policy decides: an active user may use a
# resource that exists when they hold a live grant on it, of their own or through a group.
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

# Models and datasets: an active user's live grant, of their own or through any group.
permitted(id) if {
	input.user.active == true
	input.resources[id].kind != "function"
	holds(id)
}

# Functions: an active user's live grant through a reviewed group, named fn-*, only.
permitted(id) if {
	input.user.active == true
	input.resources[id].kind == "function"
	some group in input.user.groups
	startswith(group.name, "fn-")
	live(group.resource_list[id])
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
