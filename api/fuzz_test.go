package api

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// requestTypes is every request body the API decodes, each with an oracle written from its
// contract rather than from its validate tags: valid says what an accepted value breaks, or ""
// if nothing. TestEveryRequestTypeIsFuzzed keeps the list complete.
var requestTypes = []struct {
	name  string
	new   func() any
	valid func(v any) string
}{
	{"accessRequest", func() any { return new(accessRequest) }, func(v any) string {
		r := v.(*accessRequest)
		return firstOf(name("user_id", r.UserID, true), uuid("svc_id", r.SvcID))
	}},
	{"accessAllRequest", func() any { return new(accessAllRequest) }, func(v any) string {
		r := v.(*accessAllRequest)
		if len(r.Tags) < 1 || len(r.Tags) > 1000 {
			return "tags must hold 1 to 1000 ids"
		}
		problems := []string{name("user_id", r.UserID, true)}
		for _, t := range r.Tags {
			problems = append(problems, uuid("tags[]", t))
		}
		return firstOf(problems...)
	}},
	{"customModelRequest", func() any { return new(customModelRequest) }, func(v any) string {
		return name("model_name", v.(*customModelRequest).ModelName, true)
	}},
	{"createFunctionRequest", func() any { return new(createFunctionRequest) }, func(v any) string {
		r := v.(*createFunctionRequest)
		return firstOf(name("function_name", r.FunctionName, true), text("description", r.Description, maxDescription))
	}},
	{"customDatasetRequest", func() any { return new(customDatasetRequest) }, func(v any) string {
		return name("dataset_name", v.(*customDatasetRequest).DatasetName, true)
	}},
	{"removeRequest", func() any { return new(removeRequest) }, func(v any) string {
		return uuid("svc_id", v.(*removeRequest).SvcID)
	}},
	{"createAuthIntegrationRequest", func() any { return new(createAuthIntegrationRequest) }, func(v any) string {
		r := v.(*createAuthIntegrationRequest)
		return firstOf(name("name", r.Name, true), text("metadata", r.Metadata, maxDescription))
	}},
	{"importRequest", func() any { return new(importRequest) }, func(v any) string {
		r := v.(*importRequest)
		if len(r.Users) < 1 || len(r.Users) > 10_000 {
			return "users must hold 1 to 10000 users"
		}
		problems := []string{name("auth_integration_id", r.AuthIntegrationID, true)}
		for _, u := range r.Users {
			if u.ID != nil {
				problems = append(problems, name("users[].id", *u.ID, true))
			}
			problems = append(problems, name("users[].email", u.Email, true), name("users[].first", u.First, false), name("users[].last", u.Last, false))
			if len(u.Attributes) > 64 {
				return "users[].attributes has more than 64 keys"
			}
			for k, v := range u.Attributes {
				if k == "" {
					return "users[].attributes has an empty key"
				}
				problems = append(problems, text("users[].attributes key", k, 128), text("users[].attributes value", v, 1024))
			}
		}
		return firstOf(problems...)
	}},
	{"createOrgRequest", func() any { return new(createOrgRequest) }, func(v any) string {
		return name("name", v.(*createOrgRequest).Name, true)
	}},
	{"modelIntegrationRequest", func() any { return new(modelIntegrationRequest) }, func(v any) string {
		r := v.(*modelIntegrationRequest)
		return secret("provider_key", r.ProviderKey)
	}},
	{"vectorDBIntegrationRequest", func() any { return new(vectorDBIntegrationRequest) }, func(v any) string {
		r := v.(*vectorDBIntegrationRequest)
		return firstOf(secret("api_key", r.APIKey), name("environment", r.Environment, false))
	}},
	{"grantRequest", func() any { return new(grantRequest) }, func(v any) string {
		r := v.(*grantRequest)
		return firstOf(name("user_id", r.UserID, true), uuid("svc_id", r.SvcID), rfc3339("expires_at", r.ExpiresAt))
	}},
	{"groupGrantRequest", func() any { return new(groupGrantRequest) }, func(v any) string {
		r := v.(*groupGrantRequest)
		return firstOf(name("group_id", r.GroupID, true), uuid("svc_id", r.SvcID), rfc3339("expires_at", r.ExpiresAt))
	}},
	{"groupRevokeRequest", func() any { return new(groupRevokeRequest) }, func(v any) string {
		r := v.(*groupRevokeRequest)
		return firstOf(name("group_id", r.GroupID, true), uuid("svc_id", r.SvcID))
	}},
	{"createGroupRequest", func() any { return new(createGroupRequest) }, func(v any) string {
		return name("name", v.(*createGroupRequest).Name, true)
	}},
	{"groupMemberRequest", func() any { return new(groupMemberRequest) }, func(v any) string {
		r := v.(*groupMemberRequest)
		return firstOf(name("group_id", r.GroupID, true), name("user_id", r.UserID, true))
	}},
	{"groupRequest", func() any { return new(groupRequest) }, func(v any) string {
		return name("group_id", v.(*groupRequest).GroupID, true)
	}},
	{"batchRequest", func() any { return new(batchRequest) }, func(v any) string {
		r := v.(*batchRequest)
		if len(r.Checks) < 1 || len(r.Checks) > 1000 {
			return "checks must hold 1 to 1000 items"
		}
		var problems []string
		for _, ch := range r.Checks {
			problems = append(problems, name("checks[].user_id", ch.UserID, true), uuid("checks[].svc_id", ch.SvcID))
			if ch.CorrelationID != nil {
				problems = append(problems, text("checks[].correlation_id", *ch.CorrelationID, maxName))
			}
		}
		return firstOf(problems...)
	}},
	{"authIntegrationRef", func() any { return new(authIntegrationRef) }, func(v any) string {
		return name("auth_integration_id", v.(*authIntegrationRef).AuthIntegrationID, true)
	}},
	{"apiKeyRequest", func() any { return new(apiKeyRequest) }, func(v any) string {
		r := v.(*apiKeyRequest)
		if r.Scope != nil && *r.Scope != "admin" && *r.Scope != "manage" && *r.Scope != "check" {
			return "scope is none of admin, manage and check"
		}
		return ""
	}},
}

// rfc3339 checks an optional time: absent, or an RFC 3339 date-time with its offset.
func rfc3339(field string, s *string) string {
	if s == nil {
		return ""
	}
	if _, err := time.Parse(time.RFC3339, *s); err != nil {
		return field + " is not an RFC 3339 time"
	}
	return ""
}

// secret checks a third-party key: required, and at most 4096 characters.
func secret(field, s string) string {
	if s == "" {
		return field + " is empty"
	}
	return text(field, s, 4096)
}

func name(field, s string, required bool) string {
	if required && s == "" {
		return field + " is empty"
	}
	return text(field, s, maxName)
}

func text(field, s string, most int) string {
	if utf8.RuneCountInString(s) > most {
		return field + " is too long"
	}
	return ""
}

func uuid(field, s string) string {
	if !isUUID(s) {
		return field + " is not a UUID"
	}
	return ""
}

func firstOf(problems ...string) string {
	for _, p := range problems {
		if p != "" {
			return p
		}
	}
	return ""
}

// problemTypes are the only 422 types CONTRACT.md and the README name.
var problemTypes = []string{"missing", "string_type", "uuid_parsing", "list_type", "string_too_short",
	"string_too_long", "too_short", "too_long", "json_invalid", "model_attributes_type", "bool_type", "int_type",
	"datetime_parsing", "literal_error", "dict_type"}

// FuzzDecodeRequests feeds untrusted bytes to the decoder of every request type, the first byte
// choosing which: it must never panic, must accept only values that keep the type's contract,
// and must explain every refusal in the FastAPI shape with the documented problem types.
func FuzzDecodeRequests(f *testing.F) {
	seeds := map[string][]string{
		"accessRequest": {`{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`, `{"user_id":"","svc_id":"x"}`,
			`{"user_id":["u"],"svc_id":{}}`},
		"accessAllRequest":   {`{"user_id":"u","tags":["0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"]}`, `{"user_id":"u","tags":[1,"x",null]}`},
		"customModelRequest": {`{"model_name":"llama"}`, `{"model_name":""}`, `{"model_name":"` + strings.Repeat("é", 257) + `"}`},
		"createFunctionRequest": {`{"function_name":"f","description":"d"}`, `{"function_name":"f","description":null}`,
			`{"function_name":"f","description":"` + strings.Repeat("d", 4097) + `"}`},
		"customDatasetRequest":         {`{"dataset_name":"docs"}`, `{"dataset_name":7}`},
		"removeRequest":                {`{"svc_id":"0B6F1A52-6A51-4C59-9A43-3C1F4F2F6A01"}`, `{"svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a0"}`},
		"createAuthIntegrationRequest": {`{"name":"okta","metadata":"{}"}`, `{"name":"okta","metadata":{}}`},
		"importRequest": {`{"auth_integration_id":"a","users":[{"email":"a@b","first":"A","last":"B"}]}`,
			`{"auth_integration_id":"a","users":[{"id":"","email":""},{"id":null,"email":"x"},7,{"id":1}]}`,
			`{"auth_integration_id":"a","users":[]}`,
			`{"auth_integration_id":"a","users":[{"email":"a@b","attributes":{"title":"Analyst","department":"Engines"}},{"email":"c@d","attributes":{}}]}`,
			`{"auth_integration_id":"a","users":[{"email":"a@b","attributes":{"":"x","t":7,"u":null,"v":{"w":"x"}}},{"email":"c@d","attributes":"x"},{"email":"e@f","attributes":null}]}`},
		"createOrgRequest":           {`{"name":"acme"}`, `{"name":"\u0000"}`, "{\"name\":\"ac\xe9me\"}", `{"name":"\udc00"}`},
		"modelIntegrationRequest":    {`{"provider_key":"sk-test"}`, `{"provider_key":""}`, `{"provider_key":null}`},
		"vectorDBIntegrationRequest": {`{"api_key":"pc-test","environment":"us-east-1"}`, `{"api_key":"k","environment":7}`},
		"grantRequest": {`{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01","expires_at":"2030-01-02T03:04:05Z"}`,
			`{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01","expires_at":"2030-01-02"}`, `{"user_id":"u","expires_at":7}`},
		"groupGrantRequest": {`{"group_id":"g","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01","expires_at":"2030-01-02T03:04:05.5+01:00"}`,
			`{"group_id":"","svc_id":"x","expires_at":null}`},
		"groupRevokeRequest": {`{"group_id":"g","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"}`, `{"group_id":1}`},
		"createGroupRequest": {`{"name":"Engineering"}`, `{"name":""}`},
		"groupMemberRequest": {`{"group_id":"g","user_id":"u"}`, `{"group_id":"g","user_id":["u"]}`},
		"groupRequest":       {`{"group_id":"g"}`, `{"group_id":null}`},
		"batchRequest": {`{"checks":[{"user_id":"u","svc_id":"0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01","correlation_id":"c1"}]}`,
			`{"checks":[{"user_id":"u","svc_id":"x","correlation_id":7},1,{}]}`, `{"checks":[]}`},
		"apiKeyRequest":      {`{"scope":"check"}`, `{"scope":"root"}`, `{"scope":null}`},
		"authIntegrationRef": {`{"auth_integration_id":"6f1c2a3b-0000-4000-8000-000000000001"}`, `{"auth_integration_id":""}`, `{"auth_integration_id":7}`},
	}
	for i, rt := range requestTypes {
		for _, s := range append(seeds[rt.name], ``, `{}`, `[]`, `null`, `{"a":`, `{} {}`) {
			f.Add(uint8(i), []byte(s))
		}
	}
	v := newValidator()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rt := requestTypes[int(which)%len(requestTypes)]
		dst := rt.new()
		err := decodeBody(v, body, dst)
		if err == nil && !utf8.Valid(body) {
			t.Fatalf("%s: accepted %q, which is not UTF-8: its strings were read as U+FFFD", rt.name, body)
		}
		if err == nil {
			if problem := rt.valid(dst); problem != "" {
				t.Fatalf("%s: accepted %q although %s", rt.name, body, problem)
			}
			return
		}
		ve, ok := errors.AsType[*ValidationError](err)
		if !ok {
			t.Fatalf("%s: decodeBody(%q) = %v, want a ValidationError", rt.name, body, err)
		}
		if len(ve.Problems) == 0 {
			t.Fatalf("%s: decodeBody(%q): a ValidationError without problems", rt.name, body)
		}
		for _, p := range ve.Problems {
			if len(p.Loc) == 0 || p.Loc[0] != "body" || p.Msg == "" || !slices.Contains(problemTypes, p.Type) {
				t.Fatalf("%s: decodeBody(%q): problem %+v", rt.name, body, p)
			}
			for _, step := range p.Loc {
				switch step.(type) {
				case string, int, int64:
				default:
					t.Fatalf("%s: decodeBody(%q): loc %v holds a %T", rt.name, body, p.Loc, step)
				}
			}
		}
	})
}

// TestEveryRequestTypeIsFuzzed finds every type that a handler of this package decodes a body
// into (var req T; s.bindJSON(c, &req)) and checks that FuzzDecodeRequests covers it.
func TestEveryRequestTypeIsFuzzed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	decoded := map[string]string{} // type name → file that decodes into it
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		varTypes := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if id, ok := n.Type.(*ast.Ident); ok {
					for _, name := range n.Names {
						varTypes[name.Name] = id.Name
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "bindJSON" || len(n.Args) != 2 {
					return true
				}
				var id *ast.Ident
				if arg, ok := n.Args[1].(*ast.UnaryExpr); ok {
					id, _ = arg.X.(*ast.Ident)
				}
				if id == nil {
					t.Errorf("%s: bindJSON into %s: write it as var req T; s.bindJSON(c, &req) so this test can see T", fset.Position(n.Pos()), types.ExprString(n.Args[1]))
					return true
				}
				typ, ok := varTypes[id.Name]
				if !ok {
					t.Errorf("%s: cannot tell the type bindJSON decodes into", fset.Position(n.Pos()))
					return true
				}
				decoded[typ] = file
			}
			return true
		})
	}
	fuzzed := map[string]bool{}
	for _, rt := range requestTypes {
		fuzzed[rt.name] = true
	}
	var names []string
	for name := range decoded {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("found no bindJSON calls: this test no longer sees the handlers")
	}
	for _, name := range names {
		if !fuzzed[name] {
			t.Errorf("%s (decoded in %s) is not in requestTypes of fuzz_test.go: add it with an oracle of its contract", name, decoded[name])
		}
	}
}
