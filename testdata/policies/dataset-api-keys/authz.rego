# Datasets only through particular API keys: those of the retrieval gateway and the evaluation
# harness, the two services the security team reviewed for data handling. A user's grant of a
# dataset is honoured only when the question comes with one of their keys, so that a key leaked
# from a notebook or a script reaches no data. Models and functions, and datasets asked about
# with those keys, are decided as the shipped policy decides: an active user may use a resource
# that exists when they hold a live grant on it, of their own or through a group.
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

# The ids of the API keys of the retrieval gateway and of the evaluation harness.
dataset_keys := {
	"5e0b7a3c-2d41-4f8e-9c6a-1b2d3e4f5a06",
	"8d3f2a1b-6c5e-4d7f-a9b8-0e1f2a3b4c07",
}

# An active user may use a resource that exists, that the key asking may reach, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	key_allows(id)
	holds(id)
}

# Models and functions may be asked about with any key.
key_allows(id) if input.resources[id].kind != "dataset"

# Datasets only with a key of a reviewed service.
key_allows(id) if {
	input.resources[id].kind == "dataset"
	input.request.api_key_id in dataset_keys
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
