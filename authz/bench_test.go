package authz

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// benchEngine is an engine over an organization of users u0…u(n-1), each holding 50 of its
// 1,000 resources (user i the resources i … i+49), read in.
func benchEngine(b *testing.B, users int, mods []policy.Module, memoBytes int) (*Engine, []string) {
	b.Helper()
	ctx := context.Background()
	st := bolttest.OpenNoSync(b)
	pe, err := policy.New(ctx, mods)
	if err != nil {
		b.Fatal(err)
	}
	l := st.NewLoader(0)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(st.CreateOrg(ctx, storage.Org{ID: "o", Name: "o", CreatedAt: worldBase}))
	must(l.AddIntegration(ctx, storage.AuthIntegration{OrgID: "o", ID: "imp", Name: "directory", Type: storage.IntegrationImport, CreatedAt: worldBase}))
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		must(l.AddResource(ctx, storage.Resource{OrgID: "o", ID: ids[i], Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("model-", i), CreatedAt: worldBase}))
	}
	for u := range users {
		id := fmt.Sprint("u", u)
		must(l.AddUser(ctx, storage.User{OrgID: "o", ID: id, IntegrationID: "imp", Email: id + "@example.com", Active: true, ImportedAt: worldBase, ModifiedAt: worldBase}))
		for g := range 50 {
			must(l.AddGrant(ctx, storage.Grant{OrgID: "o", UserID: id, ResourceID: ids[(u+g)%len(ids)], CreatedAt: worldBase}))
		}
	}
	must(l.Flush(ctx))
	e := New(Config{Store: st, Policies: policy.NewLive(pe), MemoBytes: memoBytes})
	if _, err := e.ReadIn(ctx); err != nil {
		b.Fatal(err)
	}
	return e, ids
}

// BenchmarkDecide is the engine's answer to one question about a user held in memory, the
// memo holding it (warm), or with no memo (evaluated: the pruned input and an evaluation), for
// the shipped policy and one that also reads the user's email.
func BenchmarkDecide(b *testing.B) {
	email := []policy.Module{{Name: "p.rego", Source: "package grantry.authz\n\nimport data.grantry.authz.shipped\n\nallow if {\n\tshipped.allow\n\tendswith(input.user.email, \"@example.com\")\n}\n\nallow_all if {\n\tshipped.allow_all\n\tendswith(input.user.email, \"@example.com\")\n}\n"}}
	for _, m := range policy.Embedded() {
		if !m.IsTest() {
			email = append(email, policy.Module{Name: "shipped.rego", Source: strings.Replace(m.Source, "package grantry.authz\n", "package grantry.authz.shipped\n", 1)})
		}
	}
	for _, pc := range []struct {
		name string
		mods []policy.Module
	}{{"shipped", policy.Embedded()}, {"email", email}} {
		for _, memo := range []struct {
			name  string
			bytes int
		}{{"warm", 0}, {"evaluated", -1}} {
			e, ids := benchEngine(b, 1000, pc.mods, memo.bytes)
			ctx := context.Background()
			q := Question{OrgID: "o", UserID: "u7", ResourceIDs: []string{ids[10]}, Now: worldBase}
			b.Run(pc.name+"/"+memo.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if d, err := e.Decide(ctx, q); err != nil || !d.Allowed {
						b.Fatal(d, err)
					}
				}
			})
		}
	}
}
