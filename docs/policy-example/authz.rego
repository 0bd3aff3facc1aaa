# An example of a policy of one's own, for GRANTRY_POLICY_DIR: the shipped rules, except that a
# dataset is allowed only through a grant of the user's own, never through a group, since data
# access is granted person by person.
package grantry.authz

default allow := false

default allow_all := false

# can_user_access: exactly one resource was asked about, and the user may use it.
allow if {
	[id] := input.resource_ids
	permitted(id)
}

# can_user_access_all: at least one resource was asked about, and the user may use every one.
allow_all if {
	count(input.resource_ids) > 0
	every id in input.resource_ids {
		permitted(id)
	}
}

# A grant of the user's own allows any kind of resource.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	holds_own(id)
}

# A group's grant allows models and functions, not datasets.
permitted(id) if {
	input.user.active == true
	input.resources[id].kind != "dataset"
	holds_via_group(id)
}

holds_own(id) if live(input.user.resource_list[id])

holds_via_group(id) if {
	some group in input.user.groups
	live(group.resource_list[id])
}

# A grant is live if it never expires, or expires after the time of the request.
live(grant) if not grant.expires_at

live(grant) if grant.expires_at > input.now

# reasons is what POST /provisions/explain shows.
reasons contains "granted" if allow_all

reasons contains "unknown user" if not input.user

reasons contains "inactive user" if {
	input.user
	not input.user.active == true
}

reasons contains "unknown resource" if {
	some id in input.resource_ids
	not input.resources[id]
}

reasons contains "a dataset needs a grant of the user's own" if {
	input.user.active == true
	some id in input.resource_ids
	input.resources[id].kind == "dataset"
	not holds_own(id)
	holds_via_group(id)
}
