# Models only for users who came from a SCIM integration (input.user.source.type "scim"): the
# identity provider deprovisions those the day they leave, while an imported user stays until
# someone removes them, and a model is where a departed employee's key would do most harm.
# Functions and datasets, and a SCIM user's models, are decided as the shipped policy decides:
# an active user may use a resource that exists when they hold a live grant on it, of their own
# or through a group.
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

# An active user may use a resource that exists, that their source may use, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	kind_allowed(id)
	holds(id)
}

# Functions and datasets are for users from any source.
kind_allowed(id) if input.resources[id].kind != "model"

# Models are for users the identity provider keeps in step over SCIM.
kind_allowed(id) if {
	input.resources[id].kind == "model"
	input.user.source.type == "scim"
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
