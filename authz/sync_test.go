package authz

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/grantry/grantry/storage"
)

// TestChangedDropsWhatItNames writes to the store behind the engine's back, as another process
// would, and tells the engine what the write reached, as the change feed would: the engine
// answers as the store does for what the change names, and keeps holding the rest, reading no
// other user's facts.
func TestChangedDropsWhatItNames(t *testing.T) {
	tests := []struct {
		name   string
		write  func(st storage.Store, ctx context.Context) error
		change storage.Change
		// ask is the user asked about, of r1 and r2; reads are the reads of users' facts that
		// asking it and u08 (whom nothing reached) takes.
		ask   string
		want  [2]bool // may ask use r1, r2
		reads int64
	}{
		{"a user", func(st storage.Store, ctx context.Context) error { return storage.Revoke(ctx, st, "o", "u03", r1) },
			storage.Change{OrgID: "o", Users: []string{"u03"}}, "u03", [2]bool{false, false}, 1},
		{"a group", func(st storage.Store, ctx context.Context) error {
			_, err := st.RevokeGroupGrant(ctx, "o", "g", r2)
			return err
		}, storage.Change{OrgID: "o", Groups: []string{"g"}}, "u05", [2]bool{true, false}, 0},
		{"a group's members", func(st storage.Store, ctx context.Context) error {
			_, err := st.UpdateGroup(ctx, "o", "", "g", func(g *storage.Group) error {
				g.Members = []string{"u05", "u06", "u07"}
				return nil
			})
			return err
		}, storage.Change{OrgID: "o", Users: []string{"u07"}, Groups: []string{"g"}}, "u07", [2]bool{true, true}, 1},
		{"the organization", func(st storage.Store, ctx context.Context) error { return storage.Revoke(ctx, st, "o", "u08", r1) },
			storage.Change{OrgID: "o", Org: true}, "u03", [2]bool{true, false}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, e := readInWorld(t)
			ctx := context.Background()
			if _, err := e.ReadIn(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tt.write(st.Store, ctx); err != nil {
				t.Fatal(err)
			}
			e.Changed(tt.change)
			st.userReads.Store(0)
			if got := [2]bool{ask(e, t, tt.ask, r1), ask(e, t, tt.ask, r2)}; got != tt.want {
				t.Errorf("%s may use r1, r2: %v, want %v", tt.ask, got, tt.want)
			}
			if want := !tt.change.Org; ask(e, t, "u08", r1) != want {
				t.Errorf("u08 may use r1: %v, want %v", !want, want)
			}
			if n := st.userReads.Load(); n != tt.reads {
				t.Errorf("%d reads of users' facts, want %d", n, tt.reads)
			}
		})
	}
}

// touching is a store that records what is touched in its change feed.
type touching struct {
	storage.Store
	touched []storage.Change
}

func (s *touching) Touch(_ context.Context, c storage.Change) error {
	s.touched = append(s.touched, c)
	return nil
}

// TestWritesTouchWhatTheyDrop: every write through the engine's store touches, for other
// processes, what it dropped here: the users and groups it reached, or the whole organization
// for a change of its catalog and for a failed write that dropped the organization.
func TestWritesTouchWhatTheyDrop(t *testing.T) {
	org := storage.Change{OrgID: "o", Org: true}
	tests := []struct {
		name  string
		write func(st storage.Store, ctx context.Context) error
		fails bool
		want  []storage.Change
	}{
		{"a grant", func(st storage.Store, ctx context.Context) error {
			return storage.AddGrant(ctx, st, storage.Grant{OrgID: "o", UserID: "u01", ResourceID: r2, CreatedAt: worldBase})
		}, false, []storage.Change{{OrgID: "o", Users: []string{"u01"}}}},
		{"a revoke", func(st storage.Store, ctx context.Context) error { return storage.Revoke(ctx, st, "o", "u01", r1) },
			false, []storage.Change{{OrgID: "o", Users: []string{"u01"}}}},
		{"a user's record", func(st storage.Store, ctx context.Context) error {
			_, err := st.UpdateUser(ctx, "o", "imp", "u02", func(u *storage.User) error { u.First = "Ada"; return nil })
			return err
		}, false, []storage.Change{{OrgID: "o", Users: []string{"u02"}}}},
		{"a user's record, failed", func(st storage.Store, ctx context.Context) error {
			_, err := st.UpdateUser(ctx, "o", "imp", "nobody", func(u *storage.User) error { return nil })
			return err
		}, true, []storage.Change{{OrgID: "o", Users: []string{"nobody"}}}},
		{"a group's grant", func(st storage.Store, ctx context.Context) error {
			_, err := st.SetGroupGrant(ctx, storage.GroupGrant{OrgID: "o", GroupID: "g", ResourceID: r1, CreatedAt: worldBase})
			return err
		}, false, []storage.Change{{OrgID: "o", Groups: []string{"g"}}}},
		{"a group made", func(st storage.Store, ctx context.Context) error {
			return st.CreateGroup(ctx, storage.Group{OrgID: "o", ID: "g2", DisplayName: "two", Members: []string{"u01", "u02"}, CreatedAt: worldBase})
		}, false, []storage.Change{{OrgID: "o", Users: []string{"u01", "u02"}, Groups: []string{"g2"}}}},
		{"a group made, failed", func(st storage.Store, ctx context.Context) error {
			return st.CreateGroup(ctx, storage.Group{OrgID: "o", ID: "g", DisplayName: "team", CreatedAt: worldBase})
		}, true, []storage.Change{org}},
		{"a group's members", func(st storage.Store, ctx context.Context) error {
			_, err := st.UpdateGroup(ctx, "o", "", "g", func(g *storage.Group) error { g.Members = []string{"u06", "u07"}; return nil })
			return err
		}, false, []storage.Change{{OrgID: "o", Users: []string{"u05", "u07"}, Groups: []string{"g"}}}},
		{"a group removed", func(st storage.Store, ctx context.Context) error { return st.DeleteGroup(ctx, "o", "", "g") },
			false, []storage.Change{{OrgID: "o", Users: []string{"u05", "u06"}, Groups: []string{"g"}}}},
		{"a resource made", func(st storage.Store, ctx context.Context) error {
			return st.CreateResource(ctx, storage.Resource{OrgID: "o", ID: "00000000-0000-4000-8000-000000000003", Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m-3", CreatedAt: worldBase})
		}, false, []storage.Change{org}},
		{"a resource removed", func(st storage.Store, ctx context.Context) error { return st.DeleteResource(ctx, "o", r1) }, false, []storage.Change{org}},
		{"an integration made", func(st storage.Store, ctx context.Context) error {
			return st.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "o", ID: "imp2", Name: "other", Type: storage.IntegrationImport, CreatedAt: worldBase})
		}, false, []storage.Change{org}},
		{"users imported", func(st storage.Store, ctx context.Context) error {
			_, err := st.ImportUsers(ctx, "o", "imp", []storage.UserImport{{Email: "u01@example.com", First: "Uno"}}, worldBase)
			return err
		}, false, []storage.Change{{OrgID: "o", Users: []string{"u01"}}}},
		{"expired grants removed", func(st storage.Store, ctx context.Context) error {
			_, err := st.DeleteExpiredGrants(ctx, worldBase)
			return err
		}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, e := readInWorld(t)
			rec := &touching{Store: st}
			e.wrapped = changing{Store: rec, cache: e.cache} // the writes of the case alone
			if err := tt.write(e.Store(), context.Background()); (err != nil) != tt.fails {
				t.Fatalf("the write returned %v, want it to fail: %v", err, tt.fails)
			}
			if diff := cmp.Diff(tt.want, rec.touched, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("touched (-want +got):\n%s", diff)
			}
		})
	}
}
