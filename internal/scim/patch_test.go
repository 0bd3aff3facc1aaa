package scim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// patch parses body as a PATCH request and applies it to a copy of the JSON object before.
func patch(tb testing.TB, rt *ResourceType, before, body string) (map[string]any, error) {
	tb.Helper()
	ops, err := ParsePatch([]byte(body))
	if err != nil {
		return nil, err
	}
	doc := decodeDoc(tb, before)
	return doc, Apply(rt, doc, ops)
}

func TestApplyUser(t *testing.T) {
	const before = `{
		"userName": "ada@example.com",
		"name": {"givenName": "Ada", "familyName": "Lovelace"},
		"active": true,
		"emails": [{"value": "ada@example.com", "type": "work", "primary": true}]
	}`
	tests := []struct {
		name string
		body string
		want string
	}{
		{
			name: "Okta deactivates with a path-less value object",
			body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":false,"emails":[{"value":"ada@example.com","type":"work","primary":true}]}`,
		},
		{
			name: "Okta sends the id along, which is read-only and ignored",
			body: `{"Operations":[{"op":"replace","value":{"id":"other","active":true,"name":{"givenName":"Augusta"}}}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Augusta","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}]}`,
		},
		{
			name: "Entra ID deactivates with a capitalised op and a string boolean",
			body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Replace","path":"active","value":"False"}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":false,"emails":[{"value":"ada@example.com","type":"work","primary":true}]}`,
		},
		{
			name: "Entra ID replaces several attributes at once",
			body: `{"Operations":[
				{"op":"Replace","path":"name.givenName","value":"Augusta"},
				{"op":"Replace","path":"emails[type eq \"work\"].value","value":"augusta@example.com"},
				{"op":"Replace","path":"userName","value":"augusta@example.com"},
				{"op":"Add","path":"externalId","value":"e-1"},
				{"op":"Replace","path":"displayName","value":"Augusta Ada King"}
			]}`,
			want: `{"userName":"augusta@example.com","name":{"givenName":"Augusta","familyName":"Lovelace"},"active":true,
				"emails":[{"value":"augusta@example.com","type":"work","primary":true}],"externalId":"e-1","displayName":"Augusta Ada King"}`,
		},
		{
			name: "a filtered path that matches nothing makes the value",
			body: `{"Operations":[{"op":"Add","path":"phoneNumbers[type eq \"mobile\"].value","value":"+1 555 0100"},
				{"op":"Replace","path":"addresses[type eq \"work\"].locality","value":"London"}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,
				"emails":[{"value":"ada@example.com","type":"work","primary":true}],
				"phoneNumbers":[{"type":"mobile","value":"+1 555 0100"}],"addresses":[{"type":"work","locality":"London"}]}`,
		},
		{
			name: "path-less value whose keys are paths, as older Entra ID sends",
			body: `{"Operations":[{"op":"Replace","value":{"name.familyName":"King","emails[type eq \"work\"].value":"k@example.com","unknownThing":"x"}}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"King"},"active":true,"emails":[{"value":"k@example.com","type":"work","primary":true}]}`,
		},
		{
			name: "enterprise extension by URN path, with the manager as a plain id",
			body: `{"Operations":[
				{"op":"Add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department","value":"Engines"},
				{"op":"Replace","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager","value":"m-1"}
			]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}],
				"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Engines","manager":{"value":"m-1"}}}`,
		},
		{
			name: "Entra ID adds the manager without the extension's URN, as a list of one with its $ref",
			body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Add","path":"manager",
				"value":[{"$ref":"https://grantry.example/scim/v2/Users/m-1","value":"m-1"}]}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}],
				"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":{"value":"m-1","$ref":"https://grantry.example/scim/v2/Users/m-1"}}}`,
		},
		{
			name: "the manager as an object, then another manager as a string, which drops the old $ref",
			body: `{"Operations":[{"op":"Add","path":"manager","value":{"value":"m-1","$ref":"https://x/Users/m-1"}},
				{"op":"Add","path":"manager","value":"m-2"},{"op":"Replace","path":"department","value":"Engines"}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}],
				"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":{"value":"m-2"},"department":"Engines"}}`,
		},
		{
			name: "the manager removed without the extension's URN",
			body: `{"Operations":[{"op":"Add","path":"manager","value":"m-1"},{"op":"Remove","path":"manager"}]}`,
			want: before,
		},
		{
			name: "enterprise extension as a path-less object",
			body: `{"Operations":[{"op":"add","value":{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"employeeNumber":"42"}}}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}],
				"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"employeeNumber":"42"}}`,
		},
		{
			name: "remove a sub-attribute, a filtered value, and an absent attribute",
			body: `{"Operations":[{"op":"remove","path":"name.givenName"},{"op":"remove","path":"emails[type eq \"work\"]"},{"op":"remove","path":"title"}]}`,
			want: `{"userName":"ada@example.com","name":{"familyName":"Lovelace"},"active":true}`,
		},
		{
			name: "add to a multi-valued attribute appends, once, and keeps one primary",
			body: `{"Operations":[{"op":"add","path":"emails","value":[{"value":"a@home.example","type":"home","primary":true},{"value":"ada@example.com","type":"work","primary":true}]}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},"active":true,
				"emails":[{"value":"ada@example.com","type":"work","primary":false},{"value":"a@home.example","type":"home","primary":true}]}`,
		},
		{
			name: "replace with null unassigns",
			body: `{"Operations":[{"op":"replace","path":"name","value":null},{"op":"replace","value":{"emails":null}}]}`,
			want: `{"userName":"ada@example.com","active":true}`,
		},
		{
			name: "attribute names in any case take the schema's case",
			body: `{"Operations":[{"op":"replace","path":"NAME.GIVENNAME","value":"A"},{"op":"replace","value":{"DisplayName":"D"}}]}`,
			want: `{"userName":"ada@example.com","name":{"givenName":"A","familyName":"Lovelace"},"active":true,"emails":[{"value":"ada@example.com","type":"work","primary":true}],"displayName":"D"}`,
		},
		{
			name: "the password and read-only attributes are dropped",
			body: `{"Operations":[{"op":"replace","value":{"password":"hunter2","meta":{"version":"x"},"groups":[{"value":"g"}]}}]}`,
			want: before,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := patch(t, User, before, tt.body)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if d := cmp.Diff(decodeDoc(t, tt.want), got); d != "" {
				t.Errorf("after patch (-want +got):\n%s", d)
			}
		})
	}
}

func TestApplyGroupMembers(t *testing.T) {
	const before = `{"displayName":"Engineers","members":[{"value":"u1"},{"value":"u2"}]}`
	tests := []struct {
		name, body, want string
	}{
		{
			name: "Entra ID adds members",
			body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Add","path":"members","value":[{"value":"u3"},{"value":"u1"}]}]}`,
			want: `{"displayName":"Engineers","members":[{"value":"u1"},{"value":"u2"},{"value":"u3"}]}`,
		},
		{
			name: "Entra ID removes members by value list",
			body: `{"Operations":[{"op":"Remove","path":"members","value":[{"value":"u1"},{"value":"u9"}]}]}`,
			want: `{"displayName":"Engineers","members":[{"value":"u2"}]}`,
		},
		{
			name: "Okta removes a member by value filter",
			body: `{"Operations":[{"op":"remove","path":"members[value eq \"u2\"]"}]}`,
			want: `{"displayName":"Engineers","members":[{"value":"u1"}]}`,
		},
		{
			name: "Okta adds members with their display names, which are kept",
			body: `{"Operations":[{"op":"add","path":"members","value":[{"value":"u4","display":"dee@example.com"}]}]}`,
			want: `{"displayName":"Engineers","members":[{"value":"u1"},{"value":"u2"},{"value":"u4","display":"dee@example.com"}]}`,
		},
		{
			name: "Okta replaces the members and renames with a path-less value",
			body: `{"Operations":[{"op":"replace","path":"members","value":[{"value":"u5"}]},{"op":"replace","value":{"id":"g1","displayName":"Eng"}}]}`,
			want: `{"displayName":"Eng","members":[{"value":"u5"}]}`,
		},
		{
			name: "removing every member removes the attribute",
			body: `{"Operations":[{"op":"remove","path":"members"}]}`,
			want: `{"displayName":"Engineers"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := patch(t, Group, before, tt.body)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if d := cmp.Diff(decodeDoc(t, tt.want), got); d != "" {
				t.Errorf("after patch (-want +got):\n%s", d)
			}
		})
	}
}

func TestPatchErrors(t *testing.T) {
	tests := []struct {
		name, body, scimType string
	}{
		{"not JSON", `{"Operations":`, InvalidSyntax},
		{"not an object", `[1]`, InvalidSyntax},
		{"two values", `{} {}`, InvalidSyntax},
		{"no operations", `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"]}`, InvalidSyntax},
		{"empty operations", `{"Operations":[]}`, InvalidSyntax},
		{"operation not an object", `{"Operations":["replace"]}`, InvalidSyntax},
		{"unknown op", `{"Operations":[{"op":"merge","path":"active","value":false}]}`, InvalidSyntax},
		{"remove without path", `{"Operations":[{"op":"remove"}]}`, NoTarget},
		{"path-less replace of a scalar", `{"Operations":[{"op":"replace","value":false}]}`, InvalidValue},
		{"path not a string", `{"Operations":[{"op":"replace","path":7,"value":false}]}`, InvalidPath},
		{"bad path", `{"Operations":[{"op":"replace","path":"emails[type eq","value":"x"}]}`, InvalidPath},
		{"bad path after filter", `{"Operations":[{"op":"replace","path":"emails[type eq \"work\"]value","value":"x"}]}`, InvalidPath},
		{"boolean not a boolean", `{"Operations":[{"op":"replace","path":"active","value":"maybe"}]}`, InvalidValue},
		{"string not a string", `{"Operations":[{"op":"replace","path":"userName","value":7}]}`, InvalidValue},
		{"complex not an object", `{"Operations":[{"op":"replace","path":"name","value":[1]}]}`, InvalidValue},
		{"too many operations", `{"Operations":[` + strings.Repeat(`{"op":"add","path":"title","value":"x"},`, MaxPatchOperations) + `{"op":"remove","path":"title"}]}`, InvalidValue},
		{"single-valued given a list of two", `{"Operations":[{"op":"Add","path":"manager","value":[{"value":"a"},{"value":"b"}]}]}`, InvalidValue},
		{"filter on a single-valued attribute", `{"Operations":[{"op":"replace","path":"name[givenName eq \"x\"].familyName","value":"y"}]}`, InvalidPath},
		{"filter matching nothing that is no equality", `{"Operations":[{"op":"replace","path":"emails[value co \"x\"].type","value":"home"}]}`, NoTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := patch(t, User, `{"userName":"a","emails":[{"value":"a@b","type":"work"}]}`, tt.body)
			var se *Error
			if !errors.As(err, &se) || se.Type != tt.scimType {
				t.Errorf("error = %v, want a %s *Error", err, tt.scimType)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	body := decodeDoc(t, `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
		"id": "client-chosen",
		"externalId": "00u1",
		"USERNAME": "ada@example.com",
		"password": "hunter2",
		"active": "True",
		"name": {"givenName": "Ada", "familyName": "Lovelace", "nickname": "unknown sub-attribute"},
		"emails": [{"primary": true, "value": "ada@example.com", "type": "work", "display": null}],
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Engines", "manager": {"value": "m-1", "displayName": "read-only"}},
		"urn:example:custom:2.0:User": {"favouriteColour": "blue"},
		"meta": {"resourceType": "User"},
		"groups": [{"value": "g1"}],
		"favouriteColour": "green"
	}`)
	got, err := Build(User, body)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeDoc(t, `{
		"externalId": "00u1",
		"userName": "ada@example.com",
		"active": true,
		"name": {"givenName": "Ada", "familyName": "Lovelace"},
		"emails": [{"primary": true, "value": "ada@example.com", "type": "work"}],
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Engines", "manager": {"value": "m-1"}}
	}`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Build (-want +got):\n%s", d)
	}
	if _, err := Build(User, decodeDoc(t, `{"userName":"a","emails":[{"value":1}]}`)); err == nil {
		t.Error("Build accepted an email that is a number")
	}
}

func TestProject(t *testing.T) {
	doc := decodeDoc(t, ada)
	tests := []struct {
		name, attributes, excluded, want string
	}{
		{"nothing asked", "", "", ada},
		{"attributes", "userName,name.givenName,emails.value,urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "", `{
			"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
			"id": "2819c223-7f76-453a-919d-413861904646",
			"userName": "Ada@Example.com",
			"name": {"givenName": "Ada"},
			"emails": [{"value": "ada@example.com"}, {"value": "ada@home.example"}],
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Analytical Engines"}
		}`},
		{"a whole attribute wins over its sub-attribute", "name.givenName, NAME", "", `{
			"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
			"id": "2819c223-7f76-453a-919d-413861904646",
			"name": {"givenName": "Ada", "familyName": "Lovelace"}
		}`},
		{"excluded", "", "emails,name.familyName,id,meta,urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", `{
			"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
			"id": "2819c223-7f76-453a-919d-413861904646",
			"externalId": "00u1AbC",
			"userName": "Ada@Example.com",
			"name": {"givenName": "Ada"},
			"active": true
		}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Project(User, doc, tt.attributes, tt.excluded)
			if d := cmp.Diff(decodeDoc(t, tt.want), roundTrip(t, got)); d != "" {
				t.Errorf("Project (-want +got):\n%s", d)
			}
		})
	}
	if d := cmp.Diff(decodeDoc(t, ada), doc); d != "" {
		t.Errorf("Project changed its input (-want +got):\n%s", d)
	}
}

// roundTrip encodes v as JSON and decodes it again, as a client would see it.
func roundTrip(tb testing.TB, v any) map[string]any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return decodeDoc(tb, string(b))
}

// FuzzPatch checks that no PATCH body crashes the decoder or the operations, and that what
// is refused is refused as a SCIM protocol error.
func FuzzPatch(f *testing.F) {
	for _, s := range []string{
		`{"Operations":[{"op":"replace","value":{"active":false}}]}`,
		`{"Operations":[{"op":"Replace","path":"emails[type eq \"work\"].value","value":"x"}]}`,
		`{"Operations":[{"op":"Remove","path":"members","value":[{"value":"u1"}]}]}`,
		`{"Operations":[{"op":"add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User","value":{"manager":"m"}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ops, err := ParsePatch([]byte(body))
		if err == nil {
			for _, rt := range ResourceTypes() {
				doc := decodeDoc(t, ada)
				err = Apply(rt, doc, ops)
				if err == nil {
					if _, merr := json.Marshal(doc); merr != nil {
						t.Fatalf("the result of %s cannot be encoded: %v", body, merr)
					}
				}
			}
		}
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("%s: error %v is not a *Error", body, err)
			}
		}
	})
}

// FuzzBuild checks that no POST or PUT body crashes the decoder, that what is refused is
// refused as a SCIM protocol error, and that what is accepted keeps nothing read-only.
func FuzzBuild(f *testing.F) {
	f.Add(ada)
	f.Add(`{"displayName":"g","members":[{"value":"u1","display":"x"}],"id":"x"}`)
	f.Add(`{"userName":"a","active":"False","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"manager":"m"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		obj, err := DecodeObject([]byte(body))
		if err != nil {
			return
		}
		for _, rt := range ResourceTypes() {
			doc, err := Build(rt, obj)
			if err != nil {
				if _, ok := errors.AsType[*Error](err); !ok {
					t.Fatalf("%s: error %v is not a *Error", body, err)
				}
				continue
			}
			for _, k := range []string{"id", "meta", "password", "groups", "schemas"} {
				if _, ok := doc[k]; ok {
					t.Fatalf("Build(%s) kept %s", body, k)
				}
			}
		}
	})
}
