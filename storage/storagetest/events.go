package storagetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// event returns an event of org at time t whose id ids made; the other fields are made from n.
func event(ids *storage.EntryIDs, org string, t time.Time, n int, action, user, svc string) storage.Event {
	e := storage.Event{
		ID: ids.New(t), OrgID: org, Time: t, RequestID: fmt.Sprintf("req-%d", n),
		Actor:  storage.Actor{Kind: storage.ActorAPIKey, ID: fmt.Sprintf("key-%d", n)},
		Action: action, TargetKind: "model", TargetID: svc, UserID: user, SvcID: svc,
		After: json.RawMessage(fmt.Sprintf(`{"n":%d,"name":"model-%d"}`, n, n)),
	}
	if n%2 == 0 {
		e.Before = json.RawMessage(`{"name":"before"}`)
	}
	return e
}

func listEvents(tb testing.TB, s storage.Store, org string, f storage.EventFilter) []storage.Event {
	tb.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	got, err := s.ListEvents(tb.Context(), org, f)
	noErr(tb, fmt.Sprintf("ListEvents(%s, %+v)", org, f), err)
	return got
}

// reversed returns the items of s in the opposite order.
func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func testEvents(t *testing.T, open opener) {
	// withEvents appends, oldest first: e[0..5] in org-1 and one event in org-2 with the same
	// user and resource, so that filters that forget the organization show it.
	withEvents := func(t *testing.T) (storage.Store, []storage.Event, storage.Event) {
		s := open(t)
		var ids storage.EntryIDs
		e := []storage.Event{
			event(&ids, "org-1", at(1), 0, "resource.created", "", rid(1)),
			event(&ids, "org-1", at(2), 1, "grant.created", "u-1", rid(1)),
			event(&ids, "org-1", at(2), 2, "grant.created", "u-2", rid(1)),
			event(&ids, "org-1", ms(3, 1), 3, "grant.created", "u-1", rid(2)),
			event(&ids, "org-1", at(4), 4, "grant.revoked", "u-1", rid(1)),
			event(&ids, "org-1", at(5), 5, "user.updated", "u-1", ""),
		}
		theirs := event(&ids, "org-2", at(3), 9, "grant.created", "u-1", rid(1))
		noErr(t, "AppendEvents", s.AppendEvents(t.Context(), e[:2]))
		noErr(t, "AppendEvents", s.AppendEvents(t.Context(), append([]storage.Event{theirs}, e[2:]...)))
		return s, e, theirs
	}

	t.Run("NewestFirst", func(t *testing.T) {
		s, e, theirs := withEvents(t)
		diff(t, "ListEvents(org-1)", reversed(e), listEvents(t, s, "org-1", storage.EventFilter{}))
		diff(t, "ListEvents(org-2)", []storage.Event{theirs}, listEvents(t, s, "org-2", storage.EventFilter{}))
		diff(t, "ListEvents(org-3)", []storage.Event(nil), listEvents(t, s, "org-3", storage.EventFilter{}), equateEmpty)
	})

	t.Run("Filters", func(t *testing.T) {
		s, e, _ := withEvents(t)
		tests := []struct {
			name string
			f    storage.EventFilter
			want []storage.Event
		}{
			{"user", storage.EventFilter{UserID: "u-1"}, []storage.Event{e[5], e[4], e[3], e[1]}},
			{"resource", storage.EventFilter{SvcID: rid(1)}, []storage.Event{e[4], e[2], e[1], e[0]}},
			{"action", storage.EventFilter{Action: "grant.created"}, []storage.Event{e[3], e[2], e[1]}},
			{"user and resource", storage.EventFilter{UserID: "u-1", SvcID: rid(1)}, []storage.Event{e[4], e[1]}},
			{"user and action", storage.EventFilter{UserID: "u-1", Action: "grant.created"}, []storage.Event{e[3], e[1]}},
			{"resource and action", storage.EventFilter{SvcID: rid(1), Action: "grant.revoked"}, []storage.Event{e[4]}},
			{"since is inclusive", storage.EventFilter{Since: at(2)}, []storage.Event{e[5], e[4], e[3], e[2], e[1]}},
			{"until is exclusive", storage.EventFilter{Until: at(4)}, []storage.Event{e[3], e[2], e[1], e[0]}},
			{"milliseconds count", storage.EventFilter{Since: ms(3, 1), Until: ms(3, 2)}, []storage.Event{e[3]}},
			{"since and until", storage.EventFilter{Since: at(2), Until: at(3)}, []storage.Event{e[2], e[1]}},
			{"user in a time range", storage.EventFilter{UserID: "u-1", Since: at(3), Until: at(5)}, []storage.Event{e[4], e[3]}},
			{"empty range", storage.EventFilter{Since: at(4), Until: at(4)}, nil},
			{"unknown user", storage.EventFilter{UserID: "u-8"}, nil},
			{"limit", storage.EventFilter{Limit: 2}, []storage.Event{e[5], e[4]}},
			{"limit with a filter", storage.EventFilter{SvcID: rid(1), Limit: 1}, []storage.Event{e[4]}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				diff(t, "ListEvents", tt.want, listEvents(t, s, "org-1", tt.f), equateEmpty)
			})
		}
	})

	t.Run("Paging", func(t *testing.T) {
		s, e, _ := withEvents(t)
		tests := []struct {
			name string
			f    storage.EventFilter
			want []storage.Event
		}{
			{"everything", storage.EventFilter{}, reversed(e)},
			{"user", storage.EventFilter{UserID: "u-1"}, []storage.Event{e[5], e[4], e[3], e[1]}},
			{"resource", storage.EventFilter{SvcID: rid(1)}, []storage.Event{e[4], e[2], e[1], e[0]}},
			{"until", storage.EventFilter{Until: at(5)}, []storage.Event{e[4], e[3], e[2], e[1], e[0]}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var got []storage.Event
				f := tt.f
				f.Limit = 2
				for range len(e) {
					page := listEvents(t, s, "org-1", f)
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

	t.Run("SameMillisecondInOrderOfIDs", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		var e []storage.Event
		for n := range 5 {
			e = append(e, event(&ids, "org-1", at(1), n, "grant.created", "u-1", rid(n)))
		}
		// Appended out of order: the ids, not the order of appending, decide.
		noErr(t, "AppendEvents", s.AppendEvents(t.Context(), []storage.Event{e[3], e[0], e[4], e[2], e[1]}))
		diff(t, "ListEvents", reversed(e), listEvents(t, s, "org-1", storage.EventFilter{}))
	})

	t.Run("AppendAgainKeepsTheFirst", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		e := event(&ids, "org-1", at(1), 1, "grant.created", "u-1", rid(1))
		noErr(t, "AppendEvents", s.AppendEvents(t.Context(), []storage.Event{e}))
		changed := e
		changed.Action = "grant.revoked"
		other := event(&ids, "org-1", at(2), 2, "grant.created", "u-1", rid(2))
		noErr(t, "AppendEvents again", s.AppendEvents(t.Context(), []storage.Event{changed, other}))
		diff(t, "ListEvents", []storage.Event{other, e}, listEvents(t, s, "org-1", storage.EventFilter{}))
	})

	t.Run("InvalidID", func(t *testing.T) {
		s := open(t)
		var ids storage.EntryIDs
		good := event(&ids, "org-1", at(1), 1, "grant.created", "u-1", rid(1))
		bad := good
		bad.ID = ids.New(at(2)) // made for another time
		wantErr(t, "AppendEvents(id of another time)", s.AppendEvents(t.Context(), []storage.Event{bad}), storage.ErrInvalidID)
		bad.ID = "not-an-id"
		wantErr(t, "AppendEvents(made-up id)", s.AppendEvents(t.Context(), []storage.Event{good, bad}), storage.ErrInvalidID)
		diff(t, "ListEvents", []storage.Event(nil), listEvents(t, s, "org-1", storage.EventFilter{}), equateEmpty)
	})
}
