package bolt

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// TestCheckReadsAreOneReading: UserFacts reads what it returns in one transaction, so that a user's membership and the group's grant they read were true together.
// A writer makes group after group that is granted the resource before the user joins it, and
// deleted (membership and grant at once) after; while it does, two readers require that every
// group they find the user in comes with its grant. Read one part after the other (as
// storage.UserFactsOf does), the membership is read before a deletion and the group's grants
// after it often enough to fail.
func TestCheckReadsAreOneReading(t *testing.T) {
	ctx := t.Context()
	noSync := func(o *bbolt.Options) { o.NoSync = true } // durability is not what is tested
	s, err := Open(ctx, filepath.Join(t.TempDir(), "grantry.db"), noSync)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	const org, integration, user, resource = "org-1", "int-1", "ada", "00000000-0000-4000-8000-000000000001"
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: integration, Name: "directory", Type: "scim"}))
	_, err = s.ImportUsers(ctx, org, integration, []storage.UserImport{{ID: user, Email: "ada@x"}}, at)
	must(err)
	must(s.CreateResource(ctx, storage.Resource{OrgID: org, ID: resource, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m", CreatedAt: at}))

	readers := []struct {
		name string
		read func() (storage.Holdings, error)
	}{
		{"UserFacts", func() (storage.Holdings, error) {
			f, err := s.UserFacts(ctx, org, user)
			return storage.Holdings{Groups: f.Groups, GroupGrants: f.GroupGrants}, err
		}},
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var seen atomic.Int64 // readings that found the user in a group
	for _, r := range readers {
		wg.Go(func() {
			for !done.Load() {
				h, err := r.read()
				if err != nil {
					t.Errorf("%s: %v", r.name, err)
					return
				}
				for _, g := range h.Groups {
					seen.Add(1)
					if !hasGroupGrant(h.GroupGrants, g.ID, resource) {
						t.Errorf("%s read %s in group %s without the group's grant, which were never so together", r.name, user, g.ID)
						return
					}
				}
			}
		})
	}

	const groups = 200
	for i := range groups {
		id := fmt.Sprintf("group-%d", i)
		must(s.CreateGroup(ctx, storage.Group{OrgID: org, ID: id, IntegrationID: integration, DisplayName: id, CreatedAt: at, ModifiedAt: at}))
		_, err := s.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: id, ResourceID: resource, CreatedAt: at})
		must(err)
		_, err = s.UpdateGroup(ctx, org, integration, id, func(g *storage.Group) error {
			g.Members = []string{user}
			return nil
		})
		must(err)
		must(s.DeleteGroup(ctx, org, integration, id))
	}
	done.Store(true)
	wg.Wait()
	// The readers must have found the user in a group, or the test proved nothing.
	if n := seen.Load(); n < groups/10 {
		t.Errorf("the readers found ada in a group %d times during %d groups, want more", n, groups)
	}
}

func hasGroupGrant(grants []storage.GroupGrant, groupID, resourceID string) bool {
	for _, g := range grants {
		if g.GroupID == groupID && g.ResourceID == resourceID {
			return true
		}
	}
	return false
}
