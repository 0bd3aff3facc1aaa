package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/grantry/grantry/api"
)

// rotated is the answer of a SCIM token's rotation.
type rotated struct {
	AuthIntegration struct{ ID, Name string } `json:"auth_integration"`
	SCIM            struct {
		BaseURL string `json:"base_url"`
		Token   string `json:"token"`
	} `json:"scim"`
}

// TestSCIMTokenLifecycle: an admin-scoped key rotates a SCIM integration's token (a new one,
// the old one refused) and revokes it, and every replica refuses a token from the request after
// its revocation; keys of narrower scopes may not, and no other integration is touched.
func TestSCIMTokenLifecycle(t *testing.T) {
	f := newFixture(t, withAudit)
	orgID, admin := f.org("acme")
	_, otherKey := f.org("globex")
	integ, first := f.scimIntegration(admin, "okta")
	_, entra := f.scimIntegration(admin, "entra")
	_, otherToken := f.scimIntegration(otherKey, "okta")
	ada := f.scimUser(first, "ada@example.com")
	manage := decode[struct {
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/api_keys", admin, map[string]string{"scope": "manage"})).APIKey
	check := decode[struct {
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/api_keys", admin, map[string]string{"scope": "check"})).APIKey
	// A second replica on the same store.
	replica := api.New(api.Config{Store: f.store, Decider: nil})
	onReplica := func(token string) int {
		r := f.scimDoOn(replica, "GET", "/scim/v2/Users/"+ada, token, "")
		return r.Status
	}
	users := func(token string) int { return f.scimDo("GET", "/scim/v2/Users/"+ada, token, "").Status }
	ref := map[string]string{"auth_integration_id": integ}

	for _, key := range []string{manage, check} {
		for _, path := range []string{"/auth_integration/scim_token/rotate", "/auth_integration/scim_token/revoke"} {
			if r := f.do("POST", path, key, ref); r.Status != http.StatusForbidden {
				t.Errorf("POST %s with a narrower key = %d %s, want 403", path, r.Status, r.Body)
			}
		}
	}
	if users(first) != http.StatusOK {
		t.Fatal("the first token stopped working without a rotation")
	}

	rot := decode[rotated](t, f.must("POST", "/auth_integration/scim_token/rotate", admin, ref))
	second := rot.SCIM.Token
	if rot.AuthIntegration.ID != integ || rot.AuthIntegration.Name != "okta" || rot.SCIM.BaseURL != "/scim/v2" ||
		!strings.HasPrefix(second, "gscim_") || second == first {
		t.Fatalf("rotation = %+v, want the integration and a new gscim_ token", rot)
	}
	if got := users(first); got != http.StatusUnauthorized {
		t.Errorf("the rotated-out token = %d, want 401", got)
	}
	if got := onReplica(first); got != http.StatusUnauthorized {
		t.Errorf("the rotated-out token on another replica = %d, want 401 at once", got)
	}
	if users(second) != http.StatusOK || onReplica(second) != http.StatusOK {
		t.Error("the new token does not reach the integration's users on both replicas")
	}

	f.must("POST", "/auth_integration/scim_token/revoke", admin, ref)
	if got, onOther := users(second), onReplica(second); got != http.StatusUnauthorized || onOther != http.StatusUnauthorized {
		t.Errorf("the revoked token = %d, %d on the replica; want 401 on both", got, onOther)
	}
	if got := f.scimDo("GET", "/scim/v2/Users", entra, "").Status; got != http.StatusOK {
		t.Errorf("another integration's token after a revocation = %d, want 200", got)
	}
	third := decode[rotated](t, f.must("POST", "/auth_integration/scim_token/rotate", admin, ref)).SCIM.Token
	if users(third) != http.StatusOK {
		t.Error("a token rotated in after a revocation does not work")
	}

	importInteg := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", admin, map[string]string{"name": "csv"})).AuthIntegration.ID
	otherInteg := decode[rotated](t, f.must("POST", "/auth_integration/scim_token/rotate", otherKey, map[string]string{"auth_integration_id": mustIntegration(t, f, otherKey, "okta")})).AuthIntegration.ID
	for name, id := range map[string]string{"an import integration": importInteg, "an unknown one": "nope", "another organization's": otherInteg} {
		for _, path := range []string{"/auth_integration/scim_token/rotate", "/auth_integration/scim_token/revoke"} {
			r := f.do("POST", path, admin, map[string]string{"auth_integration_id": id})
			if r.Status != http.StatusNotFound {
				t.Errorf("POST %s for %s = %d %s, want 404", path, name, r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":"SCIM integration not found."}`)
		}
	}
	if got := f.scimDo("GET", "/scim/v2/Users", otherToken, "").Status; got != http.StatusUnauthorized {
		t.Errorf("globex's first token after its own rotation = %d, want 401", got)
	}
	if r := f.do("POST", "/auth_integration/scim_token/rotate", admin, map[string]string{}); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("rotate without an id = %d, want 422", r.Status)
	}

	// The operator does the same through the admin API.
	r := f.must("POST", "/admin/orgs/"+orgID+"/auth_integrations/"+integ+"/scim_token", adminToken, nil)
	fourth := decode[rotated](t, r).SCIM.Token
	if users(third) != http.StatusUnauthorized || users(fourth) != http.StatusOK {
		t.Error("the admin API's rotation did not replace the token")
	}
	f.must("DELETE", "/admin/orgs/"+orgID+"/auth_integrations/"+integ+"/scim_token", adminToken, nil)
	if users(fourth) != http.StatusUnauthorized {
		t.Error("the admin API's revocation left the token working")
	}
	if r := f.do("DELETE", "/admin/orgs/"+orgID+"/auth_integrations/"+importInteg+"/scim_token", adminToken, nil); r.Status != http.StatusNotFound {
		t.Errorf("the admin API on an import integration = %d, want 404", r.Status)
	}

	// The audit trail shows who did what, and never a token.
	trail := f.must("GET", "/audit/events?action=scim_token.rotated", admin, nil)
	if n := strings.Count(string(trail.Body), `"action":"scim_token.rotated"`); n != 3 {
		t.Errorf("scim_token.rotated events = %d, want 3: %s", n, trail.Body)
	}
	for _, tok := range []string{first, second, third, fourth} {
		if strings.Contains(string(trail.Body), tok) {
			t.Fatal("the audit trail shows a token")
		}
	}
	revoked := decode[struct {
		Events []struct{ Actor struct{ Kind string } }
	}](t, f.must("GET", "/audit/events?action=scim_token.revoked", admin, nil)).Events
	var kinds []string
	for _, e := range revoked {
		kinds = append(kinds, e.Actor.Kind)
	}
	if !slices.Equal(kinds, []string{"admin", "api_key"}) {
		t.Errorf("scim_token.revoked by %q, want admin then (earlier) api_key", kinds)
	}
}

// mustIntegration returns the id of the organization's integration named name.
func mustIntegration(tb testing.TB, f *fixture, key, name string) string {
	tb.Helper()
	for _, a := range decode[struct {
		AuthIntegrations []struct{ ID, Name string } `json:"auth_integrations"`
	}](tb, f.must("GET", "/auth_integration/list", key, nil)).AuthIntegrations {
		if a.Name == name {
			return a.ID
		}
	}
	tb.Fatalf("no integration %s", name)
	return ""
}

// TestRemoveAuthIntegration: removing an integration revokes its token and takes its users
// (with their grants) and groups along; other integrations keep theirs.
func TestRemoveAuthIntegration(t *testing.T) {
	f := newFixture(t, withAudit)
	_, key := f.org("acme")
	integ, token := f.scimIntegration(key, "okta")
	_, entraToken := f.scimIntegration(key, "entra")
	model := f.model(key, "gpt")
	ada := f.scimUser(token, "ada@example.com")
	bob := f.scimUser(entraToken, "bob@example.com")
	for _, u := range []string{ada, bob} {
		f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": u, "svc_id": model})
	}
	if !f.check(key, ada, model) {
		t.Fatal("ada cannot use the model before the removal")
	}
	manage := decode[struct {
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/api_keys", key, map[string]string{"scope": "manage"})).APIKey

	r := f.must("POST", "/auth_integration/remove", manage, map[string]string{"auth_integration_id": integ})
	jsonEqual(t, r.Body, `{"message":"Auth integration deleted successfully"}`)
	if got := f.scimDo("GET", "/scim/v2/Users", token, "").Status; got != http.StatusUnauthorized {
		t.Errorf("the removed integration's token = %d, want 401", got)
	}
	if f.check(key, ada, model) {
		t.Error("the removed integration's user may still use the model")
	}
	if !f.check(key, bob, model) || f.scimDo("GET", "/scim/v2/Users/"+bob, entraToken, "").Status != http.StatusOK {
		t.Error("another integration's user lost access or its token")
	}
	list := string(f.must("GET", "/auth_integration/list", key, nil).Body)
	if strings.Contains(list, integ) || !strings.Contains(list, `"entra"`) {
		t.Errorf("integrations after the removal = %s", list)
	}
	if users := string(f.must("GET", "/users/list", key, nil).Body); strings.Contains(users, ada) || !strings.Contains(users, bob) {
		t.Errorf("users after the removal = %s", users)
	}
	if r := f.do("POST", "/auth_integration/remove", key, map[string]string{"auth_integration_id": integ}); r.Status != http.StatusNotFound {
		t.Errorf("removing it again = %d %s, want 404", r.Status, r.Body)
	}
	if r := f.do("POST", "/auth_integration/remove", key, map[string]any{"auth_integration_id": 7}); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("removing with an id that is not a string = %d, want 422", r.Status)
	}
	trail := string(f.must("GET", "/audit/events", key, nil).Body)
	for _, want := range []string{`"action":"auth_integration.deleted"`, `"action":"user.deleted"`} {
		if !strings.Contains(trail, want) {
			t.Errorf("the audit trail has no %s", want)
		}
	}
}
