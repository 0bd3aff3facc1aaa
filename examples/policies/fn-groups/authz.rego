# Functions only through groups named fn-*: Grantry's shipped rules, and a function is allowed
# only through a live grant of a group whose name starts with "fn-" (fn-search, fn-sql-runner);
# a grant of a function to the user directly, or through any other group, allows nothing.
# Models and datasets are decided as the shipped policy decides them: an active user may use a
# resource that exists in the organization when they hold a live grant on it, of their own or
# through a group. See README.md beside this file to run and test the policy.
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
# the organization and the user holds a live grant on it that may grant it. A grant that outlived
# its resource, or a user who was deactivated, never allows anything.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	granted(id)
}

# A live grant of the user's own grants a model or a dataset, never a function: a function runs
# code with the caller's rights, so it is granted to a reviewed group rather than to a person.
granted(id) if {
	input.resources[id].kind != "function"
	live(input.user.resource_list[id])
}

# A live grant of a group grants what that group may grant.
granted(id) if {
	some group in input.user.groups
	grants(group, id)
}

# Any group may grant a model or a dataset.
grants(group, id) if {
	input.resources[id].kind != "function"
	live(group.resource_list[id])
}

# Only a group whose name starts with "fn-" may grant a function.
grants(group, id) if {
	input.resources[id].kind == "function"
	startswith(group.name, "fn-")
	live(group.resource_list[id])
}

# The user holds a live grant on the resource, whether or not it may grant it: one of their own,
# or one of any group they are a member of. reasons uses it to tell a grant that expired from a
# function granted the wrong way.
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
# "granted", and a group that holds a function but may not grant it is not named.
reasons contains sprintf("granted via group %s", [group.name]) if {
	allow_all
	some id in input.resource_ids
	some group in input.user.groups
	grants(group, id)
}

reasons contains "no resource asked about" if count(input.resource_ids) == 0

reasons contains "unknown user" if not input.user

# An active flag that is missing or anything but true counts as inactive, as permitted reads it.
reasons contains "inactive user" if {
	input.user
	not input.user.active == true
}

# The user holds a live grant on a function asked about, but only of their own or through groups
# not named fn-*, which cannot grant it.
reasons contains "function not granted through an fn-* group" if {
	input.user
	some id in input.resource_ids
	input.resources[id].kind == "function"
	holds(id)
	not granted(id)
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
