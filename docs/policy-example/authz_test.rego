# Tests of the example policy; `grantry policy test docs/policy-example` runs them.
package grantry.authz_test

import data.grantry.authz

model := "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"

dataset := "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"

resources := {
	model: {"kind": "model", "name": "gpt-4o"},
	dataset: {"kind": "dataset", "name": "support-docs"},
}

research := {"name": "Research", "resource_list": {model: {"name": "gpt-4o"}, dataset: {"name": "support-docs"}}}

member := {"id": "alan", "active": true, "resource_list": {}, "groups": {"g1": research}}

test_group_grant_allows_a_model if {
	authz.allow with input as {"user": member, "resource_ids": [model], "resources": resources}
}

test_group_grant_does_not_allow_a_dataset if {
	not authz.allow with input as {"user": member, "resource_ids": [dataset], "resources": resources}
	authz.reasons["a dataset needs a grant of the user's own"] with input as {"user": member, "resource_ids": [dataset], "resources": resources}
}

test_own_grant_allows_a_dataset if {
	own := object.union(member, {"resource_list": {dataset: {"name": "support-docs"}}})
	authz.allow with input as {"user": own, "resource_ids": [dataset], "resources": resources}
}

test_expired_own_grant_does_not_allow if {
	own := object.union(member, {"resource_list": {dataset: {"name": "support-docs", "expires_at": 1}}})
	not authz.allow with input as {"user": own, "resource_ids": [dataset], "resources": resources, "now": 2}
}

test_inactive_user_is_denied if {
	inactive := object.union(member, {"active": false})
	not authz.allow with input as {"user": inactive, "resource_ids": [model], "resources": resources}
}

test_allow_all_needs_every_resource if {
	not authz.allow_all with input as {"user": member, "resource_ids": [model, dataset], "resources": resources}
	not authz.allow_all with input as {"user": member, "resource_ids": [], "resources": resources}
	authz.allow_all with input as {"user": member, "resource_ids": [model], "resources": resources}
}
