package api_test

import (
	"net/http"
	"slices"
	"testing"
)

// groupBody is the group of the group calls' answers.
type groupBody struct {
	Group struct {
		ID                string  `json:"id"`
		Name              string  `json:"name"`
		AuthIntegrationID *string `json:"auth_integration_id"`
		Members           []string
		ResourceList      []struct {
			ID        string  `json:"id"`
			Name      string  `json:"name"`
			ExpiresAt *string `json:"expires_at"`
		} `json:"resource_list"`
	}
}

// group makes a plain group and returns its id.
func (f *fixture) group(key, name string) string {
	f.tb.Helper()
	return decode[groupBody](f.tb, f.must("POST", "/groups/create", key, map[string]string{"name": name})).Group.ID
}

func (f *fixture) addMember(key, group, user string) {
	f.tb.Helper()
	f.must("POST", "/groups/add_member", key, map[string]string{"group_id": group, "user_id": user})
}

func (f *fixture) grantGroup(key, group, svcID string) {
	f.tb.Helper()
	f.must("POST", "/provisions/add_to_group", key, map[string]string{"group_id": group, "svc_id": svcID})
}

// TestGroupChangesReachTheNextCheck: joining or leaving a group, granting to or revoking from
// it, and deleting it or its resource, each change the very next check.
func TestGroupChangesReachTheNextCheck(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	other := f.model(key, "llama")
	ada, bob := f.user(key, "ada@acme.test"), f.user(key, "bob@acme.test")
	eng := f.group(key, "Engineering")

	steps := []struct {
		name     string
		do       func()
		ada, bob bool // what the check of model answers afterwards
	}{
		{"a group grant alone allows no one", func() { f.grantGroup(key, eng, model) }, false, false},
		{"joining the group allows", func() { f.addMember(key, eng, ada) }, true, false},
		{"joining again changes nothing", func() { f.addMember(key, eng, ada) }, true, false},
		{"a second member", func() { f.addMember(key, eng, bob) }, true, true},
		{"leaving the group denies", func() {
			f.must("POST", "/groups/remove_member", key, map[string]string{"group_id": eng, "user_id": bob})
		}, true, false},
		{"revoking from the group denies", func() {
			f.must("POST", "/provisions/remove_from_group", key, map[string]string{"group_id": eng, "svc_id": model})
		}, false, false},
		{"granting again allows", func() { f.grantGroup(key, eng, model) }, true, false},
		{"a direct grant and a group grant together", func() {
			f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": bob, "svc_id": model})
		}, true, true},
		{"deleting the group takes its grants", func() {
			f.must("POST", "/groups/remove", key, map[string]string{"group_id": eng})
		}, false, true},
	}
	for _, st := range steps {
		st.do()
		if got := f.check(key, ada, model); got != st.ada {
			t.Errorf("after %s: ada may use the model = %v, want %v", st.name, got, st.ada)
		}
		if got := f.check(key, bob, model); got != st.bob {
			t.Errorf("after %s: bob may use the model = %v, want %v", st.name, got, st.bob)
		}
		if f.check(key, ada, other) {
			t.Errorf("after %s: ada may use a model granted to nobody", st.name)
		}
	}

	// A group's grant on a resource that is removed goes with the resource.
	ops := f.group(key, "Ops")
	f.addMember(key, ops, ada)
	f.grantGroup(key, ops, other)
	if !f.check(key, ada, other) {
		t.Fatal("ada cannot use what her group was granted")
	}
	f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": other})
	list := decode[struct {
		Groups []struct {
			ID           string
			ResourceList []struct{ ID string } `json:"resource_list"`
		}
	}](t, f.must("GET", "/groups/list", key, nil))
	for _, g := range list.Groups {
		if g.ID == ops && len(g.ResourceList) != 0 {
			t.Errorf("group Ops still holds %v after its resource was removed", g.ResourceList)
		}
	}
}

func TestPlainGroups(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	ada := f.user(key, "ada@acme.test")
	// A plain group takes users of any of the organization's integrations.
	bob := f.user(key, "bob@acme.test")

	created := decode[groupBody](t, f.must("POST", "/groups/create", key, map[string]string{"name": "Engineering"}))
	if created.Group.ID == "" || created.Group.Name != "Engineering" || created.Group.AuthIntegrationID != nil || len(created.Group.Members) != 0 {
		t.Fatalf("created group = %+v, want a plain group without members", created.Group)
	}
	eng := created.Group.ID
	f.addMember(key, eng, bob)
	f.addMember(key, eng, ada)
	f.must("POST", "/provisions/add_to_group", key, map[string]any{"group_id": eng, "svc_id": model, "expires_at": "2027-01-01T00:00:00Z"})
	listed := decode[struct{ Groups []map[string]any }](t, f.must("GET", "/groups/list", key, nil))
	if len(listed.Groups) != 1 {
		t.Fatalf("groups = %v, want one", listed.Groups)
	}
	// The times come from the server's clock, which moves a millisecond with every change.
	for _, k := range []string{"created_at", "modified_at"} {
		if ts, _ := listed.Groups[0][k].(string); len(ts) != len("2026-11-22T09:30:00.000Z") {
			t.Errorf("%s = %v, want a timestamp", k, listed.Groups[0][k])
		}
		delete(listed.Groups[0], k)
	}
	jsonEqual(t, []byte(show(listed.Groups[0])), `{"id":"`+eng+`","name":"Engineering","auth_integration_id":null,
		"members":["`+bob+`","`+ada+`"],"resource_list":[{"id":"`+model+`","name":"gpt","expires_at":"2027-01-01T00:00:00.000Z"}]}`)
	if r := f.must("GET", "/groups/list/", key, nil); !contains(r.Body, eng) {
		t.Errorf("GET /groups/list/ = %s, want the group", r.Body)
	}
	jsonEqual(t, f.must("POST", "/provisions/remove_from_group", key, map[string]string{"group_id": eng, "svc_id": model}).Body,
		`{"group_id":"`+eng+`","resources":[]}`)

	tests := []struct {
		name   string
		path   string
		body   map[string]string
		status int
		detail string
	}{
		{"name taken, in another case", "/groups/create", map[string]string{"name": "ENGINEERING"}, 409, "A group with this name already exists."},
		{"unknown group", "/groups/add_member", map[string]string{"group_id": "nope", "user_id": ada}, 404, "Group not found."},
		{"unknown user", "/groups/add_member", map[string]string{"group_id": eng, "user_id": "nobody"}, 404, "User not found."},
		{"remove unknown user", "/groups/remove_member", map[string]string{"group_id": eng, "user_id": "nobody"}, 404, "User not found."},
		{"remove from unknown group", "/groups/remove_member", map[string]string{"group_id": "nope", "user_id": ada}, 404, "Group not found."},
		{"delete unknown group", "/groups/remove", map[string]string{"group_id": "nope"}, 404, "Group not found."},
		{"grant to unknown group", "/provisions/add_to_group", map[string]string{"group_id": "nope", "svc_id": model}, 404, "Group not found."},
		{"grant unknown resource", "/provisions/add_to_group", map[string]string{"group_id": eng, "svc_id": "00000000-0000-4000-8000-000000000000"}, 404, "Resource not found."},
		{"grant unknown resource to unknown group", "/provisions/add_to_group", map[string]string{"group_id": "nope", "svc_id": "00000000-0000-4000-8000-000000000000"}, 404, "Group not found."},
		{"revoke from unknown group", "/provisions/remove_from_group", map[string]string{"group_id": "nope", "svc_id": model}, 404, "Group not found."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", tc.path, key, tc.body)
			if r.Status != tc.status {
				t.Fatalf("POST %s %v = %d %s, want %d", tc.path, tc.body, r.Status, r.Body, tc.status)
			}
			jsonEqual(t, r.Body, `{"detail":"`+tc.detail+`"}`)
		})
	}

	// Leaving is idempotent; so is revoking what is not granted.
	f.must("POST", "/groups/remove_member", key, map[string]string{"group_id": eng, "user_id": bob})
	left := decode[groupBody](t, f.must("POST", "/groups/remove_member", key, map[string]string{"group_id": eng, "user_id": bob}))
	if !slices.Equal(left.Group.Members, []string{ada}) {
		t.Errorf("members after bob left twice = %v, want [%s]", left.Group.Members, ada)
	}
	f.must("POST", "/provisions/remove_from_group", key, map[string]string{"group_id": eng, "svc_id": model})

	jsonEqual(t, f.must("POST", "/groups/remove", key, map[string]string{"group_id": eng}).Body, `{"message":"Group deleted successfully"}`)
	jsonEqual(t, f.must("GET", "/groups/list", key, nil).Body, `{"groups":[]}`)
	// The name is free again.
	f.group(key, "Engineering")
}

// TestSCIMGroups: a group an identity provider manages can be granted resources through this
// API, but its members and its existence are the provider's: 409 here.
func TestSCIMGroupsAreGrantableButTheirs(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "gpt")
	integ, token := f.scimIntegration(key, "okta")
	cat := f.scimUser(token, "cat@acme.test")
	dan := f.user(key, "dan@acme.test")
	r := f.scimDo("POST", "/scim/v2/Groups", token, `{"displayName":"Engineering","members":[{"value":"`+cat+`"}]}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("create SCIM group = %d %s", r.Status, r.Body)
	}
	eng := decode[struct{ ID string }](t, r).ID

	f.grantGroup(key, eng, model)
	if !f.check(key, cat, model) {
		t.Error("a member of a SCIM group cannot use what the group was granted")
	}
	for _, tc := range []struct {
		path string
		body map[string]string
	}{
		{"/groups/add_member", map[string]string{"group_id": eng, "user_id": dan}},
		{"/groups/remove_member", map[string]string{"group_id": eng, "user_id": cat}},
		{"/groups/remove", map[string]string{"group_id": eng}},
	} {
		r := f.do("POST", tc.path, key, tc.body)
		if r.Status != http.StatusConflict {
			t.Errorf("POST %s on a SCIM group = %d %s, want 409", tc.path, r.Status, r.Body)
		}
		jsonEqual(t, r.Body, `{"detail":"This group is managed by its identity provider through SCIM; change it there."}`)
	}
	list := decode[struct {
		Groups []struct {
			ID                string
			AuthIntegrationID *string `json:"auth_integration_id"`
			Members           []string
		}
	}](t, f.must("GET", "/groups/list", key, nil))
	if len(list.Groups) != 1 || list.Groups[0].AuthIntegrationID == nil || *list.Groups[0].AuthIntegrationID != integ ||
		!slices.Equal(list.Groups[0].Members, []string{cat}) {
		t.Errorf("groups = %+v, want the SCIM group of %s with cat", list.Groups, integ)
	}

	// The provider removing the member, or the group, ends the access at once.
	f.scimDo("PATCH", "/scim/v2/Groups/"+eng, token, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"remove","path":"members[value eq \"`+cat+`\"]"}]}`)
	if f.check(key, cat, model) {
		t.Error("cat still may use the model after the provider took cat out of the group")
	}
	f.scimDo("PATCH", "/scim/v2/Groups/"+eng, token, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"add","path":"members","value":[{"value":"`+cat+`"}]}]}`)
	if !f.check(key, cat, model) {
		t.Fatal("cat back in the group cannot use the model")
	}
	// A rename reaches the members' explanations, however often they were asked before, as
	// the one thing of the group besides its members that the policy reads.
	for range 3 {
		f.explainReasons(key, cat, model)
	}
	if r := f.scimDo("PATCH", "/scim/v2/Groups/"+eng, token, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations":[{"op":"replace","path":"displayName","value":"Platform"}]}`); r.Status != http.StatusNoContent {
		t.Fatalf("rename SCIM group = %d %s", r.Status, r.Body)
	}
	if got := f.explainReasons(key, cat, model); !slices.Equal(got, []string{"granted", "granted via group Platform"}) {
		t.Errorf("explain after the rename = %q, want granted via group Platform", got)
	}
	if r := f.scimDo("DELETE", "/scim/v2/Groups/"+eng, token, ""); r.Status != http.StatusNoContent {
		t.Fatalf("delete SCIM group = %d %s", r.Status, r.Body)
	}
	if f.check(key, cat, model) {
		t.Error("cat still may use the model after the provider deleted the group")
	}
}
