# The shipped policy with one line added: a user whose identity provider attributes say
# "suspended": "true" may use nothing, though they are still active and hold live grants. It
# decides as the shipped policy otherwise: an active user may use a resource that exists when
# they hold a live grant on it, of their own or through a group. reasons names the suspension.
#
# permitted_resources is left out: Grantry asks it of the shipped policy only, and here it
# would disagree with allow for a suspended user.
#
# memo: bounded
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

# A resource is permitted to a user who exists, is active and is not suspended, when the resource
# still exists in the organization and the user holds a live grant on it. A grant that outlived
# its resource, or a user who was deactivated or suspended, never allows anything. Suspension is
# the identity provider's attribute "suspended": "true", set while an account is investigated
# and before it is deactivated; any other value, or none, is not suspended.
permitted(id) if {
	input.user.active == true
	not input.user.attributes.suspended == "true"
	input.resources[id]
	holds(id)
}

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

# A suspended user is denied whatever they hold, as permitted reads the attribute.
reasons contains "suspended user" if input.user.attributes.suspended == "true"

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
