package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestOrganizationsAreIsolated: nothing of one organization is visible to, changeable by, or
// grantable from another; an id of the other behaves exactly like an id that does not exist.
func TestOrganizationsAreIsolated(t *testing.T) {
	f := newFixture(t)
	_, keyA := f.org("a")
	_, keyB := f.org("b")

	modelA := f.model(keyA, "shared-name")
	fnA := decode[struct{ Function struct{ ID string } }](t, f.must("POST", "/functions/create", keyA, map[string]string{"function_name": "fa"})).Function.ID
	dsA := decode[struct{ Datasets []struct{ ID string } }](t, f.must("POST", "/data_integration/custom", keyA, map[string]string{"dataset_name": "da"})).Datasets[0].ID
	integA := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", keyA, map[string]string{"name": "okta"})).AuthIntegration.ID
	userA := decode[struct{ Users []struct{ ID string } }](t, f.must("POST", "/users/import", keyA, map[string]any{
		"auth_integration_id": integA, "users": []map[string]string{{"id": "same-id", "email": "a@a"}},
	})).Users[0].ID
	f.must("POST", "/provisions/add_to_user", keyA, map[string]string{"user_id": userA, "svc_id": modelA})

	// B may use the same names and user ids without conflict.
	modelB := f.model(keyB, "shared-name")
	f.must("POST", "/auth_integration/create", keyB, map[string]string{"name": "okta"})
	userB := f.user(keyB, "b@b")

	t.Run("lists show nothing of the other", func(t *testing.T) {
		for _, p := range []string{"/llm_integration/list/", "/functions/list/", "/data_integration/list/", "/users/list", "/auth_integration/list"} {
			body := string(f.must("GET", p, keyB, nil).Body)
			for _, id := range []string{modelA, fnA, dsA, integA, "a@a"} {
				if strings.Contains(body, id) {
					t.Errorf("%s for B shows %s of A: %s", p, id, body)
				}
			}
		}
	})
	t.Run("ids of the other are not found", func(t *testing.T) {
		tests := []struct {
			path string
			body map[string]any
		}{
			{"/llm_integration/remove", map[string]any{"svc_id": modelA}},
			{"/functions/remove", map[string]any{"svc_id": fnA}},
			{"/data_integration/remove", map[string]any{"svc_id": dsA}},
			{"/provisions/add_to_user", map[string]any{"user_id": userB, "svc_id": modelA}},
			{"/provisions/add_to_user", map[string]any{"user_id": userA, "svc_id": modelB}},
			{"/provisions/remove_from_user", map[string]any{"user_id": userA, "svc_id": modelA}},
			{"/users/import", map[string]any{"auth_integration_id": integA, "users": []map[string]string{{"email": "x@x"}}}},
		}
		for _, tc := range tests {
			if r := f.do("POST", tc.path, keyB, tc.body); r.Status != http.StatusNotFound {
				t.Errorf("B: POST %s %v = %d %s, want 404", tc.path, tc.body, r.Status, r.Body)
			}
		}
		for _, p := range []string{"/llm_integration/list/", "/functions/list/", "/data_integration/list/"} {
			if r := f.do("GET", p+"?user_id="+userA, keyB, nil); r.Status != http.StatusNotFound {
				t.Errorf("B: GET %s?user_id=<A's user> = %d, want 404", p, r.Status)
			}
		}
	})
	t.Run("checks never cross", func(t *testing.T) {
		if f.check(keyB, userA, modelA) {
			t.Error("B's key saw A's grant")
		}
		if !decode[bool](t, f.must("POST", "/provisions/can_user_access_all", keyA, map[string]any{"user_id": userA, "tags": []string{modelA}})) {
			t.Error("A lost its own grant")
		}
		if decode[bool](t, f.must("POST", "/provisions/can_user_access_all", keyB, map[string]any{"user_id": userA, "tags": []string{modelA}})) {
			t.Error("B's key saw A's grant through can_user_access_all")
		}
	})
	t.Run("nothing of A changed", func(t *testing.T) {
		if !f.check(keyA, userA, modelA) {
			t.Error("A's grant is gone")
		}
		for _, p := range []string{"/llm_integration/list/", "/functions/list/", "/data_integration/list/"} {
			body := string(f.must("GET", p, keyA, nil).Body)
			if !strings.Contains(body, modelA) && !strings.Contains(body, fnA) && !strings.Contains(body, dsA) {
				t.Errorf("%s for A lost its resource: %s", p, body)
			}
		}
	})
}
