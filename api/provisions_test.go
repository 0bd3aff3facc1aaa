package api_test

import (
	"net/http"
	"testing"

	"github.com/grantry/grantry/policy"
)

const unknownID = "00000000-0000-4000-8000-000000000000"

func TestGrantCheckRevoke(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model, other := f.model(key, "gpt-4o"), f.model(key, "claude")
	alice := f.user(key, "alice@acme.test")

	if f.check(key, alice, model) {
		t.Fatal("allowed before any grant")
	}
	for range 2 { // granting twice is the same as once
		jsonEqual(t, f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": alice, "svc_id": model}).Body,
			`{"user_id":"`+alice+`"}`)
	}
	if !f.check(key, alice, model) {
		t.Fatal("denied after the grant")
	}
	if !f.check(key, alice, upper(model)) {
		t.Error("denied for the same id in upper case")
	}
	if f.check(key, alice, other) {
		t.Error("allowed a resource that was not granted")
	}
	users := decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users
	if len(users) != 1 || len(users[0].ResourceList) != 1 || users[0].ResourceList[0].ID != model || users[0].ResourceList[0].Name != "gpt-4o" {
		t.Errorf("resource_list after one grant (twice) = %+v", users[0].ResourceList)
	}

	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": alice, "svc_id": other})
	for range 2 { // revoking twice is the same as once
		r := f.must("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": alice, "svc_id": model})
		jsonEqual(t, r.Body, `{"user_id":"`+alice+`","resources":[{"id":"`+other+`","name":"claude"}]}`)
	}
	if f.check(key, alice, model) {
		t.Error("allowed after the revoke")
	}
	r := f.must("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": alice, "svc_id": unknownID})
	jsonEqual(t, r.Body, `{"user_id":"`+alice+`","resources":[{"id":"`+other+`","name":"claude"}]}`)
}

func TestProvisioningNotFound(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "m")
	alice := f.user(key, "alice@acme.test")
	_, otherKey := f.org("globex")
	theirs, theirModel := f.user(otherKey, "bob@globex.test"), f.model(otherKey, "m")
	tests := []struct {
		name, path, user, svc, detail string
	}{
		{"grant to unknown user", "/provisions/add_to_user", "nobody", model, "User not found."},
		{"grant unknown resource", "/provisions/add_to_user", alice, unknownID, "Resource not found."},
		{"grant unknown resource to unknown user", "/provisions/add_to_user", "nobody", unknownID, "User not found."},
		{"grant to a user of another org", "/provisions/add_to_user", theirs, model, "User not found."},
		{"grant a resource of another org", "/provisions/add_to_user", alice, theirModel, "Resource not found."},
		{"revoke from unknown user", "/provisions/remove_from_user", "nobody", model, "User not found."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", tc.path, key, map[string]string{"user_id": tc.user, "svc_id": tc.svc})
			if r.Status != http.StatusNotFound {
				t.Fatalf("status = %d %s", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":"`+tc.detail+`"}`)
		})
	}
	// The check never says 404: anything unknown is simply false.
	for _, c := range [][2]string{{"nobody", model}, {alice, unknownID}, {"nobody", unknownID}} {
		if f.check(key, c[0], c[1]) {
			t.Errorf("check(%s, %s) = true", c[0], c[1])
		}
	}
}

func TestCanUserAccessAll(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	a, b, c := f.model(key, "a"), f.model(key, "b"), f.model(key, "c")
	alice := f.user(key, "alice@acme.test")
	for _, id := range []string{a, b} {
		f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": alice, "svc_id": id})
	}
	tests := []struct {
		name string
		user string
		tags []string
		want bool
	}{
		{"all granted", alice, []string{a, b}, true},
		{"one granted", alice, []string{b}, true},
		{"repeated", alice, []string{a, a, b}, true},
		{"one not granted", alice, []string{a, c}, false},
		{"one unknown", alice, []string{a, unknownID}, false},
		{"unknown user", "nobody", []string{a}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decode[bool](t, f.must("POST", "/provisions/can_user_access_all", key, map[string]any{"user_id": tc.user, "tags": tc.tags}))
			if got != tc.want {
				t.Errorf("can_user_access_all = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRemovalCascades: removing a resource revokes it from every user first.
func TestRemovalCascades(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "m")
	fn := decode[struct{ Function struct{ ID string } }](t, f.must("POST", "/functions/create", key, map[string]string{"function_name": "f"})).Function.ID
	ds := decode[struct{ Datasets []struct{ ID string } }](t, f.must("POST", "/data_integration/custom", key, map[string]string{"dataset_name": "d"})).Datasets[0].ID
	users := []string{f.user(key, "a@x"), f.user(key, "b@x")}
	for _, u := range users {
		for _, id := range []string{model, fn, ds} {
			f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": u, "svc_id": id})
		}
	}
	f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": model})
	f.must("POST", "/functions/remove", key, map[string]string{"svc_id": fn})
	for _, u := range users {
		if f.check(key, u, model) || f.check(key, u, fn) {
			t.Errorf("%s still allowed a removed resource", u)
		}
		if !f.check(key, u, ds) {
			t.Errorf("%s lost the dataset that was not removed", u)
		}
	}
	for _, u := range decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users {
		if len(u.ResourceList) != 1 || u.ResourceList[0].ID != ds {
			t.Errorf("%s resource_list = %+v, want only the dataset", u.ID, u.ResourceList)
		}
	}
	if r := f.do("POST", "/provisions/add_to_user", key, map[string]string{"user_id": users[0], "svc_id": model}); r.Status != http.StatusNotFound {
		t.Errorf("granting a removed resource = %d, want 404", r.Status)
	}
}

func TestListsForUser(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	m1, m2 := f.model(key, "m1"), f.model(key, "m2")
	fn := decode[struct{ Function struct{ ID string } }](t, f.must("POST", "/functions/create", key, map[string]string{"function_name": "f"})).Function.ID
	ds := decode[struct{ Datasets []struct{ ID string } }](t, f.must("POST", "/data_integration/custom", key, map[string]string{"dataset_name": "d"})).Datasets[0].ID
	alice, bob := f.user(key, "alice@x"), f.user(key, "bob@x")
	for _, id := range []string{m2, fn, ds} {
		f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": alice, "svc_id": id})
	}
	models := decode[struct {
		Models []modelBody `json:"models"`
		Model  *modelBody  `json:"model"`
	}](t, f.must("GET", "/llm_integration/list/?user_id="+alice, key, nil))
	if len(models.Models) != 1 || models.Models[0].ID != m2 || models.Model == nil || models.Model.ID != m2 {
		t.Errorf("alice's models = %+v", models)
	}
	jsonEqual(t, f.must("GET", "/llm_integration/list/?user_id="+bob, key, nil).Body, `{"models":[],"model":null}`)
	if got := decode[struct{ Functions []struct{ ID string } }](t, f.must("GET", "/functions/list/?user_id="+alice, key, nil)).Functions; len(got) != 1 || got[0].ID != fn {
		t.Errorf("alice's functions = %+v", got)
	}
	if got := decode[struct{ Indexes []struct{ ID string } }](t, f.must("GET", "/data_integration/list/?user_id="+alice, key, nil)).Indexes; len(got) != 1 || got[0].ID != ds {
		t.Errorf("alice's datasets = %+v", got)
	}
	if got := decode[struct{ Models []modelBody }](t, f.must("GET", "/llm_integration/list/", key, nil)).Models; len(got) != 2 || got[0].ID != m1 {
		t.Errorf("all models = %+v", got)
	}
	for _, p := range []string{"/llm_integration/list/", "/functions/list/", "/data_integration/list/"} {
		r := f.do("GET", p+"?user_id=nobody", key, nil)
		if r.Status != http.StatusNotFound {
			t.Errorf("%s for an unknown user = %d, want 404", p, r.Status)
		}
	}
}

// erringPolicy cannot be evaluated: every decision is an error (a conversion that fails,
// under OPA's strict built-in errors), which would allow if it did not fail.
var erringPolicy = []policy.Module{{Name: "p.rego", Source: "package grantry.authz\n\nallow if to_number(\"not a number\") != 1\n\nallow_all := allow\n"}}

// TestPolicyErrorDenies: the service fails closed when the policy cannot be evaluated.
func TestPolicyErrorDenies(t *testing.T) {
	engine, err := policy.New(t.Context(), erringPolicy)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, withPolicy(policy.NewLive(engine)))
	_, key := f.org("acme")
	model := f.model(key, "m")
	alice := f.user(key, "alice@x")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": alice, "svc_id": model})
	if f.check(key, alice, model) {
		t.Error("can_user_access = true when the policy failed")
	}
	if decode[bool](t, f.must("POST", "/provisions/can_user_access_all", key, map[string]any{"user_id": alice, "tags": []string{model}})) {
		t.Error("can_user_access_all = true when the policy failed")
	}
	for result, want := range map[string]string{"error": "2", "allow": "0", "deny": "0"} {
		series := `grantry_decisions_total{result="` + result + `"}`
		if got, _ := metricValue(t, f, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}
