package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/internal/scim"
)

// attributeStep is one SCIM request about a user, and the attributes a policy reads of that user
// once it is answered.
type attributeStep struct {
	name, method, body string
	status             int
	want               map[string]string
}

// TestSCIMPolicyAttributes sends the requests with which Microsoft Entra ID and Okta set a
// user's title, userType and Enterprise User attributes, in the shapes their documentation
// shows, through the real router, and reads back from the stored user what a policy will read.
func TestSCIMPolicyAttributes(t *testing.T) {
	const ext = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	tests := []struct {
		name  string
		steps []attributeStep
	}{
		{"Microsoft Entra ID", []attributeStep{
			{
				// "Create User" of Entra's SCIM tutorial, with the attributes its default
				// mapping sends: jobTitle as title, department and employeeId under the extension.
				name: "create with the extension object", method: "POST", status: http.StatusCreated,
				body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","` + ext + `"],
					"externalId":"0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef","userName":"Test_User_1@testuser.com","active":true,
					"emails":[{"primary":true,"type":"work","value":"Test_User_1@testuser.com"}],"meta":{"resourceType":"User"},
					"name":{"formatted":"givenName familyName","familyName":"familyName","givenName":"givenName"},"roles":[],
					"title":"Engineer","userType":"Member",
					"` + ext + `":{"department":"Tour Operations","employeeNumber":"701984","costCenter":"4130","manager":{"value":"m-1"}}}`,
				want: map[string]string{"title": "Engineer", "userType": "Member", "department": "Tour Operations", "employeeNumber": "701984", "costCenter": "4130"},
			},
			{
				name: "add one extension attribute by its URN path", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
					{"op":"Add","path":"` + ext + `:department","value":"Sales"},
					{"op":"Add","path":"` + ext + `:division","value":"EMEA"}]}`,
				want: map[string]string{"title": "Engineer", "userType": "Member", "department": "Sales", "division": "EMEA", "employeeNumber": "701984", "costCenter": "4130"},
			},
			{
				// "Requests to replace multiple attributes" of Entra's SCIM compliance notes,
				// without and then with its compliance flag.
				name: "replace by paths, then by a path-less value of paths", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
					{"op":"Replace","path":"displayName","value":"Pvlo"},
					{"op":"Replace","path":"` + ext + `:employeeNumber","value":"Eqpj"},
					{"op":"replace","value":{"displayName":"Bjfe","name.givenName":"Kkom","title":"Lead","` + ext + `:organization":"Contoso"}}]}`,
				want: map[string]string{"title": "Lead", "userType": "Member", "department": "Sales", "division": "EMEA", "employeeNumber": "Eqpj",
					"costCenter": "4130", "organization": "Contoso"},
			},
			{
				name: "names and the URN in another case", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
					{"op":"Replace","path":"` + strings.ToUpper(ext) + `:DIVISION","value":"APAC"},{"op":"Replace","path":"USERTYPE","value":"Guest"}]}`,
				want: map[string]string{"title": "Lead", "userType": "Guest", "department": "Sales", "division": "APAC", "employeeNumber": "Eqpj",
					"costCenter": "4130", "organization": "Contoso"},
			},
			{
				name: "remove one extension attribute and the title", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
					{"op":"Remove","path":"` + ext + `:department"},{"op":"Remove","path":"title"}]}`,
				want: map[string]string{"userType": "Guest", "division": "APAC", "employeeNumber": "Eqpj", "costCenter": "4130", "organization": "Contoso"},
			},
			{
				name: "disable keeps them", method: "PATCH", status: http.StatusOK,
				body: `{"Operations":[{"op":"Replace","path":"active","value":false}],"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]}`,
				want: map[string]string{"userType": "Guest", "division": "APAC", "employeeNumber": "Eqpj", "costCenter": "4130", "organization": "Contoso"},
			},
			{
				name: "replace the whole user", method: "PUT", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","` + ext + `"],"userName":"Test_User_1@testuser.com","active":true,
					"title":"Director","` + ext + `":{"department":"Finance"}}`,
				want: map[string]string{"title": "Director", "department": "Finance"},
			},
		}},
		{"Microsoft Entra ID, its tutorial's provisioning request with nulls", []attributeStep{
			{
				name: "create with unassigned attributes at the top level", method: "POST", status: http.StatusCreated,
				body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0User"],
					"externalId":"jyoung","userName":"jyoung@testuser.com","active":true,"addresses":null,"displayName":"Joy Young",
					"emails":[{"type":"work","value":"jyoung@Contoso.com","primary":true}],"meta":{"resourceType":"User"},
					"name":{"familyName":"Young","givenName":"Joy"},"phoneNumbers":null,"preferredLanguage":null,
					"title":null,"department":null,"manager":null}`,
				want: map[string]string{},
			},
			{
				name: "add the department by its URN path", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Add","path":"` + ext + `:department","value":"Marketing"}]}`,
				want: map[string]string{"department": "Marketing"},
			},
		}},
		{"Okta", []attributeStep{
			{
				// "Create the User" of Okta's SCIM 2.0 reference, with enterprise attributes
				// mapped to the extension's namespace.
				name: "create with the extension object", method: "POST", status: http.StatusCreated,
				body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","` + ext + `"],"userName":"test.user@okta.local",
					"name":{"givenName":"Test","familyName":"User"},"emails":[{"primary":true,"value":"test.user@okta.local","type":"work"}],
					"displayName":"Test User","locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],"password":"1mz050nq","active":true,
					"title":"Analyst","userType":"Contractor",
					"` + ext + `":{"department":"Engineering","costCenter":"CC-9","organization":"Okta","division":"R&D","employeeNumber":"42"}}`,
				want: map[string]string{"title": "Analyst", "userType": "Contractor", "department": "Engineering", "costCenter": "CC-9",
					"organization": "Okta", "division": "R&D", "employeeNumber": "42"},
			},
			{
				// Okta sends every other update as a PUT of the whole user it read.
				name: "update the whole user", method: "PUT", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","` + ext + `"],"userName":"test.user@okta.local",
					"name":{"givenName":"Test","middleName":"Excited","familyName":"User"},
					"emails":[{"primary":true,"value":"test.user@okta.local","type":"work","display":"test.user@okta.local"}],
					"active":true,"groups":[],"meta":{"resourceType":"User"},"title":"Senior Analyst","userType":"Employee",
					"` + ext + `":{"department":"Engineering","costCenter":"CC-7","organization":"Okta","employeeNumber":"42"}}`,
				want: map[string]string{"title": "Senior Analyst", "userType": "Employee", "department": "Engineering", "costCenter": "CC-7",
					"organization": "Okta", "employeeNumber": "42"},
			},
			{
				name: "replace without a path, the extension object and the title in the value", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{
					"title":"Principal","` + ext + `":{"department":"Research","division":"Labs"}}}]}`,
				want: map[string]string{"title": "Principal", "userType": "Employee", "department": "Research", "division": "Labs",
					"costCenter": "CC-7", "organization": "Okta", "employeeNumber": "42"},
			},
			{
				name: "replace with the extension's URN as the path", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"` + ext + `",
					"value":{"costCenter":"CC-8"}}]}`,
				want: map[string]string{"title": "Principal", "userType": "Employee", "department": "Research", "division": "Labs",
					"costCenter": "CC-8", "organization": "Okta", "employeeNumber": "42"},
			},
			{
				name: "remove one extension attribute", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"remove","path":"` + ext + `:costCenter"}]}`,
				want: map[string]string{"title": "Principal", "userType": "Employee", "department": "Research", "division": "Labs",
					"organization": "Okta", "employeeNumber": "42"},
			},
			{
				name: "deactivate keeps them", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`,
				want: map[string]string{"title": "Principal", "userType": "Employee", "department": "Research", "division": "Labs",
					"organization": "Okta", "employeeNumber": "42"},
			},
			{
				name: "remove the whole extension", method: "PATCH", status: http.StatusOK,
				body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"remove","path":"` + ext + `"}]}`,
				want: map[string]string{"title": "Principal", "userType": "Employee"},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			orgID, key := f.org("acme")
			_, token := f.scimIntegration(key, "idp")
			id := ""
			for _, step := range tt.steps {
				path := "/scim/v2/Users"
				if step.method != "POST" {
					path += "/" + id
				}
				r := f.scimDo(step.method, path, token, step.body)
				if r.Status != step.status {
					t.Fatalf("%s: %s %s = %d %s, want %d", step.name, step.method, path, r.Status, r.Body, step.status)
				}
				if step.method == "POST" {
					id = decode[struct{ ID string }](t, r).ID
				}
				u, err := f.store.GetUser(t.Context(), orgID, id)
				if err != nil {
					t.Fatal(err)
				}
				got, err := scim.PolicyAttributes(u.Attributes)
				if err != nil {
					t.Fatalf("%s: PolicyAttributes(%s): %v", step.name, u.Attributes, err)
				}
				if d := cmp.Diff(step.want, got); d != "" {
					t.Errorf("%s: the policy's attributes (-want +got):\n%s\nstored: %s", step.name, d, u.Attributes)
				}
				if strings.Contains(string(u.Attributes), "1mz050nq") {
					t.Errorf("%s: the password is stored: %s", step.name, u.Attributes)
				}
			}
		})
	}
}
