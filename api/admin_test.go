package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/apikey"
)

func TestAdminAPIOffWithoutToken(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.AdminToken = "" })
	for _, r := range [][2]string{{"POST", "/admin/orgs"}, {"GET", "/admin/orgs"}, {"POST", "/admin/orgs/x/api_keys"}, {"DELETE", "/admin/api_keys/x"}} {
		if got := f.do(r[0], r[1], "", nil).Status; got != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404 while the admin API is off", r[0], r[1], got)
		}
	}
}

func TestAdminAPI(t *testing.T) {
	f := newFixture(t)
	if r := f.do("GET", "/admin/orgs", "wrong", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("wrong admin token = %d, want 401", r.Status)
	}
	_, apiKey := f.org("acme")
	if r := f.do("GET", "/admin/orgs", apiKey, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("an API key on the admin API = %d, want 401", r.Status)
	}

	created := decode[struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/admin/orgs", adminToken, map[string]string{"name": "globex"}))
	if !uuidRE.MatchString(created.ID) || created.Name != "globex" || len(created.APIKey) != 47 || created.APIKey[:4] != apikey.Prefix {
		t.Fatalf("created = %+v", created)
	}
	if r := f.do("POST", "/admin/orgs", adminToken, map[string]string{"name": "globex"}); r.Status != http.StatusConflict {
		t.Errorf("duplicate org name = %d, want 409", r.Status)
	}
	orgs := decode[struct{ Orgs []struct{ ID, Name string } }](t, f.must("GET", "/admin/orgs", adminToken, nil)).Orgs
	if len(orgs) != 2 || orgs[1].ID != created.ID || orgs[1].Name != "globex" {
		t.Errorf("orgs = %+v", orgs)
	}

	second := decode[struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}](t, f.must("POST", "/admin/orgs/"+created.ID+"/api_keys", adminToken, nil))
	if second.APIKey == created.APIKey || !uuidRE.MatchString(second.ID) {
		t.Fatalf("second key = %+v", second)
	}
	// Both keys name the same organization.
	model := f.model(created.APIKey, "m")
	if r := f.must("GET", "/llm_integration/list", second.APIKey, nil); !contains(r.Body, model) {
		t.Errorf("the second key does not see the first key's model")
	}
	if r := f.do("POST", "/admin/orgs/"+unknownID+"/api_keys", adminToken, nil); r.Status != http.StatusNotFound {
		t.Errorf("key for an unknown org = %d, want 404", r.Status)
	}

	// A revoked key is refused on the very next request.
	jsonEqual(t, f.must("DELETE", "/admin/api_keys/"+second.ID, adminToken, nil).Body, `{"message":"API key revoked"}`)
	if r := f.do("GET", "/llm_integration/list", second.APIKey, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("revoked key = %d, want 401", r.Status)
	}
	if r := f.do("GET", "/llm_integration/list", created.APIKey, nil); r.Status != http.StatusOK {
		t.Errorf("the other key after a revoke = %d, want 200", r.Status)
	}
	if r := f.do("DELETE", "/admin/api_keys/"+second.ID, adminToken, nil); r.Status != http.StatusNotFound {
		t.Errorf("revoking again = %d, want 404", r.Status)
	}
}

// TestRevokedOnAnotherReplica: a key revoked through one server is refused by another server on
// the same store within one second.
func TestRevokedOnAnotherReplica(t *testing.T) {
	f := newFixture(t)
	replica := f.replica(func(c *fixtureConfig) { c.decider = func(api.Decider) api.Decider { return nil } })
	_, key := f.org("acme")
	replica.must("GET", "/functions/list", key, nil) // now cached on the replica
	id := decode[struct{ Orgs []struct{ ID string } }](t, f.must("GET", "/admin/orgs", adminToken, nil)).Orgs[0].ID
	k, err := f.store.APIKeyByHash(context.Background(), apikey.Hash(key))
	if err != nil || k.OrgID != id {
		t.Fatalf("stored key = %+v, %v", k, err)
	}
	f.must("DELETE", "/admin/api_keys/"+k.ID, adminToken, nil)
	// The replica trusts a key it has found for half a second of its clock, the one both
	// servers read here: past that, it asks the store again.
	f.clock.Advance(time.Second)
	if r := replica.do("GET", "/functions/list", key, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("the replica still accepts the revoked key a second later: %d", r.Status)
	}
}

func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	t.Run("first start makes one key, once", func(t *testing.T) {
		f := newFixture(t)
		now := time.Now()
		key, err := api.Bootstrap(ctx, f.store, "", now)
		if err != nil || len(key) != 47 {
			t.Fatalf("Bootstrap = %q, %v", key, err)
		}
		if again, err := api.Bootstrap(ctx, f.store, "", now); again != "" || err != nil {
			t.Errorf("second Bootstrap = %q, %v; want no new key", again, err)
		}
		f.must("GET", "/users/list", key, nil)
		org, err := f.store.OrgByName(ctx, api.DefaultOrg)
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := f.store.APIKeyByHash(ctx, apikey.Hash(key)); k.OrgID != org.ID {
			t.Errorf("the key belongs to %q, want organization default %q", k.OrgID, org.ID)
		}
	})
	t.Run("bootstrap key is idempotent and replaceable", func(t *testing.T) {
		f := newFixture(t)
		for range 2 {
			if key, err := api.Bootstrap(ctx, f.store, "dev-key-1", time.Now()); key != "" || err != nil {
				t.Fatalf("Bootstrap = %q, %v", key, err)
			}
		}
		if n, _ := f.store.CountAPIKeys(ctx); n != 1 {
			t.Errorf("%d keys after two starts with the same bootstrap key, want 1", n)
		}
		f.must("GET", "/users/list", "dev-key-1", nil)
		if _, err := api.Bootstrap(ctx, f.store, "dev-key-2", time.Now()); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second) // past the key cache, as a restart would be
		f.must("GET", "/users/list", "dev-key-2", nil)
		if r := f.do("GET", "/users/list", "dev-key-1", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("the replaced bootstrap key = %d, want 401", r.Status)
		}
		if key, _ := api.Bootstrap(ctx, f.store, "", time.Now()); key != "" {
			t.Error("a new key was made although a key exists")
		}
	})
	t.Run("a revoked bootstrap key stays revoked", func(t *testing.T) {
		f := newFixture(t)
		if _, err := api.Bootstrap(ctx, f.store, "dev-key-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		f.must("GET", "/users/list", "dev-key-1", nil)
		f.must("DELETE", "/admin/api_keys/bootstrap", adminToken, nil)
		// A restart with the same setting does not bring it back, and says why.
		if _, err := api.Bootstrap(ctx, f.store, "dev-key-1", time.Now()); !errors.Is(err, api.ErrBootstrapKeyRevoked) {
			t.Fatalf("Bootstrap with the revoked key = %v, want ErrBootstrapKeyRevoked", err)
		}
		f.clock.Advance(time.Second)
		if r := f.do("GET", "/users/list", "dev-key-1", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("the revoked bootstrap key after a restart = %d, want 401", r.Status)
		}
		// A new key may be set; setting the revoked one again leaves the new one in place.
		if _, err := api.Bootstrap(ctx, f.store, "dev-key-2", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := api.Bootstrap(ctx, f.store, "dev-key-1", time.Now()); !errors.Is(err, api.ErrBootstrapKeyRevoked) {
			t.Fatalf("Bootstrap with the revoked key again = %v, want ErrBootstrapKeyRevoked", err)
		}
		f.clock.Advance(time.Second)
		f.must("GET", "/users/list", "dev-key-2", nil)
		if r := f.do("GET", "/users/list", "dev-key-1", nil); r.Status != http.StatusUnauthorized {
			t.Errorf("the revoked bootstrap key = %d, want 401", r.Status)
		}
	})
}

func contains(body []byte, s string) bool { return strings.Contains(string(body), s) }
