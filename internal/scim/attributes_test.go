package scim

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyAttributes(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    map[string]string
		wantErr bool
	}{
		{name: "no document", doc: ``, want: map[string]string{}},
		{name: "a document without them", doc: `{"displayName":"Ada","emails":[{"value":"ada@example.com"}]}`, want: map[string]string{}},
		{
			name: "every one, as Grantry stores them",
			doc: `{"displayName":"Ada","title":"Analyst","userType":"Employee","nickName":"A",
				"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Engines","division":"Computing",
				"organization":"Analytical Society","costCenter":"4130","employeeNumber":"701984","manager":{"value":"m-1"}}}`,
			want: map[string]string{"title": "Analyst", "userType": "Employee", "department": "Engines", "division": "Computing",
				"organization": "Analytical Society", "costCenter": "4130", "employeeNumber": "701984"},
		},
		{
			name: "names and the URN in any case",
			doc:  `{"TITLE":"Analyst","usertype":"Contractor","URN:IETF:PARAMS:SCIM:SCHEMAS:EXTENSION:ENTERPRISE:2.0:USER":{"DePartment":"Engines","COSTCENTER":"4130"}}`,
			want: map[string]string{"title": "Analyst", "userType": "Contractor", "department": "Engines", "costCenter": "4130"},
		},
		{
			name: "the schema's spelling wins over other cases",
			doc:  `{"Title":"a","title":"b","TITLE":"c"}`,
			want: map[string]string{"title": "b"},
		},
		{
			name: "without the schema's spelling, the first other in byte order",
			doc:  `{"Title":"a","TITLE":"c","tITLE":"d"}`,
			want: map[string]string{"title": "c"},
		},
		{
			name: "a string under another case beats a non-string under the schema's",
			doc:  `{"title":7,"Title":"t"}`,
			want: map[string]string{"title": "t"},
		},
		{
			name: "the extension under the schema's URN wins over one in another case",
			doc: `{"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"a"},
				"URN:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"b","division":"d"}}`,
			want: map[string]string{"department": "a", "division": "d"},
		},
		{
			name: "values that are not strings are left out",
			doc: `{"title":7,"userType":null,"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":
				{"department":{"value":"x"},"division":["x"],"organization":true,"costCenter":4130,"employeeNumber":null}}`,
			want: map[string]string{},
		},
		{
			name: "empty strings are values",
			doc:  `{"title":"","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":""}}`,
			want: map[string]string{"title": "", "department": ""},
		},
		{
			name: "the extension's attributes are read only under its URN",
			doc:  `{"department":"top","urn:example:custom:2.0:User":{"department":"custom"},"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"title":"x"}}`,
			want: map[string]string{},
		},
		{
			name: "an extension that is not an object",
			doc:  `{"title":"t","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":"Engines"}`,
			want: map[string]string{"title": "t"},
		},
		{name: "not JSON", doc: `{"title":`, want: map[string]string{}, wantErr: true},
		{name: "trailing data", doc: `{"title":"t"} {}`, want: map[string]string{}, wantErr: true},
		{name: "a list", doc: `[{"title":"t"}]`, want: map[string]string{}, wantErr: true},
		{name: "null", doc: `null`, want: map[string]string{}, wantErr: true},
		{name: "a string", doc: `"title"`, want: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PolicyAttributes([]byte(tt.doc))
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want an error: %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("PolicyAttributes (-want +got):\n%s", d)
			}
			if got == nil {
				t.Error("PolicyAttributes returned a nil map")
			}
		})
	}
}

func TestImportedAttributes(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    map[string]string
		wantErr bool
	}{
		{name: "no document", doc: ``, want: map[string]string{}},
		{name: "an empty object", doc: `{}`, want: map[string]string{}},
		{
			name: "keys are kept exactly as imported",
			doc:  `{"department":"Engines","Department":"Looms","clearance level":"secret","café":"crème"}`,
			want: map[string]string{"department": "Engines", "Department": "Looms", "clearance level": "secret", "café": "crème"},
		},
		{name: "values that are not strings are left out", doc: `{"a":"x","b":7,"c":null,"d":{"e":"f"},"g":["h"]}`, want: map[string]string{"a": "x"}},
		{name: "not JSON", doc: `{"a":"x"`, want: map[string]string{}, wantErr: true},
		{name: "a list", doc: `["a"]`, want: map[string]string{}, wantErr: true},
		{name: "null", doc: `null`, want: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ImportedAttributes([]byte(tt.doc))
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want an error: %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ImportedAttributes (-want +got):\n%s", d)
			}
			if got == nil {
				t.Error("ImportedAttributes returned a nil map")
			}
		})
	}
}

// policyNames are the keys PolicyAttributes may return.
var policyNames = slices.Concat(policyCoreAttributes, policyEnterpriseAttributes)

// checkAttributes holds what both functions promise of any document: a map, empty with an
// error, and valid UTF-8 throughout, since a policy's input is JSON.
func checkAttributes(t *testing.T, fn string, doc []byte, got map[string]string, err error) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s(%q) returned a nil map", fn, doc)
	}
	if err != nil && len(got) > 0 {
		t.Fatalf("%s(%q) = %v with error %v, want an empty map with the error", fn, doc, got, err)
	}
	for k, v := range got {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Fatalf("%s(%q) gave %q: %q, which is not UTF-8", fn, doc, k, v)
		}
	}
}

// FuzzPolicyAttributes feeds any bytes as a SCIM user's stored document: no panic, only the
// policy's names, and the same answer from the document made of that answer.
func FuzzPolicyAttributes(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := PolicyAttributes(doc)
		checkAttributes(t, "PolicyAttributes", doc, got, err)
		for k := range got {
			if !slices.Contains(policyNames, k) {
				t.Fatalf("PolicyAttributes(%q) gave %q, which is no attribute a policy reads", doc, k)
			}
		}
		canonical := map[string]any{}
		ext := map[string]any{}
		for k, v := range got {
			if slices.Contains(policyCoreAttributes, k) {
				canonical[k] = v
			} else {
				ext[k] = v
			}
		}
		if len(ext) > 0 {
			canonical[EnterpriseUserSchema] = ext
		}
		raw, merr := json.Marshal(canonical)
		if merr != nil {
			t.Fatal(merr)
		}
		again, err := PolicyAttributes(raw)
		if err != nil {
			t.Fatalf("PolicyAttributes(%s): %v", raw, err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("PolicyAttributes(%q) and PolicyAttributes of its answer %s differ (-first +again):\n%s", doc, raw, d)
		}
	})
}

// FuzzImportedAttributes feeds any bytes as an imported user's stored document: no panic, and
// the answer encodes to a document that gives it back.
func FuzzImportedAttributes(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := ImportedAttributes(doc)
		checkAttributes(t, "ImportedAttributes", doc, got, err)
		if len(got) == 0 {
			return
		}
		raw, merr := json.Marshal(got)
		if merr != nil {
			t.Fatal(merr)
		}
		again, err := ImportedAttributes(raw)
		if err != nil || !maps.Equal(got, again) {
			t.Fatalf("ImportedAttributes(%q) = %v, but of its encoding %s = %v, %v", doc, got, raw, again, err)
		}
	})
}
