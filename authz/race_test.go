package authz

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// pausing is a store whose reads of facts can be held at one point, before or after they read,
// so that a test can make a write land in between: the race a load of facts must lose.
type pausing struct {
	storage.Store
	mu    sync.Mutex
	point string        // "<method> before" or "<method> after"; "" holds nothing
	held  chan struct{} // closed when a read reaches point
	go_   chan struct{} // closed to let it go on
}

func (p *pausing) at(point string) {
	p.mu.Lock()
	if p.point != point {
		p.mu.Unlock()
		return
	}
	p.point = ""
	held, goOn := p.held, p.go_
	p.mu.Unlock()
	close(held)
	<-goOn
}

// holdAt makes the next read to reach point wait there; it returns a channel closed once one
// does, and the function that lets it go on.
func (p *pausing) holdAt(point string) (<-chan struct{}, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.point, p.held, p.go_ = point, make(chan struct{}), make(chan struct{})
	goOn := p.go_
	return p.held, func() { close(goOn) }
}

func (p *pausing) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	p.at("UserFacts before")
	defer p.at("UserFacts after")
	return p.Store.UserFacts(ctx, orgID, userID)
}

func (p *pausing) ListResources(ctx context.Context, orgID string, kind storage.Kind) ([]storage.Resource, error) {
	p.at("ListResources before")
	defer p.at("ListResources after")
	return p.Store.ListResources(ctx, orgID, kind)
}

func (p *pausing) GroupGrants(ctx context.Context, orgID string, groupIDs []string) ([]storage.GroupGrant, error) {
	p.at("GroupGrants before")
	defer p.at("GroupGrants after")
	return p.Store.GroupGrants(ctx, orgID, groupIDs)
}

// TestLoadsThatRaceAWriteAreNotKept: a load of facts that read the store before a write which
// changes them, and keeps them after it, would leave the engine answering from the old facts
// until their next change. Each case holds a load at a point, makes a write, lets the load
// finish, and then asks again: the answer must be the store's.
func TestLoadsThatRaceAWriteAreNotKept(t *testing.T) {
	const org = "o"
	// alice holds r1 of her own and r4 through g2, whose member she is; r2 is granted to g,
	// whose member she is not; fresh is made by a case.
	r1, r2, r4, fresh := "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000004", "00000000-0000-4000-8000-000000000003"
	ask := func(id string) Question {
		return Question{OrgID: org, UserID: "alice", ResourceIDs: []string{id}, Now: worldBase}
	}
	makeFresh := func(st storage.Store, ctx context.Context) error {
		if err := st.CreateResource(ctx, storage.Resource{OrgID: org, ID: fresh, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "model-3", CreatedAt: worldBase}); err != nil {
			return err
		}
		return storage.AddGrant(ctx, st, storage.Grant{OrgID: org, UserID: "alice", ResourceID: fresh, CreatedAt: worldBase})
	}
	cases := []struct {
		name  string
		warm  bool                                              // ask first, so that the catalog, the user and their groups are held
		drop  func(st storage.Store, ctx context.Context) error // a write after that, so that the question loads again
		point string
		write func(st storage.Store, ctx context.Context) error
		q     Question
		want  bool
	}{
		{name: "a user read before a grant", point: "UserFacts after", q: ask(r2), want: true,
			write: func(st storage.Store, ctx context.Context) error {
				return storage.AddGrant(ctx, st, storage.Grant{OrgID: org, UserID: "alice", ResourceID: r2, CreatedAt: worldBase})
			}},
		{name: "a user read before they joined a group", point: "UserFacts after", q: ask(r2), want: true,
			write: func(st storage.Store, ctx context.Context) error {
				_, err := st.UpdateGroup(ctx, org, "", "g", func(g *storage.Group) error { g.Members = append(g.Members, "alice"); return nil })
				return err
			}},
		{name: "a catalog read before a resource was made and granted", point: "ListResources after", q: ask(fresh), want: true, write: makeFresh},
		{name: "a catalog read before a resource was removed", point: "ListResources after", q: ask(r1), want: false,
			write: func(st storage.Store, ctx context.Context) error { return st.DeleteResource(ctx, org, r1) }},
		{name: "a user read against a catalog that missed a resource", warm: true, point: "UserFacts before", q: ask(fresh), want: true,
			drop:  func(st storage.Store, ctx context.Context) error { return storage.Revoke(ctx, st, org, "alice", r1) },
			write: makeFresh},
		{name: "a group read before its grant was revoked", warm: true, point: "GroupGrants after", q: ask(r4), want: false,
			drop: func(st storage.Store, ctx context.Context) error {
				_, err := st.UpdateGroup(ctx, org, "", "g2", func(g *storage.Group) error { g.DisplayName = "renamed"; return nil })
				return err
			},
			write: func(st storage.Store, ctx context.Context) error {
				_, err := st.RevokeGroupGrant(ctx, org, "g2", r4)
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := &pausing{Store: bolttest.OpenNoSync(t)}
			e := New(Config{Store: p, Policies: policy.NewLive(mustEngine(t, policy.Embedded())), MaxUsers: 100, MemoBytes: DefaultMemoBytes})
			st := e.Store()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(st.CreateOrg(ctx, storage.Org{ID: org, Name: org, CreatedAt: worldBase}))
			must(st.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "imp", Name: "directory", Type: storage.IntegrationImport, CreatedAt: worldBase}))
			must(st.CreateUser(ctx, storage.User{OrgID: org, ID: "alice", IntegrationID: "imp", Email: "alice@example.com", Active: true, ImportedAt: worldBase, ModifiedAt: worldBase}))
			for _, id := range []string{r1, r2, r4} {
				must(st.CreateResource(ctx, storage.Resource{OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: "model-" + id[len(id)-1:], CreatedAt: worldBase}))
			}
			must(st.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g", DisplayName: "team", CreatedAt: worldBase}))
			must(st.CreateGroup(ctx, storage.Group{OrgID: org, ID: "g2", DisplayName: "tools", Members: []string{"alice"}, CreatedAt: worldBase}))
			for g, id := range map[string]string{"g": r2, "g2": r4} {
				_, err := st.SetGroupGrant(ctx, storage.GroupGrant{OrgID: org, GroupID: g, ResourceID: id, CreatedAt: worldBase})
				must(err)
			}
			must(storage.AddGrant(ctx, st, storage.Grant{OrgID: org, UserID: "alice", ResourceID: r1, CreatedAt: worldBase}))
			if tc.warm {
				_, err := e.Decide(ctx, ask(r1))
				must(err)
			}
			// Before the write, the question has the other answer (asked of an engine that holds
			// nothing, over the same store).
			d, err := New(Config{Store: p.Store, Policies: policy.NewLive(mustEngine(t, policy.Embedded()))}).Decide(ctx, tc.q)
			must(err)
			if d.Allowed == tc.want {
				t.Fatalf("before the write: answered %v already", d.Allowed)
			}
			if tc.drop != nil {
				must(tc.drop(st, ctx))
			}

			held, goOn := p.holdAt(tc.point)
			done := make(chan error, 1)
			go func() {
				_, err := e.Decide(ctx, tc.q)
				done <- err
			}()
			select {
			case <-held:
			case <-time.After(time.Minute):
				t.Fatalf("no read reached %q", tc.point)
			}
			must(tc.write(st, ctx))
			goOn()
			must(<-done)

			d, err = e.Decide(ctx, tc.q)
			must(err)
			if d.Allowed != tc.want {
				t.Errorf("after the load that raced the write: answered %v, want %v", d.Allowed, tc.want)
			}
		})
	}
}

func mustEngine(tb testing.TB, mods []policy.Module) *policy.Engine {
	tb.Helper()
	e, err := policy.New(context.Background(), mods)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestTwoLoadsOfACatalogKeepOne: of two questions that each read the organization's catalog
// (nothing held yet), the one that ends later must not put its catalog in the place of the one
// held meanwhile: users held are resolved against the held one, whose numbering of resources
// their grants carry.
func TestTwoLoadsOfACatalogKeepOne(t *testing.T) {
	ctx := context.Background()
	p := &pausing{Store: bolttest.OpenNoSync(t)}
	e := New(Config{Store: p, Policies: policy.NewLive(mustEngine(t, policy.Embedded()))})
	st := e.Store()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateOrg(ctx, storage.Org{ID: "o", Name: "o", CreatedAt: worldBase}))
	must(st.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "o", ID: "imp", Name: "directory", Type: storage.IntegrationImport, CreatedAt: worldBase}))
	for i := range 5 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		must(st.CreateResource(ctx, storage.Resource{OrgID: "o", ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: fmt.Sprint("m", i), CreatedAt: worldBase}))
	}
	for _, u := range []string{"ada", "bob"} {
		must(st.CreateUser(ctx, storage.User{OrgID: "o", ID: u, IntegrationID: "imp", Email: u + "@example.com", Active: true, ImportedAt: worldBase, ModifiedAt: worldBase}))
		must(storage.AddGrant(ctx, st, storage.Grant{OrgID: "o", UserID: u, ResourceID: "00000000-0000-4000-8000-000000000003", CreatedAt: worldBase}))
	}
	q := func(user string) Question {
		return Question{OrgID: "o", UserID: user, ResourceIDs: []string{"00000000-0000-4000-8000-000000000003"}, Now: worldBase}
	}
	held, goOn := p.holdAt("ListResources after")
	done := make(chan error, 1)
	go func() {
		_, err := e.Decide(ctx, q("ada"))
		done <- err
	}()
	<-held
	// Meanwhile another question reads the catalog and bob, and keeps both.
	if d, err := e.Decide(ctx, q("bob")); err != nil || !d.Allowed {
		t.Fatalf("bob, asked while ada's catalog was being read: %v, %v", d.Allowed, err)
	}
	goOn()
	must(<-done)
	for _, u := range []string{"ada", "bob"} {
		if d, err := e.Decide(ctx, q(u)); err != nil || !d.Allowed {
			t.Errorf("%s, once both catalogs were read: %v, %v; want allowed", u, d.Allowed, err)
		}
	}
}
