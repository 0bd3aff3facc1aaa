# Expiring grants are honoured only for functions: a time-limited grant is how the on-call rota
# gets a tool for the length of an incident, while access to models and datasets is a standing
# grant that the quarterly access review sees. An expiring grant on a model or a dataset, of the
# user's own or through a group, allows nothing, even before it expires. Otherwise as the
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

# An active user may use a resource that exists and that they hold a grant on that counts for it.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	holds(id)
}

# A grant of the user's own counts when it is live for the resource.
holds(id) if live_for(id, input.user.resource_list[id])

# So does a grant of any group the user is a member of.
holds(id) if {
	some group in input.user.groups
	live_for(id, group.resource_list[id])
}

# A standing grant, one that never expires, counts for every kind of resource until it is revoked.
live_for(_, grant) if not grant.expires_at

# An expiring grant counts for a function only, until its expiry; without input.now it does not.
live_for(id, grant) if {
	input.resources[id].kind == "function"
	grant.expires_at > input.now
}
