package scim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// decodeDoc decodes a JSON object for a test; it stops the test on bad JSON.
func decodeDoc(tb testing.TB, s string) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		tb.Fatalf("test document %s: %v", s, err)
	}
	return m
}

const ada = `{
	"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
	"id": "2819c223-7f76-453a-919d-413861904646",
	"externalId": "00u1AbC",
	"userName": "Ada@Example.com",
	"name": {"givenName": "Ada", "familyName": "Lovelace"},
	"active": true,
	"emails": [
		{"value": "ada@example.com", "type": "work", "primary": true},
		{"value": "ada@home.example", "type": "home"}
	],
	"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Analytical Engines"},
	"meta": {"resourceType": "User", "created": "2026-11-22T09:30:00.000Z", "lastModified": "2026-11-22T09:31:00.000Z"}
}`

func TestFilterMatches(t *testing.T) {
	doc := decodeDoc(t, ada)
	tests := []struct {
		filter string
		want   bool
	}{
		// Okta and Entra ID find users so; userName is not case-exact.
		{`userName eq "ada@example.com"`, true},
		{`userName eq "ADA@EXAMPLE.COM"`, true},
		{`userName eq "bob@example.com"`, false},
		{`USERNAME EQ "ada@example.com"`, true},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "ada@example.com"`, true},
		// externalId and id are case-exact.
		{`externalId eq "00u1AbC"`, true},
		{`externalId eq "00u1abc"`, false},
		{`id eq "2819c223-7f76-453a-919d-413861904646"`, true},
		// Values without quotes, as Microsoft's provisioning tutorial writes them.
		{`externalId eq 00u1AbC`, true},
		{`id eq 2819c223-7f76-453a-919d-413861904646 and userName eq ada@example.com`, true},
		{`userName eq bob@example.com`, false},
		{`name.givenName sw ad`, true},
		{`name.givenName sw "ad"`, true},
		{`name.familyName ew "LACE"`, true},
		{`name.familyName co "vel"`, true},
		{`name.middleName pr`, false},
		{`name pr`, true},
		{`title pr`, false},
		{`active eq true`, true},
		{`active eq false`, false},
		{`active ne false`, true},
		{`active eq "True"`, true},
		{`emails co "home.example"`, true},
		{`emails.value eq "ada@home.example"`, true},
		{`emails[type eq "work" and value co "@example.com"]`, true},
		{`emails[type eq "work" and value co "@home"]`, false},
		{`emails[type eq "other"]`, false},
		{`emails[TYPE eq "WORK"]`, true},
		// Entra ID matches users by their work email so.
		{`emails[type eq "work"].value eq "ADA@example.com"`, true},
		{`emails[type eq "home"].value eq "ada@example.com"`, false},
		{`emails[type eq "work"].value pr`, true},
		{`emails[type eq "work"].display pr`, false},
		{`emails[type eq "work"].value eq "x" or userName eq "ada@example.com"`, true},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "analytical engines"`, true},
		{`meta.lastModified gt "2026-11-22T09:30:30Z"`, true},
		{`meta.lastModified lt "2026-11-22T09:30:30Z"`, false},
		{`meta.created ge "2026-11-22T09:30:00Z"`, true},
		{`userName eq "ada@example.com" and active eq false`, false},
		{`userName eq "nobody" or active eq true`, true},
		{`userName eq "nobody" or userName eq "x" and active eq true`, false},
		{`(userName eq "nobody" or userName eq "ada@example.com") and active eq true`, true},
		{`not (userName eq "nobody")`, true},
		{`not(active eq true)`, false},
		{`noSuchAttribute eq "x"`, false},
		{`noSuchAttribute ne "x"`, true},
		{`title eq null`, true},
		{`userName ne null`, true},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := ParseFilter(tt.filter)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := f.Matches(User, doc); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFilterUnqualifiedExtension: an attribute of the enterprise extension named without its
// URN is found there, as Entra ID asks whether a user has a manager.
func TestFilterUnqualifiedExtension(t *testing.T) {
	doc := decodeDoc(t, `{"id": "u1", "userName": "ada",
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Engines", "manager": {"value": "m-1", "$ref": "https://x/Users/m-1"}}}`)
	for _, tt := range []struct {
		filter string
		want   bool
	}{
		{`manager eq "m-1"`, true},
		{`manager eq "m-2"`, false},
		{`manager.value eq "m-1"`, true},
		{`id eq "u1" and manager eq "m-1"`, true},
		{`department eq "engines"`, true},
		{`urn:ietf:params:scim:schemas:core:2.0:User:manager eq "m-1"`, false},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager eq "m-1"`, true},
	} {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatalf("ParseFilter(%s): %v", tt.filter, err)
		}
		if got := f.Matches(User, doc); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.filter, got, tt.want)
		}
	}
}

func TestFilterMatchesGroupMembers(t *testing.T) {
	doc := decodeDoc(t, `{"id": "g1", "displayName": "Engineers", "members": [{"value": "u1"}, {"value": "u2"}]}`)
	tests := []struct {
		filter string
		want   bool
	}{
		// What Entra ID asks to learn whether a user is a member.
		{`id eq "g1" and members[value eq "u2"]`, true},
		{`id eq "g1" and members[value eq "u3"]`, false},
		{`members[value eq "U2"]`, false}, // member ids are case-exact
		{`displayName eq "engineers"`, true},
		{`members.value eq "u1"`, true},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatalf("ParseFilter(%s): %v", tt.filter, err)
		}
		if got := f.Matches(Group, doc); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.filter, got, tt.want)
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	for _, filter := range []string{
		``,
		`userName`,
		`userName eq`,
		`userName equals "x"`,
		`userName eq "unterminated`,
		`userName eq "bad \q escape"`,
		`userName eq "x" and`,
		`(userName eq "x"`,
		`userName eq "x")`,
		`emails[type eq "work"`,
		`active gt true`,
		`userName co null`,
		`userName eq 1e999`,
		`userName eq "x" garbage`,
		`name.givenName.extra eq "x"`,
		`emails.value[type eq "work"]`,
		`9lives eq "x"`,
		`userName eq and active eq true`,
		`userName eq or`,
		`emails[type eq "work"].value`,
		`emails[type eq "work"].value.x eq "a"`,
		`emails[type eq "work"].9 eq "a"`,
		`emails[type eq "work"]. eq "a"`,
		`userName eq "x" & active eq true`,
		`((((((((((((((((((((((((((((((((((userName eq "x"))))))))))))))))))))))))))))))))))`,
		strings.Repeat(`userName eq "x" or `, MaxFilterTerms) + `userName eq "x"`,
		`userName eq "` + strings.Repeat("x", MaxFilterLength) + `"`,
		"userName eq \"\xff\"",
	} {
		_, err := ParseFilter(filter)
		var se *Error
		if !errors.As(err, &se) || se.Type != InvalidFilter {
			t.Errorf("ParseFilter(%s) error = %v, want an invalidFilter *Error", filter, err)
		}
	}
}

// TestFilterTerms: a filter's terms are its attribute expressions, up to MaxFilterTerms.
func TestFilterTerms(t *testing.T) {
	for filter, want := range map[string]int{
		`userName eq "a"`: 1,
		`id eq "g" and members[value eq "u" or value eq "v"]`:                       4,
		`emails[type eq "work"].value eq "a" or not (title pr)`:                     3,
		strings.Repeat(`userName eq "x" or `, MaxFilterTerms-1) + `userName eq "x"`: MaxFilterTerms,
	} {
		f, err := ParseFilter(filter)
		if err != nil {
			t.Fatalf("ParseFilter(%.40s): %v", filter, err)
		}
		if got := f.Terms(); got != want {
			t.Errorf("Terms(%.40s) = %d, want %d", filter, got, want)
		}
	}
}

func TestFilterEquality(t *testing.T) {
	tests := []struct {
		filter, attr string
		want         string
		ok           bool
	}{
		{`userName eq "a@b"`, "userName", "a@b", true},
		{`USERNAME Eq "a@b"`, "userName", "a@b", true},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a@b"`, "userName", "a@b", true},
		{`active eq true and userName eq "a@b"`, "userName", "a@b", true},
		{`userName eq "a@b" or userName eq "c@d"`, "userName", "", false},
		{`userName ne "a@b"`, "userName", "", false},
		{`not (userName eq "a@b")`, "userName", "", false},
		{`name.givenName eq "a"`, "name", "", false},
		{`externalId eq "x"`, "userName", "", false},
		{`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:userName eq "a@b"`, "userName", "", false},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatalf("ParseFilter(%s): %v", tt.filter, err)
		}
		got, ok := f.Equality(User, tt.attr)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: Equality(%s) = %q, %v; want %q, %v", tt.filter, tt.attr, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseFilter checks that no filter crashes the parser or the evaluation, and that what
// is refused is refused as invalidFilter.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`userName eq "ada@example.com"`,
		`id eq "g1" and members[value eq "u2"]`,
		`not (emails[type eq "work" and value co "@x"]) or meta.lastModified gt "2026-01-01T00:00:00Z"`,
		`active eq True`, `title pr`, `x eq 12.5e3`, `urn:a:b:c eq null`,
	} {
		f.Add(s)
	}
	doc := decodeDoc(f, ada)
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Type != InvalidFilter {
				t.Fatalf("ParseFilter(%q) error = %v, want an invalidFilter *Error", s, err)
			}
			return
		}
		flt.Matches(User, doc)
		flt.Matches(Group, doc)
	})
}
