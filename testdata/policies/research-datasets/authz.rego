# Datasets only for the research department: a dataset holds study data that the ethics board
# approved for researchers alone, so a grant of one to anyone else, of their own or through a
# group, allows nothing. The department is the identity provider's attribute department (SCIM's
# enterprise extension, or an import's attributes), in any case. Models and functions, and a
# researcher's datasets, are decided as the shipped policy decides: an active user may use a
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

# An active user may use a resource that exists, that their department may use, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	kind_allowed(id)
	holds(id)
}

# Models and functions are for every department.
kind_allowed(id) if input.resources[id].kind != "dataset"

# Datasets are for the research department only, under its ethics approval.
kind_allowed(id) if {
	input.resources[id].kind == "dataset"
	lower(input.user.attributes.department) == "research"
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
