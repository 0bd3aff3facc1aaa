# A staged rollout of "datasets only for the research department": while the security team
# watches the deny rate and the help desk, the rule is enforced on one dataset decision in four,
# drawn at random, and a dataset grant alone decides the others. The department is the identity
# provider's attribute department, in any case. Everything else as the shipped policy: an
# active user may use a resource that exists when they hold a live grant on it, of their own or
# through a group.
#
# memo: unbounded (rand.intn draws the decision at random)
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

# An active user may use a resource that exists, that the rollout lets them use, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	rollout_allows(id)
	holds(id)
}

# Models and functions are outside the rollout.
rollout_allows(id) if input.resources[id].kind != "dataset"

# A dataset decision the rollout does not enforce on is decided by the grant alone.
rollout_allows(id) if {
	input.resources[id].kind == "dataset"
	not enforced
}

# A researcher passes the rule whether or not it is enforced.
rollout_allows(id) if {
	input.resources[id].kind == "dataset"
	lower(input.user.attributes.department) == "research"
}

# One decision in four enforces the rule; one draw serves every dataset of a question.
enforced if rand.intn("dataset-department-rollout", 4) == 0

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
