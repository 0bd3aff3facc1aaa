# Datasets only for the research department: Grantry's shipped rules, and a dataset is allowed
# only to a user whose identity provider attributes say department "research" (in any case),
# whatever grants they hold on it, of their own or through a group. Models and functions are
# decided as the shipped policy decides them: an active user may use a resource that exists in
# the organization when they hold a live grant on it, of their own or through a group.
#
# The department comes from input.user.attributes.department: the attributes object of
# POST /users/import, or SCIM's enterprise extension (department). See README.md beside this
# file to run and test the policy.
#
# Grantry queries allow for POST /provisions/can_user_access (one resource) and allow_all for
# POST /provisions/can_user_access_all (several); reasons is what POST /provisions/explain shows.
# A result that is undefined, not the boolean true, or an evaluation error is a deny.
package grantry.authz

# Nothing is allowed unless a rule below proves it.
default allow := false

default allow_all := false

# can_user_access: exactly one resource was asked about (the array pattern matches no other
# length), and the user may use it.
allow if {
	[id] := input.resource_ids
	permitted(id)
}

# can_user_access_all: at least one resource was asked about, since an empty request must
# never read as "allowed", and the user may use every one of them.
allow_all if {
	count(input.resource_ids) > 0
	every id in input.resource_ids {
		permitted(id)
	}
}

# A resource is permitted to a user who exists and is active, when the resource still exists in
# the organization, the user's department may use it, and the user holds a live grant on it. A
# grant that outlived its resource, or a user who was deactivated, never allows anything.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	department_allows(id)
	holds(id)
}

# Models and functions are for every department.
department_allows(id) if input.resources[id].kind != "dataset"

# Datasets are for the research department only, whose data they hold. The department is
# compared in any case, since identity providers send it as people typed it ("Research").
department_allows(id) if {
	input.resources[id].kind == "dataset"
	research
}

# The user's identity provider says they are in the research department.
research if lower(input.user.attributes.department) == "research"

# The user holds a live grant on the resource: one of their own, or one of any group they are
# a member of. The user's own grant is tested as live inline rather than through live(): it is
# what almost every check reads, and a function call costs more than the test.
holds(id) if {
	grant := input.user.resource_list[id]
	not grant.expires_at
}

holds(id) if input.user.resource_list[id].expires_at > input.now

holds(id) if {
	some group in input.user.groups
	live(group.resource_list[id])
}

# The user has a grant on the resource, live or expired, of their own or through a group.
held(id) if input.user.resource_list[id]

held(id) if {
	some group in input.user.groups
	group.resource_list[id]
}

# A grant is live if it never expires, or expires after the time of the request. Without
# input.now no expiring grant is live: the policy fails closed.
live(grant) if not grant.expires_at

live(grant) if grant.expires_at > input.now

# reasons explains a decision, for POST /provisions/explain and for people reading the policy:
# "granted" when the user may use every resource asked about, and otherwise every cause of
# the deny. It never decides anything: allow and allow_all do not read it.
reasons contains "granted" if allow_all

# An allowed decision names every group through which the user may use a resource asked about,
# so that a reader can tell where access comes from; a grant of the user's own adds nothing to
# "granted".
reasons contains sprintf("granted via group %s", [group.name]) if {
	allow_all
	some id in input.resource_ids
	some group in input.user.groups
	live(group.resource_list[id])
}

reasons contains "no resource asked about" if count(input.resource_ids) == 0

reasons contains "unknown user" if not input.user

# An active flag that is missing or anything but true counts as inactive, as permitted reads it.
reasons contains "inactive user" if {
	input.user
	not input.user.active == true
}

# A dataset was asked about by a user outside the research department, whatever they hold.
reasons contains "dataset for the research department only" if {
	input.user
	not research
	some id in input.resource_ids
	input.resources[id].kind == "dataset"
}

# The resource does not exist in the organization (or no longer does).
reasons contains "unknown resource" if {
	some id in input.resource_ids
	not input.resources[id]
}

# The user and the resource exist, but the user holds no grant on it, of their own or through
# a group.
reasons contains "not granted" if {
	input.user
	some id in input.resource_ids
	input.resources[id]
	not held(id)
}

# The user and the resource exist and the user held a grant on it, but every such grant has
# expired (and waits for the clean-up to remove it).
reasons contains "expired" if {
	input.user
	some id in input.resource_ids
	input.resources[id]
	held(id)
	not holds(id)
}
