package api

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// TestAskedUserDecidesAsTheWhole: a user read with only the grants of the resources asked
// about (askedUser) holds exactly the whole user's grants of those, own and through groups,
// and every check decided from it answers as the policy answers for the whole user: for
// resources held for good, expiring, expired, through a group, removed, not held and unknown,
// for allow and allow_all, before and after an expiry, of an inactive user and of no user;
// and so does every answer found by the question's shape (shapeAnswer) once it has been asked.
func TestAskedUserDecidesAsTheWhole(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	clock := now
	store, id := adaStore(t, now)
	must := fatalOn(t)
	// bea, inactive, holds 0 and is in ada's group.
	_, err := store.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "bea", Email: "bea@x"}}, now)
	must(err)
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "bea", ResourceID: id(0), CreatedAt: now}))
	_, err = store.UpdateUser(ctx, org, "int", "bea", func(u *storage.User) error { u.Active = false; return nil })
	must(err)
	_, err = store.UpdateGroup(ctx, org, "", "g1", func(g *storage.Group) error { g.Members = append(g.Members, "bea"); return nil })
	must(err)
	// cy holds 2, which ada's grant of expired, for good: asked about first, cy makes its shape known.
	_, err = store.ImportUsers(ctx, org, "int", []storage.UserImport{{ID: "cy", Email: "cy@x"}}, now)
	must(err)
	must(store.Grant(ctx, storage.Grant{OrgID: org, UserID: "cy", ResourceID: id(2), CreatedAt: now}))

	engine := newEngine(t, policy.Embedded())
	s := New(Config{Store: store, Decider: engine, Now: func() time.Time { return clock }})
	_, revision := s.pinPolicy()
	shapedAnswers := 0
	questions := [][]string{{id(0)}, {id(1)}, {id(2)}, {id(3)}, {id(4)}, {id(5)}, {"unknown"},
		{id(0), id(3)}, {id(0), id(4)}, {id(3), id(1)}, {id(1), id(1)}, {id(2), id(0)}}
	for _, at := range []time.Time{now, now.Add(time.Minute), now.Add(time.Hour)} {
		clock = at
		for _, user := range []string{"cy", "ada", "bea", "nobody"} {
			whole, err := s.loadUser(ctx, org, user)()
			must(err)
			for _, ids := range questions {
				// Read for allow_all, which has no shape, the user is built whatever was asked before.
				asked, shaped, err := s.askedUser(ctx, org, user, revision, true, s.questionResources(ctx, org, ids))
				must(err)
				if shaped.ok {
					t.Fatalf("%s asked about %v for allow_all was answered by a shape", user, ids)
				}
				if whole == nil {
					if asked != nil && len(asked.Grants)+len(asked.Groups) > 0 {
						t.Errorf("%s, who does not exist, was read with grants or groups: %+v", user, asked)
					}
				} else if asked != nil {
					for rid, g := range asked.Grants {
						if w, ok := whole.Grants[rid]; !ok || !slices.Contains(ids, rid) || w.Name != g.Name || !w.ExpiresAt.Equal(g.ExpiresAt) {
							t.Errorf("%s asked about %v was read with the grant of %s %+v; the whole user has %+v", user, ids, rid, g, w)
						}
					}
					// Held all: the groups, and each grant, as the whole user's.
					if !slices.ContainsFunc(ids, func(rid string) bool { return !whole.Holds(rid) }) {
						for _, rid := range ids {
							if !asked.Holds(rid) {
								t.Errorf("%s asked about %v does not hold %s", user, ids, rid)
							}
						}
						for gid, g := range whole.Groups {
							if a, ok := asked.Groups[gid]; !ok || a.Name != g.Name || len(a.Grants) > len(ids) {
								t.Errorf("%s asked about %v was read in group %s as %+v; the whole user is in %+v", user, ids, gid, a, g)
							}
						}
					}
				}
				for _, all := range []bool{false, true} {
					rs, err := s.resourceFacts(ctx, org, ids)
					must(err)
					decide := engine.Allow
					if all {
						decide = engine.AllowAll
					}
					want, err := decide(ctx, policy.Input{User: whole, ResourceIDs: ids, Resources: rs, Now: clock})
					must(err)
					// As check decides: read for this question, answered by its shape if it
					// has a known one, else from what was read.
					q := s.questionResources(ctx, org, ids)
					u, shaped, err := s.askedUser(ctx, org, user, revision, all, q)
					must(err)
					got := shaped.allowed
					if shaped.ok {
						shapedAnswers++
					} else if got, err = s.answer(ctx, org, engine, revision, &facts{Facts: u}, all, q, clock); err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("at %v, %s (all %v) %v: %v read as asked (by its shape: %v), %v read whole", at.Sub(now), user, all, ids, got, shaped.ok, want)
					}
				}
			}
		}
	}
	// cy's 2, ada's 0 (active) and bea's 0 (inactive) each have a shape, answered by it from
	// the second time on.
	if shapedAnswers != 6 {
		t.Errorf("%d answers were found by their shapes; want 6: cy's 2, ada's 0 and bea's 0, twice each", shapedAnswers)
	}
}

// TestUsersShareResourceIDs: a user read from the store, whole or for a question, keys each of
// their grants, own and through groups, by the cached resource's copy of its id, not by the
// copy read with the grant, so that the many users kept in memory share one copy of each id.
func TestUsersShareResourceIDs(t *testing.T) {
	const org = "org-1"
	ctx := context.Background()
	now := adaNow
	store, id := adaStore(t, now)
	must := fatalOn(t)
	engine := newEngine(t, policy.Embedded())
	s := New(Config{Store: store, Decider: engine, Now: func() time.Time { return now }})
	whole, err := s.loadUser(ctx, org, "ada")()
	must(err)
	asked, _, err := s.askedUser(ctx, org, "ada", "", false, s.questionResources(ctx, org, []string{id(0), id(3)}))
	must(err)
	for name, u := range map[string]*policy.User{"whole": whole, "asked about 0 and 3": asked} {
		keys := slices.Collect(maps.Keys(u.Grants))
		for _, g := range u.Groups {
			keys = slices.AppendSeq(keys, maps.Keys(g.Grants))
		}
		if len(keys) < 2 {
			t.Fatalf("%s: ada was read with grants of %v; want at least an own one and a group's", name, keys)
		}
		for _, k := range keys {
			rs, err := s.resourceFacts(ctx, org, []string{k})
			must(err)
			if unsafe.StringData(k) != unsafe.StringData(rs[k].Intern(k)) {
				t.Errorf("%s: the grant of %s is keyed by a copy of the id of its own", name, k)
			}
		}
	}
}
