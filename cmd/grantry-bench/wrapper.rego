# Package grantry.bench lets OPA's own server answer Grantry's can_user_access over the same facts,
# with Grantry's own policy (package grantry.authz, loaded beside this file, unchanged).
#
# The request's input is what a Grantry client sends, {"user_id": "...", "svc_id": "..."}. The
# facts are the data document data.facts, in the shape grantry.authz reads its input:
#
#   data.facts.users[<user id>]          {"id", "active", "resource_list": {<resource id>: {"name"}}}
#   data.facts.resources[<resource id>]  {"kind", "name"}
#
# allow builds grantry.authz's input from them exactly as Grantry does from its store (the user
# absent when unknown; resources holding the asked-for id only when it exists) and asks
# grantry.authz.allow.
package grantry.bench

default allow := false

allow if data.grantry.authz.allow with input as authz_input

authz_input := object.union(
	{"resource_ids": [input.svc_id], "resources": asked_resources},
	asked_user,
)

asked_resources[id] := r if {
	id := input.svc_id
	r := data.facts.resources[id]
}

default asked_user := {}

asked_user := {"user": u} if u := data.facts.users[input.user_id]
