package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAccessModelIsIsolated: groups, group grants, the batch check, the reverse lookup, a
// user's access and key management never reach another organization: its ids behave exactly
// like ids that do not exist.
func TestAccessModelIsIsolated(t *testing.T) {
	f := newFixture(t)
	_, keyA := f.org("a")
	_, keyB := f.org("b")
	modelA, modelB := f.model(keyA, "gpt"), f.model(keyB, "gpt")
	userA, userB := f.user(keyA, "ada@a.test"), f.user(keyB, "bob@b.test")
	groupA := f.group(keyA, "Engineering")
	groupB := f.group(keyB, "Engineering") // the same name in another organization is no conflict
	f.addMember(keyA, groupA, userA)
	f.grantGroup(keyA, groupA, modelA)
	keyIDA := decode[struct{ ID string }](t, f.must("POST", "/api_keys", keyA, map[string]string{"scope": "check"})).ID

	notFound := []struct {
		method, path string
		body         any
	}{
		{"POST", "/groups/add_member", map[string]string{"group_id": groupA, "user_id": userB}},
		{"POST", "/groups/add_member", map[string]string{"group_id": groupB, "user_id": userA}},
		{"POST", "/groups/remove_member", map[string]string{"group_id": groupA, "user_id": userB}},
		{"POST", "/groups/remove_member", map[string]string{"group_id": groupB, "user_id": userA}},
		{"POST", "/groups/remove", map[string]string{"group_id": groupA}},
		{"POST", "/provisions/add_to_group", map[string]string{"group_id": groupA, "svc_id": modelB}},
		{"POST", "/provisions/add_to_group", map[string]string{"group_id": groupB, "svc_id": modelA}},
		{"POST", "/provisions/remove_from_group", map[string]string{"group_id": groupA, "svc_id": modelA}},
		{"GET", "/provisions/users_with_access?svc_id=" + modelA, nil},
		{"GET", "/users/" + userA + "/access", nil},
		{"DELETE", "/api_keys/" + keyIDA, nil},
	}
	for _, c := range notFound {
		if r := f.do(c.method, c.path, keyB, c.body); r.Status != http.StatusNotFound {
			t.Errorf("B: %s %s %v = %d %s, want 404", c.method, c.path, c.body, r.Status, r.Body)
		}
	}
	batch := f.must("POST", "/provisions/check_batch", keyB, map[string]any{"checks": []map[string]string{
		{"user_id": userA, "svc_id": modelA}, {"user_id": userB, "svc_id": modelA}, {"user_id": userA, "svc_id": modelB},
	}})
	if strings.Contains(string(batch.Body), "true") {
		t.Errorf("B's batch saw A's grants: %s", batch.Body)
	}
	for _, p := range []string{"/groups/list", "/api_keys"} {
		body := string(f.must("GET", p, keyB, nil).Body)
		for _, id := range []string{groupA, userA, modelA, keyIDA} {
			if strings.Contains(body, id) {
				t.Errorf("%s for B shows %s of A: %s", p, id, body)
			}
		}
	}

	// Nothing of A changed.
	if !f.check(keyA, userA, modelA) {
		t.Error("A's member lost the group's grant")
	}
	users := decode[reversePage](t, f.must("GET", "/provisions/users_with_access?svc_id="+modelA, keyA, nil)).Users
	if len(users) != 1 || users[0].ID != userA {
		t.Errorf("A's users with access = %+v, want %s alone", users, userA)
	}
	if r := f.must("GET", "/api_keys", keyA, nil); !contains(r.Body, keyIDA) {
		t.Error("A's key is gone")
	}
}

// TestIDThatBeginsAnotherHoldsNothingOfIt: a user whose id is another's followed by a zero
// byte and more is a different user, and neither is ever answered with the other's grants or
// groups, through the check, the batch check or the user's access list. (The store's suite
// checks deletion: storagetest's IDsThatBeginWithAnother.)
func TestIDThatBeginsAnotherHoldsNothingOfIt(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("a")
	own, theirs, viaGroup := f.model(key, "own"), f.model(key, "theirs"), f.model(key, "via-group")
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", key, map[string]string{"name": "directory"})).AuthIntegration.ID
	const ada, longer = "ada", "ada\x00x"
	f.must("POST", "/users/import", key, map[string]any{"auth_integration_id": integ, "users": []map[string]string{
		{"id": ada, "email": "ada@a.test"}, {"id": longer, "email": "ada-x@a.test"},
	}})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ada, "svc_id": own})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": longer, "svc_id": theirs})
	group := f.group(key, "Theirs")
	f.addMember(key, group, longer)
	f.grantGroup(key, group, viaGroup)

	want := map[string]map[string]bool{
		ada:    {own: true, theirs: false, viaGroup: false},
		longer: {own: false, theirs: true, viaGroup: true},
	}
	for user, byModel := range want {
		for model, allowed := range byModel {
			if got := f.check(key, user, model); got != allowed {
				t.Errorf("can_user_access(%q, %s) = %v, want %v", user, model, got, allowed)
			}
		}
	}
	if body := f.must("GET", "/users/ada/access", key, nil).Body; contains(body, theirs) || contains(body, viaGroup) {
		t.Errorf("ada's access lists the other user's resources: %s", body)
	}

	batch := decode[struct {
		Results []struct {
			Allowed bool `json:"allowed"`
		} `json:"results"`
	}](t, f.must("POST", "/provisions/check_batch", key, map[string]any{"checks": []map[string]string{
		{"user_id": ada, "svc_id": theirs}, {"user_id": ada, "svc_id": viaGroup}, {"user_id": longer, "svc_id": theirs},
	}}))
	if got := fmt.Sprint(batch.Results); got != "[{false} {false} {true}]" {
		t.Errorf("check_batch = %s, want [{false} {false} {true}]", got)
	}
}
