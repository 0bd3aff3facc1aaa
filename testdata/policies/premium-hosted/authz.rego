# Hosted models (those whose integration_type is a provider, anything but "custom") only for
# users whose attribute tier is "premium": a hosted model bills per token to the organization's
# account with the provider, and only the premium tier's cost centre pays for it. A custom model
# runs on the organization's own hardware and needs no tier; a model whose integration_type is
# missing counts as hosted. Functions and datasets, and the models a user may have, are decided
# as the shipped policy decides: an active user may use a resource that exists when they hold a
# live grant on it, of their own or through a group.
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

# An active user may use a resource that exists, that their tier may use, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	tier_allows(id)
	holds(id)
}

# Functions and datasets cost no tokens, so every tier may use them.
tier_allows(id) if input.resources[id].kind != "model"

# A custom model runs on the organization's own hardware, at no cost per token.
tier_allows(id) if {
	input.resources[id].kind == "model"
	input.resources[id].integration_type == "custom"
}

# A hosted model is billed to the premium tier's cost centre, so only premium users may use it.
tier_allows(id) if {
	input.resources[id].kind == "model"
	input.user.attributes.tier == "premium"
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
