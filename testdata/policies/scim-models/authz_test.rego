# Tests of the scim-models policy: the shipped rules, and the source models need.
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

# The user's source, the rule this policy adds.

imported(user) := object.union(user, {"source": {"id": "2b7c4d1e-0f3a-4b5c-8d6e-7f8091a2b3c4", "name": "HR import", "type": "import"}})

test_allow_denies_model_to_imported_user if {
	not authz.allow with input as ask(imported(alice), [model])
	not authz.allow_all with input as ask(imported(alice), [model, dataset])
}

test_allow_denies_model_without_source if {
	not authz.allow with input as ask(object.remove(alice, ["source"]), [model])
	not authz.allow with input as ask(object.union(alice, {"source": {"type": "SCIM"}}), [model])
}

test_allow_other_kinds_to_imported_user if {
	authz.allow with input as ask(imported(alice), [dataset])
	authz.allow with input as ask(imported(bob), [function])
	authz.allow_all with input as ask(imported(object.union(alice, {"groups": bob.groups})), [dataset, function])
}

# A group's grant of a model is no way round it.
test_allow_denies_model_through_a_group_to_imported_user if {
	user := object.union(bob, {"groups": {"g-eng": {"resource_list": {model: {"name": "gpt-4o"}}}}})
	authz.allow with input as ask(user, [model])
	not authz.allow with input as ask(imported(user), [model])
}
