package api_test

import (
	"net/http"
	"testing"
	"time"
)

// TestUserAccess: GET /users/{id}/access shows the user's own grants, the groups with theirs,
// and what the check allows now, which is the union of both while the user is active and
// nothing once not.
func TestUserAccess(t *testing.T) {
	f := newFixture(t) // the clock is at 2026-11-22T09:30:00Z
	_, key := f.org("acme")
	_, token := f.scimIntegration(key, "okta")
	ada := f.scimUser(token, "ada@acme.test")
	gpt, llama, docs, gone := f.model(key, "gpt"), f.model(key, "llama"), f.model(key, "docs"), f.model(key, "gone")
	grant := func(svc string, expires string) {
		body := map[string]string{"user_id": ada, "svc_id": svc}
		if expires != "" {
			body["expires_at"] = expires
		}
		f.must("POST", "/provisions/add_to_user", key, body)
	}
	grant(gpt, "")
	grant(llama, "2026-11-22T10:00:00Z")
	grant(docs, "2026-11-22T09:31:00Z") // expired by the time it is asked
	grant(gone, "")
	eng, ops := f.group(key, "Engineering"), f.group(key, "Ops")
	f.addMember(key, eng, ada)
	f.addMember(key, ops, ada)
	f.grantGroup(key, eng, docs)
	f.grantGroup(key, eng, gpt)
	f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": gone})
	f.clock.Advance(time.Minute)

	jsonEqual(t, f.must("GET", "/users/"+ada+"/access", key, nil).Body, `{
		"user_id": "`+ada+`", "active": true,
		"direct": [
			{"id": "`+gpt+`", "name": "gpt", "expires_at": null},
			{"id": "`+llama+`", "name": "llama", "expires_at": "2026-11-22T10:00:00.000Z"}],
		"via_groups": [
			{"id": "`+eng+`", "name": "Engineering", "resources": [
				{"id": "`+docs+`", "name": "docs", "expires_at": null},
				{"id": "`+gpt+`", "name": "gpt", "expires_at": null}]},
			{"id": "`+ops+`", "name": "Ops", "resources": []}],
		"effective": [
			{"id": "`+docs+`", "name": "docs"},
			{"id": "`+gpt+`", "name": "gpt"},
			{"id": "`+llama+`", "name": "llama"}]}`)
	// resource_list stays the user's own live grants.
	users := decode[struct {
		Users []struct {
			ID           string
			ResourceList []struct{ ID string } `json:"resource_list"`
		}
	}](t, f.must("GET", "/users/list", key, nil)).Users
	if len(users) != 1 || len(users[0].ResourceList) != 2 {
		t.Errorf("resource_list = %+v, want gpt and llama", users)
	}

	if r := f.scimDo("PATCH", "/scim/v2/Users/"+ada, token, patchInactive); r.Status != http.StatusOK {
		t.Fatalf("deactivate = %d %s", r.Status, r.Body)
	}
	got := decode[struct {
		Active    bool
		Direct    []any
		Effective []any
	}](t, f.must("GET", "/users/"+ada+"/access", key, nil))
	if got.Active || len(got.Direct) != 2 || len(got.Effective) != 0 {
		t.Errorf("a deactivated user: %+v, want inactive, two grants kept, nothing effective", got)
	}

	r := f.do("GET", "/users/nobody/access", key, nil)
	if r.Status != http.StatusNotFound {
		t.Fatalf("unknown user = %d %s, want 404", r.Status, r.Body)
	}
	jsonEqual(t, r.Body, `{"detail":"User not found."}`)
}
