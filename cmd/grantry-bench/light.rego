# Package grantry.light is OPA's server at its lightest, a baseline for the cost of a check: one
# rule over a data document that holds nothing but each user's resource ids,
#
#   data.grants[<user id>]  ["<resource id>", ...]
#
# asked with the request's input as a Grantry client sends it, {"user_id": "...", "svc_id": "..."}.
package grantry.light

default allow := false

allow if input.svc_id in data.grants[input.user_id]
