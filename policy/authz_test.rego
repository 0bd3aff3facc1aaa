# Unit tests of package grantry.authz, one or more for every rule and every reason to deny.
# Run with `make test` (through Go's tester) or `opa test policy/`.
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
