# Unit tests of abac.rego, the policy of the grantry-abac row, over the shipped rules (package
# grantry.shipped). Grantry runs them when it loads the policy folder; go test runs them too.
package grantry.authz_test

import data.grantry.authz

model := "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"

dataset := "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"

function := "c3a9d2f4-1b7e-4c8d-a6f5-9e2b3d4c5a03"

resources := {
	model: {"kind": "model", "name": "model-00000", "integration_type": "custom"},
	dataset: {"kind": "dataset", "name": "dataset-00002", "integration_type": "custom"},
	function: {"kind": "function", "name": "function-00001", "integration_type": "custom"},
}

grants := {
	model: {"name": "model-00000"},
	dataset: {"name": "dataset-00002"},
}

researcher := {
	"id": "user-0000001",
	"active": true,
	"email": "user-0000001@bench.example",
	"attributes": {"department": "research"},
	"resource_list": grants,
}

seller := object.union(researcher, {"attributes": {"department": "sales"}})

ask(user, ids) := {"user": user, "resource_ids": ids, "resources": resources}

test_research_may_use_a_granted_dataset if {
	authz.allow with input as ask(researcher, [dataset])
}

test_sales_may_not_use_a_granted_dataset if {
	not authz.allow with input as ask(seller, [dataset])
}

test_sales_may_use_a_granted_model if {
	authz.allow with input as ask(seller, [model])
}

test_a_dataset_needs_a_department if {
	not authz.allow with input as ask(object.remove(researcher, ["attributes"]), [dataset])
}

test_an_email_of_another_domain_is_refused if {
	not authz.allow with input as ask(object.union(researcher, {"email": "user-0000001@example.com"}), [model])
}

test_no_email_is_refused if {
	not authz.allow with input as ask(object.remove(researcher, ["email"]), [model])
}

test_the_shipped_rules_still_decide if {
	not authz.allow with input as ask(researcher, [function])
	not authz.allow with input as ask(object.union(researcher, {"active": false}), [model])
	not authz.allow with input as {"resource_ids": [model], "resources": resources}
}

test_allow_all_needs_every_resource_permitted if {
	authz.allow_all with input as ask(researcher, [model, dataset])
	not authz.allow_all with input as ask(seller, [model, dataset])
	authz.allow_all with input as ask(seller, [model])
	not authz.allow_all with input as ask(seller, [])
}
