package audit_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// BenchmarkGrantRevokeParallel measures what POST /provisions/add_to_user and remove_from_user
// ask of the embedded store, with 32 concurrent writers as in `grantry-bench load -target
// writes`: each op grants a pair that is not granted and revokes it again, through the audit
// trail, so an op is two changes and two events.
func BenchmarkGrantRevokeParallel(b *testing.B) {
	const users, resources, held = 2_000, 1_000, 50
	ctx := b.Context()
	bs := bolttest.Open(b)
	l := bs.NewLoader(bolt.DefaultLoadBatch)
	must(b, l.AddIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-1", Name: "hr", Type: "import", CreatedAt: now}))
	resourceID := func(r int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", r) }
	for r := range resources {
		must(b, l.AddResource(ctx, storage.Resource{OrgID: org, ID: resourceID(r), Kind: storage.KindModel,
			Source: storage.SourceCustom, Name: fmt.Sprintf("model-%d", r), CreatedAt: now}))
	}
	// User u holds the held resources from u on; the others are free to grant.
	for u := range users {
		id := fmt.Sprintf("u-%d", u)
		must(b, l.AddUser(ctx, storage.User{OrgID: org, ID: id, Email: id + "@example.com", Active: true,
			IntegrationID: "int-1", IntegrationName: "hr", ImportedAt: now, ModifiedAt: now}))
		for j := range held {
			must(b, l.AddGrant(ctx, storage.Grant{OrgID: org, UserID: id, ResourceID: resourceID((u + j) % resources), CreatedAt: now}))
		}
	}
	must(b, l.Flush(ctx))
	s := audit.New(bs, nil, nil)

	const writers = 32
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((writers + procs - 1) / procs)
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := actorCtx(b)
		for pb.Next() {
			i := int(next.Add(1) - 1)
			u := i % users
			g := storage.Grant{OrgID: org, UserID: fmt.Sprintf("u-%d", u),
				ResourceID: resourceID((u + held + i/users%(resources-held)) % resources), CreatedAt: now}
			if err := storage.AddGrant(ctx, s, g); err != nil {
				b.Error(err)
				return
			}
			if err := storage.Revoke(ctx, s, g.OrgID, g.UserID, g.ResourceID); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
