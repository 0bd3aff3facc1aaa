# Tests of the research-datasets policy: the shipped policy's tests, with alice in the research
# department, and the tests of the department rule. Run them with
# `go run ./cmd/grantry policy test examples/policies/research-datasets`.
package grantry.authz_test

import data.grantry.authz

model := "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"

dataset := "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"

function := "c3a9d2f4-1b7e-4c8d-a6f5-9e2b3d4c5a03"

resources := {
	model: {"kind": "model", "name": "gpt-4o"},
	dataset: {"kind": "dataset", "name": "support-docs"},
	function: {"kind": "function", "name": "search"},
}

alice := {
	"id": "alice",
	"active": true,
	"attributes": {"department": "research"},
	"resource_list": {
		model: {"name": "gpt-4o"},
		dataset: {"name": "support-docs"},
	},
}

test_allow_granted_resource if {
	authz.allow with input as {"user": alice, "resource_ids": [model], "resources": resources}
}

test_allow_denies_resource_not_granted if {
	not authz.allow with input as {"user": alice, "resource_ids": [function], "resources": resources}
}

test_allow_denies_unknown_user if {
	not authz.allow with input as {"resource_ids": [model], "resources": resources}
}

test_allow_denies_inactive_user if {
	not authz.allow with input as {
		"user": object.union(alice, {"active": false}),
		"resource_ids": [model],
		"resources": resources,
	}
}

test_allow_denies_user_without_active_flag if {
	not authz.allow with input as {
		"user": object.remove(alice, ["active"]),
		"resource_ids": [model],
		"resources": resources,
	}
}

test_allow_denies_active_flag_that_is_not_true if {
	not authz.allow with input as {
		"user": object.union(alice, {"active": "true"}),
		"resource_ids": [model],
		"resources": resources,
	}
}

# A grant whose resource was removed (or never existed here) fails closed.
test_allow_denies_grant_on_unknown_resource if {
	not authz.allow with input as {
		"user": alice,
		"resource_ids": [model],
		"resources": object.remove(resources, [model]),
	}
}

test_allow_denies_empty_request if {
	not authz.allow with input as {"user": alice, "resource_ids": [], "resources": resources}
}

test_allow_denies_more_than_one_resource if {
	not authz.allow with input as {"user": alice, "resource_ids": [model, dataset], "resources": resources}
}

test_allow_denies_missing_input if {
	not authz.allow with input as {}
}

test_allow_all_every_resource_granted if {
	authz.allow_all with input as {"user": alice, "resource_ids": [model, dataset], "resources": resources}
}

test_allow_all_single_resource if {
	authz.allow_all with input as {"user": alice, "resource_ids": [dataset], "resources": resources}
}

test_allow_all_repeated_resource if {
	authz.allow_all with input as {"user": alice, "resource_ids": [model, model], "resources": resources}
}

test_allow_all_denies_when_one_is_not_granted if {
	not authz.allow_all with input as {
		"user": alice,
		"resource_ids": [model, function, dataset],
		"resources": resources,
	}
}

test_allow_all_denies_when_one_is_unknown if {
	not authz.allow_all with input as {
		"user": alice,
		"resource_ids": [model, "00000000-0000-4000-8000-000000000000"],
		"resources": resources,
	}
}

test_allow_all_denies_empty_request if {
	not authz.allow_all with input as {"user": alice, "resource_ids": [], "resources": resources}
}

test_allow_all_denies_unknown_user if {
	not authz.allow_all with input as {"resource_ids": [model], "resources": resources}
}

test_allow_all_denies_inactive_user if {
	not authz.allow_all with input as {
		"user": object.union(alice, {"active": false}),
		"resource_ids": [model, dataset],
		"resources": resources,
	}
}

test_permitted_needs_user_resource_and_grant if {
	authz.permitted(model) with input as {"user": alice, "resources": resources}
	not authz.permitted(function) with input as {"user": alice, "resources": resources}
	not authz.permitted(model) with input as {"user": alice, "resources": {}}
	not authz.permitted(model) with input as {"resources": resources}
}

test_reasons_granted if {
	authz.reasons == {"granted"} with input as {"user": alice, "resource_ids": [model], "resources": resources}
	authz.reasons == {"granted"} with input as {"user": alice, "resource_ids": [model, dataset], "resources": resources}
}

test_reasons_unknown_user if {
	authz.reasons == {"unknown user"} with input as {"resource_ids": [model], "resources": resources}
}

test_reasons_inactive_user if {
	authz.reasons == {"inactive user"} with input as {
		"user": object.union(alice, {"active": false}),
		"resource_ids": [model],
		"resources": resources,
	}
}

test_reasons_inactive_when_active_flag_is_missing_or_not_true if {
	authz.reasons == {"inactive user"} with input as {
		"user": object.remove(alice, ["active"]),
		"resource_ids": [model],
		"resources": resources,
	}
	authz.reasons == {"inactive user"} with input as {
		"user": object.union(alice, {"active": "true"}),
		"resource_ids": [model],
		"resources": resources,
	}
}

test_reasons_unknown_resource if {
	authz.reasons == {"unknown resource"} with input as {
		"user": alice,
		"resource_ids": [model],
		"resources": object.remove(resources, [model]),
	}
}

test_reasons_not_granted if {
	authz.reasons == {"not granted"} with input as {"user": alice, "resource_ids": [function], "resources": resources}
}

test_reasons_no_resource if {
	authz.reasons == {"no resource asked about"} with input as {"user": alice, "resource_ids": [], "resources": resources}
}

# Every cause is given at once, and "granted" never comes with one.
test_reasons_several_causes if {
	authz.reasons == {"inactive user", "not granted", "unknown resource"} with input as {
		"user": object.union(alice, {"active": false}),
		"resource_ids": [model, function, "00000000-0000-4000-8000-000000000000"],
		"resources": resources,
	}
	authz.reasons == {"unknown user", "unknown resource"} with input as {
		"resource_ids": ["00000000-0000-4000-8000-000000000000"],
		"resources": resources,
	}
}

# reasons agrees with the decision: "granted" exactly when allow_all allows.
test_reasons_agree_with_allow_all if {
	inputs := [
		{"user": alice, "resource_ids": [model], "resources": resources},
		{"user": alice, "resource_ids": [function], "resources": resources},
		{"resource_ids": [model], "resources": resources},
		{"user": object.union(alice, {"active": false}), "resource_ids": [model], "resources": resources},
		{"user": alice, "resource_ids": [], "resources": resources},
	]
	every x in inputs {
		granted := "granted" in authz.reasons with input as x
		allowed := authz.allow_all with input as x
		granted == allowed
	}
}

# Groups and expiry. Times are Unix nanoseconds, as Grantry sends them.

now := 1795000000000000000

earlier := now - 1

later := now + 1

engineering := {"name": "Engineering", "resource_list": {function: {"name": "search"}}}

# bob holds nothing of his own; he may use the function through his group.
bob := {"id": "bob", "active": true, "resource_list": {}, "groups": {"g-eng": engineering}}

# alice_until returns alice whose grant on the model expires at t.
alice_until(t) := object.union(alice, {"resource_list": {model: {"name": "gpt-4o", "expires_at": t}}})

# member_until returns bob whose group's grant on the function expires at t.
member_until(t) := object.union(bob, {"groups": {"g-eng": {"name": "Engineering", "resource_list": {function: {"name": "search", "expires_at": t}}}}})

test_allow_through_a_group if {
	authz.allow with input as {"user": bob, "resource_ids": [function], "resources": resources}
}

test_allow_denies_what_no_group_holds if {
	not authz.allow with input as {"user": bob, "resource_ids": [model], "resources": resources}
}

test_allow_denies_inactive_member if {
	not authz.allow with input as {
		"user": object.union(bob, {"active": false}),
		"resource_ids": [function],
		"resources": resources,
	}
}

test_allow_all_own_and_group_grants_together if {
	authz.allow_all with input as {
		"user": object.union(alice, {"groups": {"g-eng": engineering}}),
		"resource_ids": [model, function],
		"resources": resources,
	}
	not authz.allow_all with input as {"user": bob, "resource_ids": [model, function], "resources": resources}
}

test_allow_own_grant_until_it_expires if {
	authz.allow with input as {"user": alice_until(later), "resource_ids": [model], "resources": resources, "now": now}
	not authz.allow with input as {"user": alice_until(now), "resource_ids": [model], "resources": resources, "now": now}
	not authz.allow with input as {"user": alice_until(earlier), "resource_ids": [model], "resources": resources, "now": now}
}

test_allow_group_grant_until_it_expires if {
	authz.allow with input as {"user": member_until(later), "resource_ids": [function], "resources": resources, "now": now}
	not authz.allow with input as {"user": member_until(now), "resource_ids": [function], "resources": resources, "now": now}
}

# Without the time of the request, an expiring grant cannot be shown live: fail closed. A grant
# that never expires needs no time.
test_allow_denies_expiring_grant_without_now if {
	not authz.allow with input as {"user": alice_until(later), "resource_ids": [model], "resources": resources}
	authz.allow with input as {"user": alice, "resource_ids": [model], "resources": resources}
}

test_allow_expired_own_grant_but_live_group_grant if {
	user := object.union(alice_until(earlier), {"groups": {"g-x": {"name": "X", "resource_list": {model: {"name": "gpt-4o"}}}}})
	authz.allow with input as {"user": user, "resource_ids": [model], "resources": resources, "now": now}
}

test_live_grants if {
	authz.live({"name": "n"}) with input as {}
	authz.live({"name": "n", "expires_at": later}) with input as {"now": now}
	not authz.live({"name": "n", "expires_at": now}) with input as {"now": now}
	not authz.live({"name": "n", "expires_at": later}) with input as {}
}

test_holds_and_held if {
	authz.holds(function) with input as {"user": bob}
	authz.held(function) with input as {"user": bob}
	not authz.holds(model) with input as {"user": bob}
	not authz.held(model) with input as {"user": bob}
	not authz.holds(function) with input as {"user": member_until(earlier), "now": now}
	authz.held(function) with input as {"user": member_until(earlier), "now": now}
}

test_reasons_granted_via_group if {
	authz.reasons == {"granted", "granted via group Engineering"} with input as {"user": bob, "resource_ids": [function], "resources": resources}
	authz.reasons == {"granted", "granted via group Engineering"} with input as {
		"user": object.union(alice, {"groups": {"g-eng": engineering}}),
		"resource_ids": [model, function],
		"resources": resources,
	}
}

# A group whose grant has expired is not named, though another route still allows.
test_reasons_names_only_live_groups if {
	user := object.union(member_until(earlier), {"resource_list": {function: {"name": "search"}}})
	authz.reasons == {"granted"} with input as {"user": user, "resource_ids": [function], "resources": resources, "now": now}
}

# A deny names no group, even one that grants part of what was asked.
test_reasons_no_group_named_when_denied if {
	authz.reasons == {"not granted"} with input as {"user": bob, "resource_ids": [function, model], "resources": resources}
}

test_reasons_expired if {
	authz.reasons == {"expired"} with input as {"user": alice_until(earlier), "resource_ids": [model], "resources": resources, "now": now}
	authz.reasons == {"expired"} with input as {"user": member_until(now), "resource_ids": [function], "resources": resources, "now": now}
	authz.reasons == {"expired", "not granted"} with input as {
		"user": alice_until(earlier),
		"resource_ids": [model, function],
		"resources": resources,
		"now": now,
	}
}

test_reasons_expiry_and_groups_agree_with_allow_all if {
	inputs := [
		{"user": bob, "resource_ids": [function], "resources": resources},
		{"user": bob, "resource_ids": [model, function], "resources": resources},
		{"user": alice_until(later), "resource_ids": [model], "resources": resources, "now": now},
		{"user": alice_until(earlier), "resource_ids": [model], "resources": resources, "now": now},
		{"user": member_until(later), "resource_ids": [function], "resources": resources},
	]
	every x in inputs {
		granted := "granted" in authz.reasons with input as x
		allowed := authz.allow_all with input as x
		granted == allowed
	}
}

# The department rule.

# in_department is user with the department attribute set to department.
in_department(user, department) := object.union(user, {"attributes": {"department": department}})

# without_attributes is user with no attributes at all, as a user imported without them has.
without_attributes(user) := object.union(object.remove(user, ["attributes"]), {"attributes": {}})

test_allow_dataset_to_research_in_any_case if {
	every department in ["research", "Research", "RESEARCH"] {
		authz.allow with input as {"user": in_department(alice, department), "resource_ids": [dataset], "resources": resources}
	}
}

test_allow_denies_dataset_outside_research if {
	every department in ["sales", "research-ops", ""] {
		not authz.allow with input as {"user": in_department(alice, department), "resource_ids": [dataset], "resources": resources}
	}
	not authz.allow with input as {"user": without_attributes(alice), "resource_ids": [dataset], "resources": resources}
	not authz.allow with input as {"user": object.remove(alice, ["attributes"]), "resource_ids": [dataset], "resources": resources}
}

# A group's grant of a dataset is no way round the rule.
test_allow_denies_dataset_through_a_group_outside_research if {
	user := object.union(bob, {"groups": {"g-data": {"name": "Data", "resource_list": {dataset: {"name": "support-docs"}}}}})
	not authz.allow with input as {"user": user, "resource_ids": [dataset], "resources": resources}
	authz.allow with input as {"user": in_department(user, "Research"), "resource_ids": [dataset], "resources": resources}
}

test_allow_models_and_functions_to_every_department if {
	authz.allow with input as {"user": in_department(alice, "sales"), "resource_ids": [model], "resources": resources}
	authz.allow with input as {"user": without_attributes(bob), "resource_ids": [function], "resources": resources}
}

test_allow_all_denies_a_dataset_among_others_outside_research if {
	not authz.allow_all with input as {"user": in_department(alice, "sales"), "resource_ids": [model, dataset], "resources": resources}
	authz.allow_all with input as {"user": in_department(alice, "sales"), "resource_ids": [model], "resources": resources}
}

test_reasons_dataset_outside_research if {
	authz.reasons == {"dataset for the research department only"} with input as {
		"user": in_department(alice, "sales"),
		"resource_ids": [model, dataset],
		"resources": resources,
	}
	authz.reasons == {"dataset for the research department only", "not granted"} with input as {
		"user": without_attributes(bob),
		"resource_ids": [dataset],
		"resources": resources,
	}
	authz.reasons == {"granted"} with input as {"user": in_department(alice, "sales"), "resource_ids": [model], "resources": resources}
}

test_reasons_department_rule_agrees_with_allow_all if {
	inputs := [
		{"user": in_department(alice, "sales"), "resource_ids": [dataset], "resources": resources},
		{"user": in_department(alice, "Research"), "resource_ids": [dataset], "resources": resources},
		{"user": without_attributes(alice), "resource_ids": [model, dataset], "resources": resources},
		{"user": without_attributes(alice), "resource_ids": [model], "resources": resources},
	]
	every x in inputs {
		granted := "granted" in authz.reasons with input as x
		allowed := authz.allow_all with input as x
		granted == allowed
	}
}
