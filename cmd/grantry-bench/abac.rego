# Package grantry.authz, as the grantry-abac row of make bench runs it (GRANTRY_POLICY_DIR): the
# shipped policy's rules, loaded beside this file as package grantry.shipped, and two rules on
# the user's attributes, as an organization that decides by them would add:
#
#   - a dataset is allowed only to users whose department (input.user.attributes.department,
#     from the identity provider) is "research";
#   - every user's email (input.user.email) must be of the bench's domain, @bench.example.
#
# Both fail closed: a user without attributes, or without an email, is allowed nothing they
# would need them for.
package grantry.authz

import data.grantry.shipped

default allow := false

default allow_all := false

# can_user_access: what the shipped policy allows, of the one resource asked about, when the
# user's attributes permit it too.
allow if {
	shipped.allow
	[id] := input.resource_ids
	attributes_permit(id)
}

# can_user_access_all: what the shipped policy allows, when the user's attributes permit every
# resource asked about.
allow_all if {
	shipped.allow_all
	every id in input.resource_ids {
		attributes_permit(id)
	}
}

# The user's email is of the organization's domain, and the resource is one their department
# may use.
attributes_permit(id) if {
	endswith(input.user.email, "@bench.example")
	department_permits(id)
}

# Only datasets are kept to a department.
department_permits(id) if input.resources[id].kind != "dataset"

department_permits(id) if {
	input.resources[id].kind == "dataset"
	input.user.attributes.department == "research"
}
