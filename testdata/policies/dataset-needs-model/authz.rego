# A dataset needs its own live grant and also a live grant on at least one model: a dataset is
# retrieval context for a model, so a user whose model access has ended (or never began) has no
# use for one, and a dataset grant left behind then is only a way to pull data out. Models and
# functions are decided as the shipped policy decides: an active user may use a resource that
# exists when they hold a live grant on it, of their own or through a group.
#
# Which other grants are on models: input.resources describes only the resources asked about,
# and a grant carries only its resource's name, so the organization's naming rule decides. Every
# model is registered with a name that starts with "model-" (model-gpt-4o, model-llama-3), and no
# function or dataset is; the resource_lists hold grants of existing resources only, so such a
# grant is on a model that exists.
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

# Models and functions: an active user's live grant on a resource that exists.
permitted(id) if {
	input.user.active == true
	input.resources[id].kind != "dataset"
	holds(id)
}

# Datasets: an active user's live grant on it, and a live grant on some model besides.
permitted(id) if {
	input.user.active == true
	input.resources[id].kind == "dataset"
	holds(id)
	holds_a_model
}

# A model grant of the user's own counts.
holds_a_model if {
	some grant in input.user.resource_list
	live_model_grant(grant)
}

# So does one of any of the user's groups.
holds_a_model if {
	some group in input.user.groups
	some grant in group.resource_list
	live_model_grant(grant)
}

# A grant is on a model when its name says so, by the naming rule; only a live one counts.
live_model_grant(grant) if {
	startswith(grant.name, "model-")
	live(grant)
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
