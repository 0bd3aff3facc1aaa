package storagetest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/grantry/grantry/storage"
)

// withIntegrations creates the integrations the user tests import through: "int-1" (okta) and
// "int-2" (google) in org-1, "int-9" (okta) in org-2.
func withIntegrations(tb testing.TB, s storage.Store) {
	tb.Helper()
	createIntegration(tb, s, "org-1", "int-1", "okta", at(0))
	createIntegration(tb, s, "org-1", "int-2", "google", at(0))
	createIntegration(tb, s, "org-2", "int-9", "okta", at(0))
}

// newUser is the user that importing item for the first time through org-1's int-1 at now
// must store, with id as its ID.
func newUser(id string, item storage.UserImport, now time.Time) storage.User {
	return storage.User{
		OrgID: "org-1", ID: id, Email: item.Email, First: item.First, Last: item.Last, Active: true,
		IntegrationID: "int-1", IntegrationName: "okta", ImportedAt: now, ModifiedAt: now,
	}
}

// checkUsers compares the organization's users, by ListUsers and by GetUser, with want, which is
// in ListUsers order.
func checkUsers(tb testing.TB, s storage.Store, org string, want []storage.User) {
	tb.Helper()
	list, err := s.ListUsers(tb.Context(), org)
	noErr(tb, "ListUsers("+org+")", err)
	diff(tb, "ListUsers("+org+")", want, list, equateEmpty)
	for _, w := range want {
		got, err := s.GetUser(tb.Context(), org, w.ID)
		noErr(tb, "GetUser("+org+", "+w.ID+")", err)
		diff(tb, "GetUser("+org+", "+w.ID+")", w, got)
	}
}

// sortedUsers returns users imported at the same time in ListUsers order, by ID.
func sortedUsers(users ...storage.User) []storage.User {
	return slices.SortedFunc(slices.Values(users), func(a, b storage.User) int {
		return cmp.Or(a.ImportedAt.Compare(b.ImportedAt), cmp.Compare(a.ID, b.ID))
	})
}

func testUsers(t *testing.T, open opener) {
	t.Run("ImportNew", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		now := at(10)
		items := []storage.UserImport{
			{ID: "u-given", Email: "Ann@Example.com", First: "Ann", Last: "Lee"},
			{Email: "bob@example.com", First: "Bob", Last: "Ray"},
			{Email: "cy@example.com", First: "Cy"},
		}
		got := importUsers(t, s, "org-1", "int-1", now, items...)
		for _, u := range got[1:] {
			if !uuidText.MatchString(u.ID) {
				t.Errorf("new user's ID = %q, want a lowercase hyphenated UUID", u.ID)
			}
		}
		if got[1].ID == got[2].ID {
			t.Errorf("two new users got the same ID %q", got[1].ID)
		}
		want := []storage.User{
			newUser("u-given", items[0], now),
			newUser(got[1].ID, items[1], now),
			newUser(got[2].ID, items[2], now),
		}
		diff(t, "ImportUsers", want, got)

		// All share ImportedAt, so ListUsers orders them by ID.
		slices.SortFunc(want, func(a, b storage.User) int { return cmp.Compare(a.ID, b.ID) })
		checkUsers(t, s, "org-1", want)
		checkUsers(t, s, "org-2", nil)
	})

	t.Run("Reimport", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		first := storage.UserImport{Email: "Ann@Example.com", First: "Ann", Last: "Lee"}
		user := importUsers(t, s, "org-1", "int-1", at(1), first)[0]
		other := importUsers(t, s, "org-1", "int-1", at(1), storage.UserImport{ID: "u-other", Email: "bo@example.com"})[0]

		// Each step re-imports the same person; the user's ID and ImportedAt never change.
		steps := []struct {
			name    string
			item    storage.UserImport
			changed bool
		}{
			{"email in other case, new first name", storage.UserImport{Email: "ann@EXAMPLE.com", First: "Anne", Last: "Lee"}, true},
			{"nothing changed", storage.UserImport{Email: "ann@EXAMPLE.com", First: "Anne", Last: "Lee"}, false},
			{"only the email's case changed", storage.UserImport{Email: "ANN@example.com", First: "Anne", Last: "Lee"}, true},
			{"only the last name changed, with the user's own ID", storage.UserImport{ID: user.ID, Email: "ANN@example.com", First: "Anne", Last: "Li"}, true},
			{"nothing changed, with the user's own ID", storage.UserImport{ID: user.ID, Email: "ANN@example.com", First: "Anne", Last: "Li"}, false},
			{"names emptied", storage.UserImport{Email: "ann@example.com"}, true},
		}
		for i, step := range steps {
			now := at(10 + i)
			want := user
			want.Email, want.First, want.Last = step.item.Email, step.item.First, step.item.Last
			if step.changed {
				want.ModifiedAt = now
			}
			got := importUsers(t, s, "org-1", "int-1", now, step.item)
			diff(t, "ImportUsers("+step.name+")", []storage.User{want}, got)
			checkUsers(t, s, "org-1", []storage.User{want, other})
			user = want
		}
	})

	t.Run("Attributes", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		ann := storage.UserImport{Email: "ann@example.com", First: "Ann",
			Attributes: map[string]string{"title": "Analyst", "department": "Engines", "café": "crème"}}
		user := importUsers(t, s, "org-1", "int-1", at(1), ann)[0]
		want := newUser(user.ID, ann, at(1))
		// The encoding is ImportedAttributes': keys in order, so that it compares as bytes.
		want.Attributes = []byte(`{"café":"crème","department":"Engines","title":"Analyst"}`)
		diff(t, "ImportUsers(new user with attributes)", []storage.User{want}, []storage.User{user})
		none := importUsers(t, s, "org-1", "int-1", at(1), storage.UserImport{ID: "u-none", Email: "bo@example.com", Attributes: map[string]string{}})[0]
		diff(t, "ImportUsers(new user with an empty map)", newUser("u-none", storage.UserImport{Email: "bo@example.com"}, at(1)), none)

		// Each step re-imports Ann: nil attributes keep hers, any map replaces them.
		steps := []struct {
			name    string
			attrs   map[string]string
			stored  string // "" for none
			changed bool
		}{
			{"no attributes keep them", nil, `{"café":"crème","department":"Engines","title":"Analyst"}`, false},
			{"the same attributes", map[string]string{"department": "Engines", "title": "Analyst", "café": "crème"},
				`{"café":"crème","department":"Engines","title":"Analyst"}`, false},
			{"one value changed, one key gone", map[string]string{"department": "Looms", "title": "Analyst"},
				`{"department":"Looms","title":"Analyst"}`, true},
			{"a key in another case is another key", map[string]string{"Department": "Looms", "title": "Analyst"},
				`{"Department":"Looms","title":"Analyst"}`, true},
			{"no attributes again", nil, `{"Department":"Looms","title":"Analyst"}`, false},
			{"an empty map removes them", map[string]string{}, "", true},
			{"an empty map again", map[string]string{}, "", false},
			{"set again", map[string]string{"costCenter": "42"}, `{"costCenter":"42"}`, true},
		}
		for i, step := range steps {
			now := at(10 + i)
			want.Attributes = nil
			if step.stored != "" {
				want.Attributes = []byte(step.stored)
			}
			if step.changed {
				want.ModifiedAt = now
			}
			got := importUsers(t, s, "org-1", "int-1", now, storage.UserImport{Email: "ann@example.com", First: "Ann", Attributes: step.attrs})
			diff(t, "ImportUsers("+step.name+")", []storage.User{want}, got)
			checkUsers(t, s, "org-1", sortedUsers(want, none))
		}

		// Within one call, a later item without attributes keeps an earlier item's.
		got := importUsers(t, s, "org-1", "int-1", at(30),
			storage.UserImport{Email: "ann@example.com", First: "Ann", Attributes: map[string]string{"title": "Lead"}},
			storage.UserImport{Email: "ann@example.com", First: "Ann"},
		)
		want.Attributes, want.ModifiedAt = []byte(`{"title":"Lead"}`), at(30)
		diff(t, "ImportUsers(attributes, then an item without)", []storage.User{want, want}, got)
		checkUsers(t, s, "org-1", sortedUsers(want, none))
	})

	t.Run("IDConflict", func(t *testing.T) {
		tests := []struct {
			name        string
			integration string
			item        storage.UserImport
		}{
			{"matched user has another ID", "int-1", storage.UserImport{ID: "u-3", Email: "A@example.com", First: "Changed"}},
			{"matched user has the ID of another user", "int-1", storage.UserImport{ID: "u-2", Email: "a@example.com", First: "Changed"}},
			{"new user with a taken ID", "int-1", storage.UserImport{ID: "u-1", Email: "c@example.com"}},
			{"new user with an ID taken in another integration", "int-2", storage.UserImport{ID: "u-1", Email: "a@example.com"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				withIntegrations(t, s)
				existing := importUsers(t, s, "org-1", "int-1", at(1),
					storage.UserImport{ID: "u-1", Email: "a@example.com", First: "A"},
					storage.UserImport{ID: "u-2", Email: "b@example.com", First: "B"},
				)
				// The conflict comes last, after items that would write, so that a store that
				// writes as it goes is caught.
				_, err := s.ImportUsers(t.Context(), "org-1", tt.integration, []storage.UserImport{
					{Email: "new@example.com", First: "N"},
					{Email: "b@example.com", First: "B2"},
					tt.item,
				}, at(2))
				wantErr(t, "ImportUsers", err, storage.ErrConflict)
				checkUsers(t, s, "org-1", existing)
			})
		}
	})

	t.Run("SameEmailTwiceInOneCall", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		got := importUsers(t, s, "org-1", "int-1", at(1),
			storage.UserImport{Email: "dup@example.com", First: "First", Last: "One"},
			storage.UserImport{Email: "other@example.com", First: "Other"},
			storage.UserImport{Email: "DUP@example.com", First: "Second", Last: "Two"},
		)
		// One user, with the later item's values; every item's place in the result holds the
		// user as stored at the end of the call.
		dup := newUser(got[0].ID, storage.UserImport{Email: "DUP@example.com", First: "Second", Last: "Two"}, at(1))
		other := newUser(got[1].ID, storage.UserImport{Email: "other@example.com", First: "Other"}, at(1))
		diff(t, "ImportUsers", []storage.User{dup, other, dup}, got)
		want := []storage.User{dup, other}
		slices.SortFunc(want, func(a, b storage.User) int { return cmp.Compare(a.ID, b.ID) })
		checkUsers(t, s, "org-1", want)
	})

	t.Run("IntegrationNotFound", func(t *testing.T) {
		tests := []struct {
			name, org, integration string
		}{
			{"unknown", "org-1", "int-8"},
			{"another org's", "org-1", "int-9"},
			{"another org's, seen from the other side", "org-2", "int-1"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				withIntegrations(t, s)
				_, err := s.ImportUsers(t.Context(), tt.org, tt.integration, []storage.UserImport{
					{ID: "u-1", Email: "a@example.com"}, {Email: "b@example.com"},
				}, at(1))
				wantErr(t, "ImportUsers", err, storage.ErrNotFound)
				checkUsers(t, s, "org-1", nil)
				checkUsers(t, s, "org-2", nil)
			})
		}
	})

	t.Run("SameEmailTwoIntegrations", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		a := importUsers(t, s, "org-1", "int-1", at(1), storage.UserImport{Email: "a@example.com", First: "A1"})[0]
		b := importUsers(t, s, "org-1", "int-2", at(2), storage.UserImport{Email: "A@example.com", First: "A2"})[0]
		if a.ID == b.ID {
			t.Fatalf("the same email in two integrations gave one user %q", a.ID)
		}
		wantB := storage.User{
			OrgID: "org-1", ID: b.ID, Email: "A@example.com", First: "A2", Active: true,
			IntegrationID: "int-2", IntegrationName: "google", ImportedAt: at(2), ModifiedAt: at(2),
		}
		diff(t, "ImportUsers through int-2", wantB, b)

		// A re-import through one integration leaves the other's user alone.
		a = importUsers(t, s, "org-1", "int-1", at(3), storage.UserImport{Email: "a@example.com", First: "A1x"})[0]
		wantA := newUser(a.ID, storage.UserImport{Email: "a@example.com", First: "A1x"}, at(1))
		wantA.ModifiedAt = at(3)
		diff(t, "ImportUsers through int-1", wantA, a)
		checkUsers(t, s, "org-1", []storage.User{wantA, wantB})
	})

	t.Run("SameIDTwoOrgs", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		item := storage.UserImport{ID: "u-1", Email: "a@example.com", First: "A"}
		u1 := importUsers(t, s, "org-1", "int-1", at(1), item)[0]
		item.First = "Other"
		u2 := importUsers(t, s, "org-2", "int-9", at(2), item)[0]
		diff(t, "ImportUsers in org-1", newUser("u-1", storage.UserImport{Email: "a@example.com", First: "A"}, at(1)), u1)
		want2 := storage.User{
			OrgID: "org-2", ID: "u-1", Email: "a@example.com", First: "Other", Active: true,
			IntegrationID: "int-9", IntegrationName: "okta", ImportedAt: at(2), ModifiedAt: at(2),
		}
		diff(t, "ImportUsers in org-2", want2, u2)
		checkUsers(t, s, "org-1", []storage.User{u1})
		checkUsers(t, s, "org-2", []storage.User{want2})
	})

	t.Run("GetNotFound", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		importUsers(t, s, "org-1", "int-1", at(1), storage.UserImport{ID: "u-1", Email: "a@example.com"})
		_, err := s.GetUser(t.Context(), "org-2", "u-1")
		wantErr(t, "GetUser(another org's id)", err, storage.ErrNotFound)
		_, err = s.GetUser(t.Context(), "org-1", "u-2")
		wantErr(t, "GetUser(unknown)", err, storage.ErrNotFound)
		// Users are found by id, not by email.
		_, err = s.GetUser(t.Context(), "org-1", "a@example.com")
		wantErr(t, "GetUser(an email)", err, storage.ErrNotFound)
	})

	t.Run("ListOrder", func(t *testing.T) {
		s := open(t)
		withIntegrations(t, s)
		importUsers(t, s, "org-1", "int-1", at(2),
			storage.UserImport{ID: "u-c", Email: "c@example.com"}, storage.UserImport{ID: "u-a", Email: "a@example.com"})
		importUsers(t, s, "org-1", "int-1", at(1), storage.UserImport{ID: "u-b", Email: "b@example.com"})
		importUsers(t, s, "org-1", "int-2", ms(1, 1), storage.UserImport{ID: "u-d", Email: "d@example.com"})
		// A later change does not move a user: the order is by ImportedAt.
		importUsers(t, s, "org-1", "int-1", at(3), storage.UserImport{Email: "b@example.com", First: "B"})
		importUsers(t, s, "org-2", "int-9", at(0), storage.UserImport{ID: "u-0", Email: "z@example.com"})

		list, err := s.ListUsers(t.Context(), "org-1")
		noErr(t, "ListUsers", err)
		ids := make([]string, len(list))
		for i, u := range list {
			ids[i] = u.ID
		}
		diff(t, "ListUsers ids", []string{"u-b", "u-d", "u-a", "u-c"}, ids)
		list, err = s.ListUsers(t.Context(), "org-3")
		noErr(t, "ListUsers(unknown org)", err)
		diff(t, "ListUsers(unknown org)", []storage.User(nil), list, equateEmpty)
	})
}
