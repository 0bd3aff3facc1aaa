package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// benchSCIMUsers is how many users the SCIM benchmarks' integration holds.
const benchSCIMUsers = 1000

// scimBenchFixture is a server whose SCIM integration holds benchSCIMUsers users.
func scimBenchFixture(b *testing.B) (f *fixture, token string, ids []string) {
	b.Helper()
	f = newFixture(b)
	_, key := f.org("acme")
	_, token = f.scimIntegration(key, "okta")
	for i := range benchSCIMUsers {
		ids = append(ids, f.scimUser(token, fmt.Sprintf("user%04d@example.com", i)))
	}
	return f, token, ids
}

// BenchmarkSCIMFilterUserName is the lookup every provider makes before it creates or
// changes a user: answered from the email index, whatever the integration's size.
func BenchmarkSCIMFilterUserName(b *testing.B) {
	f, token, _ := scimBenchFixture(b)
	path := "/scim/v2/Users?filter=" + url.QueryEscape(`userName eq "USER0500@example.com"`)
	b.ResetTimer()
	for b.Loop() {
		if r := f.scimDo("GET", path, token, ""); r.Status != http.StatusOK {
			b.Fatalf("status %d", r.Status)
		}
	}
}

// BenchmarkSCIMFilterScan is a filter no index serves: every user of the integration is
// read and matched.
func BenchmarkSCIMFilterScan(b *testing.B) {
	f, token, _ := scimBenchFixture(b)
	path := "/scim/v2/Users?filter=" + url.QueryEscape(`name.familyName eq "nobody"`)
	b.ResetTimer()
	for b.Loop() {
		if r := f.scimDo("GET", path, token, ""); r.Status != http.StatusOK {
			b.Fatalf("status %d", r.Status)
		}
	}
}

// BenchmarkSCIMDeactivate is a leaver: PATCH active false, one read-modify-write.
func BenchmarkSCIMDeactivate(b *testing.B) {
	f, token, ids := scimBenchFixture(b)
	bodies := [2]string{
		`{"Operations":[{"op":"replace","value":{"active":false}}]}`,
		`{"Operations":[{"op":"replace","value":{"active":true}}]}`,
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if r := f.scimDo("PATCH", "/scim/v2/Users/"+ids[i%len(ids)], token, bodies[i/len(ids)%2]); r.Status != http.StatusOK {
			b.Fatalf("status %d", r.Status)
		}
		i++
	}
}
