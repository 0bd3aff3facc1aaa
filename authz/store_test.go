package authz

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"testing"

	"github.com/grantry/grantry/storage"
)

// decisionWrites are the Store methods that can change what a decision reads; changing
// (store.go) overrides each. Every other Store method must be in otherMethods.
var decisionWrites = []string{
	"CreateResource", "DeleteResource", "CreateAuthIntegration", "CreateSCIMIntegration", "DeleteAuthIntegration",
	"ImportUsers", "CreateUser", "UpdateUser", "DeleteUser",
	"SetGrant", "RevokeGrant",
	"CreateGroup", "UpdateGroup", "DeleteGroup", "SetGroupGrant", "RevokeGroupGrant", "DeleteExpiredGrants",
}

// otherMethods read, or write what no decision reads (organizations, keys, secrets, tokens, the
// audit trail, the decision log), or are the change feed.
var otherMethods = []string{
	"Ping", "Close", "Touch", "WatchChanges", "ScanUsers", "ScanGroups",
	"CreateOrg", "GetOrg", "OrgByName", "ListOrgs", "CreateAPIKey", "APIKeyByHash", "DeleteAPIKey", "CountAPIKeys", "GetAPIKey", "ListAPIKeys",
	"GetResource", "GetResources", "ResourceByName", "ListResources", "ReplaceSecret", "SwapSecret", "ResourcesWithSecrets",
	"GetAuthIntegration", "ListAuthIntegrations", "SCIMTokenByHash", "SetSCIMToken",
	"GetUser", "ListUsers", "UserByEmail", "UsersByExternalID", "IntegrationUsers",
	"UserGrants", "ListGrants", "ResourceGrants", "GroupGrants", "ResourceGroupGrants", "UserFacts",
	"GetGroup", "GetOrgGroup", "GroupByName", "IntegrationGroups", "ListGroups", "UserGroups",
	"AppendEvents", "ListEvents", "InsertDecisions", "ListDecisions", "DeleteDecisionsBefore",
}

// TestEveryStoreMethodIsClassified fails when a Store method is added without deciding whether
// it can change a decision, and when store.go overrides other than the decision writes, so that
// no write can change a decision without the engine dropping what it holds.
func TestEveryStoreMethodIsClassified(t *testing.T) {
	known := map[string]bool{}
	for _, m := range slices.Concat(decisionWrites, otherMethods) {
		known[m] = true
	}
	st := reflect.TypeFor[storage.Store]()
	for i := range st.NumMethod() {
		name := st.Method(i).Name
		if !known[name] {
			t.Errorf("storage.Store.%s is new: if it can change what a decision reads, override it in changing (store.go) and add it to decisionWrites; otherwise add it to otherMethods", name)
		}
		delete(known, name)
	}
	for name := range known {
		t.Errorf("%s is listed but is no longer a storage.Store method", name)
	}

	f, err := parser.ParseFile(token.NewFileSet(), "store.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var overridden []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || !fn.Name.IsExported() {
			continue
		}
		if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "changing" {
			overridden = append(overridden, fn.Name.Name)
		}
	}
	slices.Sort(overridden)
	want := slices.Sorted(slices.Values(decisionWrites))
	if !slices.Equal(overridden, want) {
		t.Errorf("store.go overrides %v, want exactly the decision writes %v", overridden, want)
	}
}
