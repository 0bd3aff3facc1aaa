package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

type userBody struct {
	ID             string `json:"id"`
	Email          string `json:"email"`
	First          string `json:"first"`
	Last           string `json:"last"`
	ImportedAt     string `json:"imported_at"`
	ModifiedAt     string `json:"modified_at"`
	BaseUserID     string `json:"baseUser_id"`
	SourceMetadata struct {
		Name string `json:"name"`
		ID   string `json:"id"`
	} `json:"source_metadata"`
	ResourceList []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"resource_list"`
}

func TestImportUsers(t *testing.T) {
	f := newFixture(t)
	orgID, key := f.org("acme")
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", key, map[string]string{"name": "Okta"})).AuthIntegration.ID

	imp := func(users ...map[string]string) response {
		return f.do("POST", "/users/import", key, map[string]any{"auth_integration_id": integ, "users": users})
	}
	r := imp(map[string]string{"email": "ada@acme.test", "first": "Ada", "last": "Lovelace"},
		map[string]string{"id": "emp-7", "email": "alan@acme.test", "first": "Alan", "last": "Turing"})
	if r.Status != http.StatusOK {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	users := decode[struct{ Users []userBody }](t, r).Users
	if len(users) != 2 {
		t.Fatalf("users = %+v", users)
	}
	ada, alan := users[0], users[1]
	if !uuidRE.MatchString(ada.ID) || alan.ID != "emp-7" {
		t.Errorf("ids = %q, %q; want a new UUID and the given id", ada.ID, alan.ID)
	}
	first := ada.ImportedAt // the fixture's clock, give or take the milliseconds it moves per write
	if !strings.HasPrefix(first, "2026-11-22T09:30:00.") || !strings.HasSuffix(first, "Z") || alan.ImportedAt != first {
		t.Errorf("imported_at = %q and %q, want the time of the import", first, alan.ImportedAt)
	}
	if ada.Email != "ada@acme.test" || ada.First != "Ada" || ada.Last != "Lovelace" || ada.ImportedAt != first || ada.ModifiedAt != first ||
		ada.BaseUserID != orgID || ada.SourceMetadata.Name != "Okta" || ada.SourceMetadata.ID != integ || ada.ResourceList == nil || len(ada.ResourceList) != 0 {
		t.Errorf("ada = %+v", ada)
	}

	f.clock.Advance(time.Minute)
	// Upsert by email, ignoring case: a name change moves modified_at, not imported_at.
	again := decode[struct{ Users []userBody }](t, f.must("POST", "/users/import", key, map[string]any{
		"auth_integration_id": integ,
		"users": []map[string]string{
			{"email": "ADA@acme.test", "first": "Augusta Ada", "last": "King"},
			{"email": "alan@acme.test", "first": "Alan", "last": "Turing"},
		},
	})).Users
	if again[0].ID != ada.ID || again[0].First != "Augusta Ada" || again[0].ImportedAt != first || again[0].ModifiedAt != "2026-11-22T09:31:00.000Z" {
		t.Errorf("re-imported ada = %+v", again[0])
	}
	if again[1].ModifiedAt != first {
		t.Errorf("unchanged alan's modified_at = %s, want it kept", again[1].ModifiedAt)
	}

	list := decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users
	// Users imported in one call share imported_at and are listed by id.
	if len(list) != 2 || list[0].ID != min(ada.ID, "emp-7") || list[1].ID != max(ada.ID, "emp-7") {
		t.Errorf("list = %+v", list)
	}
	for _, u := range list {
		if u.ID == ada.ID && u.First != "Augusta Ada" {
			t.Errorf("listed ada = %+v", u)
		}
	}

	if r := imp(map[string]string{"id": "other", "email": "alan@acme.test"}); r.Status != http.StatusConflict {
		t.Errorf("changing a user's id = %d %s, want 409", r.Status, r.Body)
	}
	if r := imp(map[string]string{"id": "emp-7", "email": "new@acme.test"}); r.Status != http.StatusConflict {
		t.Errorf("reusing an id for another email = %d %s, want 409", r.Status, r.Body)
	}
	if n := len(decode[struct{ Users []userBody }](t, f.must("GET", "/users/list", key, nil)).Users); n != 2 {
		t.Errorf("after refused imports there are %d users, want 2", n)
	}
	r = f.do("POST", "/users/import", key, map[string]any{"auth_integration_id": "no-such-integration", "users": []map[string]string{{"email": "x@y"}}})
	if r.Status != http.StatusNotFound {
		t.Errorf("import into an unknown integration = %d, want 404", r.Status)
	}
}

func TestImportAtMostTenThousandUsers(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	users := make([]map[string]string, 10_001)
	for i := range users {
		users[i] = map[string]string{"email": "u@x"}
	}
	r := f.do("POST", "/users/import", key, map[string]any{"auth_integration_id": "a", "users": users})
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("status = %d", r.Status)
	}
	jsonEqual(t, r.Body, `{"detail":[{"loc":["body","users"],"msg":"List should have at most 10000 items after validation, not 10001","type":"too_long"}]}`)
}
