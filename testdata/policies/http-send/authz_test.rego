# Tests of the http-send policy: the shipped rules, and HR's leave status. http.send is always
# replaced, so that no test reaches the network: the shared tests ask an HR that says no one is
# on leave.
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
	authz.allow with input as ask(alice, [model]) with http.send as hr_at_work
	authz.allow with input as ask(alice, [dataset]) with http.send as hr_at_work
}

test_allow_group_grant if {
	authz.allow with input as ask(bob, [function]) with http.send as hr_at_work
}

test_allow_denies_what_is_not_granted if {
	not authz.allow with input as ask(alice, [function]) with http.send as hr_at_work
	not authz.allow with input as ask(bob, [model]) with http.send as hr_at_work
}

test_allow_denies_unknown_or_inactive_user if {
	not authz.allow with input as nobody([model]) with http.send as hr_at_work
	not authz.allow with input as ask(object.union(alice, {"active": false}), [model]) with http.send as hr_at_work
	not authz.allow with input as ask(object.remove(alice, ["active"]), [model]) with http.send as hr_at_work
	not authz.allow with input as ask(object.union(alice, {"active": "true"}), [model]) with http.send as hr_at_work
}

# A grant whose resource was removed (or never existed here) fails closed.
test_allow_denies_removed_resource if {
	not authz.allow with input as ask_in(alice, [model], object.remove(resources, [model])) with http.send as hr_at_work
	not authz.allow with input as ask(alice, [unknown]) with http.send as hr_at_work
}

test_allow_asks_about_exactly_one if {
	not authz.allow with input as ask(alice, []) with http.send as hr_at_work
	not authz.allow with input as ask(alice, [model, dataset]) with http.send as hr_at_work
	not authz.allow with input as {} with http.send as hr_at_work
}

test_allow_all_every_one_permitted if {
	authz.allow_all with input as ask(alice, [model, dataset]) with http.send as hr_at_work
	authz.allow_all with input as ask(alice, [model, model]) with http.send as hr_at_work
	authz.allow_all with input as ask(object.union(alice, {"groups": bob.groups}), [model, function]) with http.send as hr_at_work
}

test_allow_all_denies_when_one_is_not if {
	not authz.allow_all with input as ask(alice, [model, function]) with http.send as hr_at_work
	not authz.allow_all with input as ask(alice, [model, unknown]) with http.send as hr_at_work
	not authz.allow_all with input as ask(alice, []) with http.send as hr_at_work
	not authz.allow_all with input as nobody([model]) with http.send as hr_at_work
}

test_group_grant_until_it_expires if {
	authz.allow with input as ask(member_until(later), [function]) with http.send as hr_at_work
	not authz.allow with input as ask(member_until(now), [function]) with http.send as hr_at_work
	not authz.allow with input as ask(member_until(earlier), [function]) with http.send as hr_at_work
}

test_own_grant_until_it_expires if {
	authz.allow with input as ask(alice_until(later), [model]) with http.send as hr_at_work
	not authz.allow with input as ask(alice_until(now), [model]) with http.send as hr_at_work
	not authz.allow with input as ask(alice_until(earlier), [model]) with http.send as hr_at_work
}

# Without the time of the request an expiring grant cannot be shown live; a standing one needs none.
test_expiring_grant_needs_now if {
	not authz.allow with input as object.remove(ask(alice_until(later), [model]), ["now"]) with http.send as hr_at_work
	authz.allow with input as object.remove(ask(alice, [model]), ["now"]) with http.send as hr_at_work
}

# Leave, the rule this policy adds.

# hr_says is an HR that answers that the users of on_leave, by id, are on leave.
hr_says(on_leave, request) := {"status_code": 200, "body": {"on_leave": true}} if {
	request.method == "GET"
	some id in on_leave
	request.url == concat("", ["https://hr.example.internal/v1/leave/", urlquery.encode(id)])
} else := {"status_code": 200, "body": {"on_leave": false}}

hr_at_work(request) := hr_says(set(), request)

hr_alice_away(request) := hr_says({"alice", "a/b c"}, request)

# hr_down is an HR that cannot be reached, as http.send answers without raise_error.
hr_down(_) := {"status_code": 0, "error": {"code": "eval_http_send_network_error", "message": "no such host"}}

# hr_failing is an HR answering a server error, with a body that must not be trusted.
hr_failing(_) := {"status_code": 503, "body": {"on_leave": true}}

test_allow_denies_user_on_leave if {
	not authz.allow with input as ask(alice, [model]) with http.send as hr_alice_away
	not authz.allow_all with input as ask(alice, [model, dataset]) with http.send as hr_alice_away
}

test_allow_others_while_one_is_on_leave if {
	authz.allow with input as ask(bob, [function]) with http.send as hr_alice_away
}

# The id is sent escaped: a crafted id cannot ask HR about another path.
test_leave_is_asked_with_the_id_escaped if {
	not authz.allow with input as ask(object.union(alice, {"id": "a/b c"}), [model]) with http.send as hr_alice_away
	authz.allow with input as ask(object.union(alice, {"id": "alice/../bob"}), [model]) with http.send as hr_alice_away
}

# An HR that cannot say leaves the grants to decide alone.
test_allow_when_hr_does_not_answer if {
	authz.allow with input as ask(alice, [model]) with http.send as hr_down
	authz.allow with input as ask(alice, [model]) with http.send as hr_failing
	not authz.allow with input as ask(alice, [function]) with http.send as hr_down
}

test_allow_denies_on_leave_only_when_hr_says_true if {
	authz.allow with input as ask(alice, [model]) with http.send as {"status_code": 200, "body": {"on_leave": "true"}}
	authz.allow with input as ask(alice, [model]) with http.send as {"status_code": 200, "body": {}}
}
