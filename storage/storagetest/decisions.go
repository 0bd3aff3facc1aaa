package storagetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// decision returns a decision of org at time t about resources, whose id ids made.
func decision(ids *storage.EntryIDs, org string, t time.Time, n int, user string, allowed bool, resources ...string) storage.Decision {
	endpoint := "can_user_access"
	if len(resources) > 1 {
		endpoint = "can_user_access_all"
	}
	return storage.Decision{
		ID: ids.New(t), OrgID: org, Time: t, RequestID: fmt.Sprintf("req-%d", n), APIKeyID: fmt.Sprintf("key-%d", n),
		Endpoint: endpoint, UserID: user, ResourceIDs: resources, Allowed: allowed,
		PolicyRevision: fmt.Sprintf("%064x", n), Duration: time.Duration(n*1000+7) * time.Microsecond,
	}
}

func listDecisions(tb testing.TB, s storage.Store, org string, f storage.DecisionFilter) []storage.Decision {
	tb.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	got, err := s.ListDecisions(tb.Context(), org, f)
	noErr(tb, fmt.Sprintf("ListDecisions(%s, %+v)", org, f), err)
	return got
}

func testDecisions(t *testing.T, open opener) {
	yes, no := true, false
	// withDecisions inserts, oldest first, d[0..5] in org-1 and one decision in org-2 about the
	// same user and resource.
	withDecisions := func(t *testing.T) (storage.Store, []storage.Decision, storage.Decision) {
		s := open(t)
		var ids storage.EntryIDs
		d := []storage.Decision{
			decision(&ids, "org-1", at(1), 0, "u-1", true, rid(1)),
			decision(&ids, "org-1", at(2), 1, "u-2", false, rid(1)),
			decision(&ids, "org-1", at(2), 2, "u-1", false, rid(2), rid(1), rid(3)),
			decision(&ids, "org-1", ms(3, 1), 3, "u-1", true, rid(2)),
			decision(&ids, "org-1", at(4), 4, "u-3", false, rid(4), rid(4)),
			decision(&ids, "org-1", at(5), 5, "u-1", true, rid(1), rid(2)),
		}
		theirs := decision(&ids, "org-2", at(3), 9, "u-1", true, rid(1))
		noErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), d[:3]))
		noErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), append([]storage.Decision{theirs}, d[3:]...)))
		return s, d, theirs
	}

	t.Run("NewestFirst", func(t *testing.T) {
		s, d, theirs := withDecisions(t)
		diff(t, "ListDecisions(org-1)", reversed(d), listDecisions(t, s, "org-1", storage.DecisionFilter{}))
		diff(t, "ListDecisions(org-2)", []storage.Decision{theirs}, listDecisions(t, s, "org-2", storage.DecisionFilter{}))
		diff(t, "ListDecisions(org-3)", []storage.Decision(nil), listDecisions(t, s, "org-3", storage.DecisionFilter{}), equateEmpty)
	})

	t.Run("Filters", func(t *testing.T) {
		s, d, _ := withDecisions(t)
		tests := []struct {
			name string
			f    storage.DecisionFilter
			want []storage.Decision
		}{
			{"user", storage.DecisionFilter{UserID: "u-1"}, []storage.Decision{d[5], d[3], d[2], d[0]}},
			{"resource among several", storage.DecisionFilter{SvcID: rid(1)}, []storage.Decision{d[5], d[2], d[1], d[0]}},
			{"resource asked twice", storage.DecisionFilter{SvcID: rid(4)}, []storage.Decision{d[4]}},
			{"allowed", storage.DecisionFilter{Allowed: &yes}, []storage.Decision{d[5], d[3], d[0]}},
			{"denied", storage.DecisionFilter{Allowed: &no}, []storage.Decision{d[4], d[2], d[1]}},
			{"user and resource", storage.DecisionFilter{UserID: "u-1", SvcID: rid(2)}, []storage.Decision{d[5], d[3], d[2]}},
			{"user, resource, denied", storage.DecisionFilter{UserID: "u-1", SvcID: rid(2), Allowed: &no}, []storage.Decision{d[2]}},
			{"since is inclusive", storage.DecisionFilter{Since: at(2)}, []storage.Decision{d[5], d[4], d[3], d[2], d[1]}},
			{"until is exclusive", storage.DecisionFilter{Until: at(4)}, []storage.Decision{d[3], d[2], d[1], d[0]}},
			{"milliseconds count", storage.DecisionFilter{Since: ms(3, 1), Until: ms(3, 2)}, []storage.Decision{d[3]}},
			{"resource in a time range", storage.DecisionFilter{SvcID: rid(1), Since: at(2), Until: at(5)}, []storage.Decision{d[2], d[1]}},
			{"unknown resource", storage.DecisionFilter{SvcID: rid(8)}, nil},
			{"limit", storage.DecisionFilter{Limit: 2}, []storage.Decision{d[5], d[4]}},
			{"limit with a filter", storage.DecisionFilter{UserID: "u-1", Limit: 3}, []storage.Decision{d[5], d[3], d[2]}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				diff(t, "ListDecisions", tt.want, listDecisions(t, s, "org-1", tt.f), equateEmpty)
			})
		}
	})

	// Ids that JSON escapes, or that appear inside other values, are still filtered exactly.
	t.Run("FilterAwkwardIDs", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		users := []string{`quo"te`, "<b>&amp;", "zoë", "u", "u-1", `back\slash`}
		var d []storage.Decision
		for i, u := range users {
			d = append(d, decision(&ids, "org-1", at(i+1), i, u, true, rid(i)))
		}
		noErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), d))
		for i, u := range users {
			diff(t, "ListDecisions(user "+u+")", []storage.Decision{d[i]}, listDecisions(t, s, "org-1", storage.DecisionFilter{UserID: u}))
			diff(t, "ListDecisions(resource of "+u+")", []storage.Decision{d[i]}, listDecisions(t, s, "org-1", storage.DecisionFilter{SvcID: rid(i)}))
		}
		diff(t, "ListDecisions(user req-1)", []storage.Decision(nil), listDecisions(t, s, "org-1", storage.DecisionFilter{UserID: "req-1"}), equateEmpty)
	})

	t.Run("Paging", func(t *testing.T) {
		s, d, _ := withDecisions(t)
		tests := []struct {
			name string
			f    storage.DecisionFilter
			want []storage.Decision
		}{
			{"everything", storage.DecisionFilter{}, reversed(d)},
			{"user", storage.DecisionFilter{UserID: "u-1"}, []storage.Decision{d[5], d[3], d[2], d[0]}},
			{"resource", storage.DecisionFilter{SvcID: rid(1)}, []storage.Decision{d[5], d[2], d[1], d[0]}},
			{"denied since", storage.DecisionFilter{Allowed: &no, Since: at(2)}, []storage.Decision{d[4], d[2], d[1]}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var got []storage.Decision
				f := tt.f
				f.Limit = 2
				for range len(d) {
					page := listDecisions(t, s, "org-1", f)
					got = append(got, page...)
					if len(page) < f.Limit {
						break
					}
					f.Cursor = page[len(page)-1].ID
				}
				diff(t, "pages", tt.want, got)
			})
		}
	})

	t.Run("DeleteBefore", func(t *testing.T) {
		s, d, _ := withDecisions(t)
		n, err := s.DeleteDecisionsBefore(t.Context(), ms(3, 1))
		noErr(t, "DeleteDecisionsBefore", err)
		if n != 4 {
			t.Errorf("DeleteDecisionsBefore removed %d decisions, want 4 (three of org-1, one of org-2)", n)
		}
		diff(t, "ListDecisions(org-1)", []storage.Decision{d[5], d[4], d[3]}, listDecisions(t, s, "org-1", storage.DecisionFilter{}))
		diff(t, "ListDecisions(org-2)", []storage.Decision(nil), listDecisions(t, s, "org-2", storage.DecisionFilter{}), equateEmpty)
		// Filtered lists forget them too.
		diff(t, "ListDecisions(org-1, resource)", []storage.Decision{d[5]}, listDecisions(t, s, "org-1", storage.DecisionFilter{SvcID: rid(1)}))
		diff(t, "ListDecisions(org-1, user)", []storage.Decision{d[5], d[3]}, listDecisions(t, s, "org-1", storage.DecisionFilter{UserID: "u-1"}))

		n, err = s.DeleteDecisionsBefore(t.Context(), ms(3, 1))
		noErr(t, "DeleteDecisionsBefore again", err)
		if n != 0 {
			t.Errorf("DeleteDecisionsBefore again removed %d decisions, want 0", n)
		}
	})

	t.Run("ManyBatches", func(t *testing.T) {
		// Batches of many decisions, as the decision log writes them: newer ones, one older
		// than all stored (a clock that stepped back), one written again, one that mixes the
		// two, and two organizations in each. Every list, page and deletion must match the
		// decisions sorted by id.
		s := open(t)
		var ids storage.EntryIDs
		var stored []storage.Decision
		batch := func(from, n int) []storage.Decision {
			var b []storage.Decision
			for i := range n {
				org := "org-1"
				if i%5 == 4 {
					org = "org-2"
				}
				b = append(b, decision(&ids, org, ms(from, 10*i), from*1000+i, fmt.Sprintf("u-%d", i%7), i%3 == 0, rid(i), rid(from)))
			}
			return b
		}
		first, second, older := batch(100, 60), batch(200, 60), batch(50, 40)
		later := batch(300, 30)
		for _, b := range [][]storage.Decision{first, second, older, second, append(slices.Clone(first[40:]), later...)} {
			noErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), b))
		}
		stored = slices.Concat(older, first, second, later)
		newestFirst := func(org string, keep func(storage.Decision) bool) []storage.Decision {
			var want []storage.Decision
			for _, d := range stored {
				if d.OrgID == org && keep(d) {
					want = append(want, d)
				}
			}
			slices.SortFunc(want, func(a, b storage.Decision) int { return strings.Compare(b.ID, a.ID) })
			return want
		}
		all := func(storage.Decision) bool { return true }
		for _, org := range []string{"org-1", "org-2"} {
			diff(t, "ListDecisions("+org+")", newestFirst(org, all), listDecisions(t, s, org, storage.DecisionFilter{Limit: 1000}))
			var paged []storage.Decision
			f := storage.DecisionFilter{Limit: 7}
			for range len(stored) {
				page := listDecisions(t, s, org, f)
				paged = append(paged, page...)
				if len(page) < f.Limit {
					break
				}
				f.Cursor = page[len(page)-1].ID
			}
			diff(t, "pages of "+org, newestFirst(org, all), paged)
		}
		windows := []struct{ since, until time.Time }{
			{ms(100, 200), ms(200, 300)}, {ms(50, 10), time.Time{}}, {time.Time{}, ms(100, 1)}, {ms(200, 500), ms(300, 0)}, {ms(60, 0), ms(70, 0)},
		}
		for _, w := range windows {
			in := func(d storage.Decision) bool {
				return (w.since.IsZero() || !d.Time.Before(w.since)) && (w.until.IsZero() || d.Time.Before(w.until))
			}
			diff(t, fmt.Sprintf("ListDecisions(since %v, until %v)", w.since, w.until), newestFirst("org-1", in),
				listDecisions(t, s, "org-1", storage.DecisionFilter{Since: w.since, Until: w.until, Limit: 1000}), equateEmpty)
		}

		cut := ms(100, 255) // in the middle of the first batch
		kept := func(d storage.Decision) bool { return !d.Time.Before(cut) }
		n, err := s.DeleteDecisionsBefore(t.Context(), cut)
		noErr(t, "DeleteDecisionsBefore", err)
		if want := len(stored) - len(newestFirst("org-1", kept)) - len(newestFirst("org-2", kept)); n != want {
			t.Errorf("DeleteDecisionsBefore removed %d decisions, want %d", n, want)
		}
		for _, org := range []string{"org-1", "org-2"} {
			diff(t, "ListDecisions("+org+") after the deletion", newestFirst(org, kept), listDecisions(t, s, org, storage.DecisionFilter{Limit: 1000}))
		}
	})

	t.Run("InsertAgainKeepsTheFirst", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		d := decision(&ids, "org-1", at(1), 1, "u-1", true, rid(1))
		noErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), []storage.Decision{d}))
		changed := d
		changed.Allowed = false
		other := decision(&ids, "org-1", at(2), 2, "u-1", false, rid(2))
		noErr(t, "InsertDecisions again", s.InsertDecisions(t.Context(), []storage.Decision{changed, other}))
		diff(t, "ListDecisions", []storage.Decision{other, d}, listDecisions(t, s, "org-1", storage.DecisionFilter{}))

		// A batch that names one decision twice, in order otherwise: the first is kept.
		third := decision(&ids, "org-1", at(3), 3, "u-1", true, rid(3))
		again := third
		again.Allowed = false
		noErr(t, "InsertDecisions twice in one batch", s.InsertDecisions(t.Context(), []storage.Decision{third, again}))
		diff(t, "ListDecisions after a batch with one id twice", []storage.Decision{third, other, d},
			listDecisions(t, s, "org-1", storage.DecisionFilter{}))
	})

	t.Run("InvalidID", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		bad := decision(&ids, "org-1", at(1), 1, "u-1", true, rid(1))
		bad.ID = ids.New(at(0))
		wantErr(t, "InsertDecisions", s.InsertDecisions(t.Context(), []storage.Decision{bad}), storage.ErrInvalidID)
	})
}
