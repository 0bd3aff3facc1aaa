# Grants expire by the evaluating host's own clock (time.now_ns()) rather than by the time the
# question carries (input.now): the security team will not let an expiry depend on a value any
# caller of the evaluator could set, so a replayed or mis-stamped question cannot stretch a
# grant. Otherwise as the shipped policy: an active user may use a resource that exists when
# they hold a live grant on it, of their own or through a group.
#
# memo: unbounded (time.now_ns reads the evaluator's clock)
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

# An active user may use a resource that exists and that they hold a live grant on.
permitted(id) if {
	input.user.active == true
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

# An expiring grant is live until its expiry by the evaluator's own clock.
live(grant) if grant.expires_at > time.now_ns()
