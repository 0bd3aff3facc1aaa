# Datasets only in business hours: customer data may be read from 08:00 to 18:00 UTC, Monday to
# Friday, while the data-protection desk watches exports and can stop one; outside those hours
# a dataset grant allows nothing. The hour and the day are those of input.now. Models and
# functions, and datasets in business hours, are decided as the shipped policy decides: an
# active user may use a resource that exists when they hold a live grant on it, of their own or
# through a group.
#
# memo: unbounded (time.clock and time.weekday read input.now beyond a plain comparison)
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

# An active user may use a resource that exists, at an hour it may be used, and that they hold.
permitted(id) if {
	input.user.active == true
	input.resources[id]
	hours_allow(id)
	holds(id)
}

# Models and functions may be used at any hour.
hours_allow(id) if input.resources[id].kind != "dataset"

# Datasets only while the data-protection desk is staffed.
hours_allow(id) if {
	input.resources[id].kind == "dataset"
	business_hours
}

# From 08:00 to 18:00 UTC on a weekday; without input.now it is never business hours.
business_hours if {
	[hour, _, _] := time.clock([input.now, "UTC"])
	hour >= 8
	hour < 18
	not time.weekday([input.now, "UTC"]) in {"Saturday", "Sunday"}
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
