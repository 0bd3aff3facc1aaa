# Unit tests of package grantry.bench, the wrapper that lets OPA's server answer can_user_access
# over data.facts with Grantry's own policy. Run by `go test ./cmd/grantry-bench/`, or
# `opa test policy/authz.rego cmd/grantry-bench/`.
package grantry.bench_test

import data.grantry.bench

model := "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"

function := "c3a9d2f4-1b7e-4c8d-a6f5-9e2b3d4c5a03"

gone := "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"

facts := {
	"resources": {
		model: {"kind": "model", "name": "gpt-4o"},
		function: {"kind": "function", "name": "search"},
	},
	"users": {
		"alice": {"id": "alice", "active": true, "resource_list": {model: {"name": "gpt-4o"}, gone: {"name": "old"}}},
		"bob": {"id": "bob", "active": false, "resource_list": {model: {"name": "gpt-4o"}}},
	},
}

test_allow_granted_resource if {
	bench.allow with input as {"user_id": "alice", "svc_id": model} with data.facts as facts
}

test_allow_denies_resource_not_granted if {
	not bench.allow with input as {"user_id": "alice", "svc_id": function} with data.facts as facts
}

test_allow_denies_inactive_user if {
	not bench.allow with input as {"user_id": "bob", "svc_id": model} with data.facts as facts
}

test_allow_denies_unknown_user if {
	not bench.allow with input as {"user_id": "carol", "svc_id": model} with data.facts as facts
}

test_allow_denies_grant_that_outlived_its_resource if {
	not bench.allow with input as {"user_id": "alice", "svc_id": gone} with data.facts as facts
}

test_allow_is_false_not_undefined if {
	bench.allow == false with input as {"user_id": "carol", "svc_id": gone} with data.facts as facts
}

test_authz_input_for_a_known_user_and_resource if {
	bench.authz_input == {
		"user": facts.users.alice,
		"resource_ids": [model],
		"resources": {model: facts.resources[model]},
	} with input as {"user_id": "alice", "svc_id": model}
		with data.facts as facts
}

test_authz_input_leaves_out_what_does_not_exist if {
	bench.authz_input == {"resource_ids": [gone], "resources": {}} with input as {"user_id": "carol", "svc_id": gone}
		with data.facts as facts
}
