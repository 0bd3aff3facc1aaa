# Tests of the dataset-api-keys policy: the shipped rules, and the API keys datasets need.
package grantry.authz_test

import data.grantry.authz

model := "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"

dataset := "7d0c1d8e-8f53-4a43-9b5e-2a1e9f0b7c02"

function := "c3a9d2f4-1b7e-4c8d-a6f5-9e2b3d4c5a03"

unknown := "00000000-0000-4000-8000-000000000000"

resources := {
	model: {"kind": "model", "name": "gpt-4o", "integration_type": "openai"},
	dataset: {"kind": "dataset", "name": "support-docs", "integration_type": "pinecone"},
	function: {"kind": "function", "name": "search", "integration_type": "custom"},
}

# Times are Unix nanoseconds, as Grantry sends them: now is a Wednesday, 11:06 UTC.
now := 1795000000000000000

earlier := now - 1

later := now + 1

# The API key the questions below are asked with.
api_key := "5e0b7a3c-2d41-4f8e-9c6a-1b2d3e4f5a06"

# alice meets every condition of the policy beyond a grant, and holds the model and the dataset
# herself.
alice := {
	"id": "alice",
	"active": true,
	"email": "alice@example.com",
	"first": "Alice",
	"last": "Liddell",
	"source": {"id": "9f1e2d3c-4b5a-4697-8877-665544332211", "name": "Okta", "type": "scim"},
	"attributes": {"department": "research", "tier": "premium"},
	"resource_list": {model: {"name": "gpt-4o"}, dataset: {"name": "support-docs"}},
	"groups": {},
}

# bob meets them too, and holds the function through his group only.
bob := {
	"id": "bob",
	"active": true,
	"email": "bob@example.com",
	"first": "Bob",
	"last": "Builder",
	"source": {"id": "9f1e2d3c-4b5a-4697-8877-665544332211", "name": "Okta", "type": "scim"},
	"attributes": {"department": "research", "tier": "premium"},
	"resource_list": {},
	"groups": {"g-eng": {"name": "Engineering", "resource_list": {function: {"name": "search"}}}},
}

# alice_until is alice whose grant on the model expires at t.
alice_until(t) := object.union(alice, {"resource_list": {model: {"name": "gpt-4o", "expires_at": t}}})

# member_until is bob whose group's grant on the function expires at t.
member_until(t) := object.union(bob, {"groups": {"g-eng": {"resource_list": {function: {"name": "search", "expires_at": t}}}}})

# ask_in is the input of a question by user about ids, with known the resources that exist.
ask_in(user, ids, known) := {
	"user": user,
	"resource_ids": ids,
	"resources": {id: r | some id in ids; r := known[id]},
	"now": now,
	"request": {"api_key_id": api_key},
}

# ask is the input of a question by user about ids, at now, with the API key.
ask(user, ids) := ask_in(user, ids, resources)

# with_attributes is user with attributes replaced by attrs.
with_attributes(user, attrs) := object.union(object.remove(user, ["attributes"]), {"attributes": attrs})

# nobody is the input of a question about a user the organization does not have.
nobody(ids) := object.remove(ask(alice, ids), ["user"])

# The rules every policy of this family shares with the shipped one.

test_allow_own_grant if {
	authz.allow with input as ask(alice, [model])
	authz.allow with input as ask(alice, [dataset])
}

test_allow_group_grant if {
	authz.allow with input as ask(bob, [function])
}

test_allow_denies_what_is_not_granted if {
	not authz.allow with input as ask(alice, [function])
	not authz.allow with input as ask(bob, [model])
}

test_allow_denies_unknown_or_inactive_user if {
	not authz.allow with input as nobody([model])
	not authz.allow with input as ask(object.union(alice, {"active": false}), [model])
	not authz.allow with input as ask(object.remove(alice, ["active"]), [model])
	not authz.allow with input as ask(object.union(alice, {"active": "true"}), [model])
}

# A grant whose resource was removed (or never existed here) fails closed.
test_allow_denies_removed_resource if {
	not authz.allow with input as ask_in(alice, [model], object.remove(resources, [model]))
	not authz.allow with input as ask(alice, [unknown])
}

test_allow_asks_about_exactly_one if {
	not authz.allow with input as ask(alice, [])
	not authz.allow with input as ask(alice, [model, dataset])
	not authz.allow with input as {}
}

test_allow_all_every_one_permitted if {
	authz.allow_all with input as ask(alice, [model, dataset])
	authz.allow_all with input as ask(alice, [model, model])
	authz.allow_all with input as ask(object.union(alice, {"groups": bob.groups}), [model, function])
}

test_allow_all_denies_when_one_is_not if {
	not authz.allow_all with input as ask(alice, [model, function])
	not authz.allow_all with input as ask(alice, [model, unknown])
	not authz.allow_all with input as ask(alice, [])
	not authz.allow_all with input as nobody([model])
}

test_group_grant_until_it_expires if {
	authz.allow with input as ask(member_until(later), [function])
	not authz.allow with input as ask(member_until(now), [function])
	not authz.allow with input as ask(member_until(earlier), [function])
}

test_own_grant_until_it_expires if {
	authz.allow with input as ask(alice_until(later), [model])
	not authz.allow with input as ask(alice_until(now), [model])
	not authz.allow with input as ask(alice_until(earlier), [model])
}

# Without the time of the request an expiring grant cannot be shown live; a standing one needs none.
test_expiring_grant_needs_now if {
	not authz.allow with input as object.remove(ask(alice_until(later), [model]), ["now"])
	authz.allow with input as object.remove(ask(alice, [model]), ["now"])
}

# The API key, the rule this policy adds.

# with_key is the input x asked with the API key id key.
with_key(x, key) := object.union(x, {"request": {"api_key_id": key}})

notebook_key := "b4c5d6e7-f809-4a1b-8c2d-3e4f50617283"

test_allow_dataset_with_either_reviewed_key if {
	authz.allow with input as with_key(ask(alice, [dataset]), "5e0b7a3c-2d41-4f8e-9c6a-1b2d3e4f5a06")
	authz.allow with input as with_key(ask(alice, [dataset]), "8d3f2a1b-6c5e-4d7f-a9b8-0e1f2a3b4c07")
}

test_allow_denies_dataset_with_other_keys if {
	not authz.allow with input as with_key(ask(alice, [dataset]), notebook_key)
	not authz.allow with input as with_key(ask(alice, [dataset]), "")
	not authz.allow with input as with_key(ask(alice, [dataset]), "5E0B7A3C-2D41-4F8E-9C6A-1B2D3E4F5A06")
	not authz.allow_all with input as with_key(ask(alice, [model, dataset]), notebook_key)
}

test_allow_denies_dataset_without_key if {
	not authz.allow with input as object.remove(ask(alice, [dataset]), ["request"])
}

test_allow_other_kinds_with_any_key if {
	authz.allow with input as with_key(ask(alice, [model]), notebook_key)
	authz.allow with input as with_key(ask(bob, [function]), notebook_key)
	authz.allow with input as object.remove(ask(alice, [model]), ["request"])
}

# A group's grant of a dataset needs a reviewed key as much as one of the user's own.
test_allow_denies_dataset_through_a_group_with_other_keys if {
	user := object.union(bob, {"groups": {"g-eng": {"resource_list": {dataset: {"name": "support-docs"}}}}})
	authz.allow with input as ask(user, [dataset])
	not authz.allow with input as with_key(ask(user, [dataset]), notebook_key)
}
