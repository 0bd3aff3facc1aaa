# Users on leave may use nothing: the HR system knows who is on parental, sick or garden leave,
# whose accounts stay active for their return but under which no one should be working. The
# policy asks it for each decision (GET https://hr.example.internal/v1/leave/<user id>, which
# answers {"on_leave": true|false}). When HR does not answer 200, the grants decide alone: an
# HR outage must not stop all work, and leave is a second control behind deactivation.
# Otherwise as the shipped policy: an active user may use a resource that exists when they hold
# a live grant on it, of their own or through a group.
#
# memo: unbounded (http.send asks a service outside the input)
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

# An active user may use a resource that exists and that they hold, unless HR says they are away.
permitted(id) if {
	input.user.active == true
	not on_leave
	input.resources[id]
	holds(id)
}

# HR says so, and only an answer of 200 says anything.
on_leave if {
	response := http.send({
		"method": "GET",
		"url": concat("", ["https://hr.example.internal/v1/leave/", urlquery.encode(input.user.id)]),
		"timeout": "500ms",
		"raise_error": false,
	})
	response.status_code == 200
	response.body.on_leave == true
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
