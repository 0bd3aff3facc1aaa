package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/internal/scim"
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

// TestImportUserAttributes: an import's attributes are stored as an object of strings that a
// present "attributes" replaces (even with {}) and an absent or null one keeps; the User the
// import answers with is the same shape either way.
func TestImportUserAttributes(t *testing.T) {
	f := newFixture(t)
	orgID, key := f.org("acme")
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", key, map[string]string{"name": "hr"})).AuthIntegration.ID
	stored := func(id string) map[string]string {
		t.Helper()
		u, err := f.store.GetUser(t.Context(), orgID, id)
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := scim.ImportedAttributes(u.Attributes)
		if err != nil {
			t.Fatalf("ImportedAttributes(%s): %v", u.Attributes, err)
		}
		return attrs
	}
	steps := []struct {
		name         string
		user         string // the one user of the import, as JSON
		want         map[string]string
		wantModified bool
	}{
		{"first import", `{"id":"ada","email":"ada@acme.test","first":"Ada","attributes":{"department":"Engines","title":"Analyst","clearance level":"ünclassified"}}`,
			map[string]string{"department": "Engines", "title": "Analyst", "clearance level": "ünclassified"}, true},
		{"absent keeps them", `{"email":"ada@acme.test","first":"Ada"}`,
			map[string]string{"department": "Engines", "title": "Analyst", "clearance level": "ünclassified"}, false},
		{"null keeps them", `{"email":"ada@acme.test","first":"Ada","attributes":null}`,
			map[string]string{"department": "Engines", "title": "Analyst", "clearance level": "ünclassified"}, false},
		{"the same, in another order", `{"email":"ada@acme.test","first":"Ada","attributes":{"title":"Analyst","clearance level":"ünclassified","department":"Engines"}}`,
			map[string]string{"department": "Engines", "title": "Analyst", "clearance level": "ünclassified"}, false},
		{"replaced whole", `{"email":"ada@acme.test","first":"Ada","attributes":{"department":"Looms"}}`,
			map[string]string{"department": "Looms"}, true},
		{"empty removes them", `{"email":"ada@acme.test","first":"Ada","attributes":{}}`, map[string]string{}, true},
		{"empty again changes nothing", `{"email":"ada@acme.test","first":"Ada","attributes":{}}`, map[string]string{}, false},
	}
	modified := ""
	for _, step := range steps {
		f.clock.Advance(time.Minute)
		r := f.must("POST", "/users/import", key, `{"auth_integration_id":"`+integ+`","users":[`+step.user+`]}`)
		if strings.Contains(string(r.Body), "attributes") {
			t.Errorf("%s: the answer shows the attributes: %s", step.name, r.Body)
		}
		u := decode[struct{ Users []userBody }](t, r).Users[0]
		if moved := u.ModifiedAt != modified; moved != step.wantModified {
			t.Errorf("%s: modified_at %s after %s, want it moved: %v", step.name, u.ModifiedAt, modified, step.wantModified)
		}
		modified = u.ModifiedAt
		if d := cmp.Diff(step.want, stored("ada")); d != "" {
			t.Errorf("%s: stored attributes (-want +got):\n%s", step.name, d)
		}
	}

	t.Run("at the limits", func(t *testing.T) {
		attrs := map[string]string{strings.Repeat("k", 128): strings.Repeat("é", 1024)}
		for i := len(attrs); i < 64; i++ {
			attrs[fmt.Sprintf("key-%02d", i)] = ""
		}
		f.must("POST", "/users/import", key, map[string]any{"auth_integration_id": integ,
			"users": []map[string]any{{"id": "max", "email": "max@acme.test", "attributes": attrs}}})
		if d := cmp.Diff(attrs, stored("max")); d != "" {
			t.Errorf("stored attributes (-want +got):\n%s", d)
		}
	})

	t.Run("not for a SCIM integration's users", func(t *testing.T) {
		scimInteg, token := f.scimIntegration(key, "okta")
		id := f.scimUser(token, "grace@acme.test")
		before, err := f.store.GetUser(t.Context(), orgID, id)
		if err != nil {
			t.Fatal(err)
		}
		r := f.do("POST", "/users/import", key, `{"auth_integration_id":"`+scimInteg+`","users":[{"email":"grace@acme.test","attributes":{}}]}`)
		if r.Status != http.StatusConflict {
			t.Fatalf("import with attributes into a SCIM integration = %d %s, want 409", r.Status, r.Body)
		}
		jsonEqual(t, r.Body, `{"detail":"The users of a SCIM integration take their attributes from their identity provider; import them without attributes."}`)
		after, err := f.store.GetUser(t.Context(), orgID, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before, after); d != "" {
			t.Errorf("the SCIM user after a refused import (-before +after):\n%s", d)
		}
		f.must("POST", "/users/import", key, `{"auth_integration_id":"`+scimInteg+`","users":[{"email":"grace@acme.test","first":"Grace"}]}`)
	})
}

// TestImportUserAttributeProblems: each way "attributes" can be wrong is a 422 at the place it is
// wrong, as pydantic reports a dict[str, str] with constrained keys and values.
func TestImportUserAttributeProblems(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	tooMany := map[string]string{}
	for i := range 65 {
		tooMany[fmt.Sprintf("k%02d", i)] = "v"
	}
	many, err := json.Marshal(tooMany)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, attrs, want string
	}{
		{"a string", `"Engines"`, `[{"loc":["body","users",0,"attributes"],"msg":"Input should be a valid dictionary","type":"dict_type"}]`},
		{"a list", `["Engines"]`, `[{"loc":["body","users",0,"attributes"],"msg":"Input should be a valid dictionary","type":"dict_type"}]`},
		{"a number value", `{"level":7}`, `[{"loc":["body","users",0,"attributes","level"],"msg":"Input should be a valid string","type":"string_type"}]`},
		{"a null value", `{"level":null}`, `[{"loc":["body","users",0,"attributes","level"],"msg":"Input should be a valid string","type":"string_type"}]`},
		{"an object value", `{"level":{"a":"b"}}`, `[{"loc":["body","users",0,"attributes","level"],"msg":"Input should be a valid string","type":"string_type"}]`},
		{"65 keys", string(many), `[{"loc":["body","users",0,"attributes"],"msg":"Dictionary should have at most 64 items after validation, not 65","type":"too_long"}]`},
		{"an empty key", `{"":"x"}`, `[{"loc":["body","users",0,"attributes","","[key]"],"msg":"String should have at least 1 character","type":"string_too_short"}]`},
		{"a key of 129 characters", `{"` + strings.Repeat("é", 129) + `":"x"}`,
			`[{"loc":["body","users",0,"attributes","` + strings.Repeat("é", 129) + `","[key]"],"msg":"String should have at most 128 characters","type":"string_too_long"}]`},
		{"a value of 1025 characters", `{"k":"` + strings.Repeat("é", 1025) + `"}`,
			`[{"loc":["body","users",0,"attributes","k"],"msg":"String should have at most 1024 characters","type":"string_too_long"}]`},
		{"keys that look like paths are keys", `{"a.b[0]":1}`, `[{"loc":["body","users",0,"attributes","a.b[0]"],"msg":"Input should be a valid string","type":"string_type"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do("POST", "/users/import", key, `{"auth_integration_id":"a","users":[{"email":"a@x","attributes":`+tt.attrs+`}]}`)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":`+tt.want+`}`)
		})
	}
}
