package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

type reversePage struct {
	Users []struct {
		ID    string   `json:"id"`
		Email string   `json:"email"`
		Via   []string `json:"via"`
	} `json:"users"`
	NextCursor *string `json:"next_cursor"`
}

// importIDs imports users with the given ids through one new integration.
func (f *fixture) importIDs(key, integration string, ids ...string) {
	f.tb.Helper()
	integ := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
	}](f.tb, f.must("POST", "/auth_integration/create", key, map[string]string{"name": integration}))
	users := make([]map[string]string, len(ids))
	for i, id := range ids {
		users[i] = map[string]string{"id": id, "email": id + "@acme.test"}
	}
	f.must("POST", "/users/import", key, map[string]any{"auth_integration_id": integ.AuthIntegration.ID, "users": users})
}

// usersWithAccess reads every page of the reverse lookup, limit users at a time, calling
// between after each page but the last.
func (f *fixture) usersWithAccess(key, svcID string, limit int, between func(page int)) (ids []string, pages int) {
	f.tb.Helper()
	cursor := ""
	for {
		q := url.Values{"svc_id": {svcID}, "limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		p := decode[reversePage](f.tb, f.must("GET", "/provisions/users_with_access?"+q.Encode(), key, nil))
		pages++
		if len(p.Users) > limit {
			f.tb.Fatalf("page %d holds %d users, over the limit %d", pages, len(p.Users), limit)
		}
		for _, u := range p.Users {
			ids = append(ids, u.ID)
		}
		if p.NextCursor == nil {
			return ids, pages
		}
		cursor = *p.NextCursor
		if between != nil {
			between(pages)
		}
	}
}

// TestUsersWithAccess: the reverse lookup lists exactly the users the check allows, direct and
// through groups, saying through what, a page at a time, each user once.
func TestUsersWithAccess(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model, other := f.model(key, "gpt"), f.model(key, "llama")
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("u-%02d", i))
	}
	f.importIDs(key, "directory", ids...)
	grant := func(user string, extra ...string) {
		body := map[string]string{"user_id": user, "svc_id": model}
		if len(extra) > 0 {
			body["expires_at"] = extra[0]
		}
		f.must("POST", "/provisions/add_to_user", key, body)
	}
	for i := 0; i < 30; i += 3 {
		grant(ids[i])
	}
	grant(ids[1], "2026-11-22T09:31:00Z") // expires a minute from now
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": ids[2], "svc_id": other})
	eng, ops := f.group(key, "Engineering"), f.group(key, "Ops")
	for _, i := range []int{3, 4, 5, 7} {
		f.addMember(key, eng, ids[i])
	}
	f.addMember(key, ops, ids[4])
	f.grantGroup(key, eng, model)
	f.grantGroup(key, ops, model)
	// A deactivated user keeps the grant but may not use it, so is not listed.
	_, token := f.scimIntegration(key, "okta")
	gone := f.scimUser(token, "gone@acme.test")
	grant(gone)
	if r := f.scimDo("PATCH", "/scim/v2/Users/"+gone, token, patchInactive); r.Status != http.StatusOK {
		t.Fatalf("deactivate = %d %s", r.Status, r.Body)
	}

	want := func() []string {
		var out []string
		for _, id := range append(slices.Clone(ids), gone) {
			if f.check(key, id, model) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	first := decode[reversePage](t, f.must("GET", "/provisions/users_with_access?svc_id="+model+"&limit=5", key, nil))
	jsonEqual(t, []byte(show(first.Users)), `[
		{"id":"u-00","email":"u-00@acme.test","via":["direct"]},
		{"id":"u-01","email":"u-01@acme.test","via":["direct"]},
		{"id":"u-03","email":"u-03@acme.test","via":["direct","group:`+eng+`"]},
		{"id":"u-04","email":"u-04@acme.test","via":[`+quoteSorted("group:"+eng, "group:"+ops)+`]},
		{"id":"u-05","email":"u-05@acme.test","via":["group:`+eng+`"]}]`)

	for _, limit := range []int{1, 4, 7, 1000} {
		got, pages := f.usersWithAccess(key, model, limit, nil)
		if show(got) != show(want()) {
			t.Errorf("limit %d: users = %v, want %v", limit, got, want())
		}
		if limit == 4 && pages != 4 { // 14 users
			t.Errorf("limit 4: %d pages, want 4", pages)
		}
	}

	// An expired grant no longer counts.
	f.clock.Advance(time.Minute)
	if got, _ := f.usersWithAccess(key, model, 100, nil); slices.Contains(got, ids[1]) {
		t.Errorf("users = %v: u-01's grant has expired", got)
	}

	// Changes between pages: every user whose access held all along is listed once, none twice.
	steady := want()
	got, _ := f.usersWithAccess(key, model, 3, func(page int) {
		switch page {
		case 1: // behind the cursor, then ahead of it
			grant(ids[2])
			grant(ids[29])
			f.addMember(key, eng, ids[8])
		case 2:
			f.must("POST", "/provisions/remove_from_user", key, map[string]string{"user_id": ids[27], "svc_id": model})
			f.must("POST", "/groups/remove_member", key, map[string]string{"group_id": eng, "user_id": ids[5]})
		}
	})
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("u %s listed twice in %v", id, got)
		}
		seen[id] = true
	}
	for _, id := range steady {
		if id != ids[27] && id != ids[5] && !seen[id] {
			t.Errorf("%s, whose access held all along, is missing from %v", id, got)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("users %v are not in id order", got)
	}
}

func quoteSorted(s ...string) string {
	slices.Sort(s)
	return show(s)[1 : len(show(s))-1]
}

func TestUsersWithAccessQuery(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model, other := f.model(key, "gpt"), f.model(key, "llama")
	f.importIDs(key, "directory", "u-1", "u-2")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "u-1", "svc_id": model})
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": "u-2", "svc_id": model})
	cursor := *decode[reversePage](t, f.must("GET", "/provisions/users_with_access?svc_id="+model+"&limit=1", key, nil)).NextCursor

	badCursor := `{"loc":["query","cursor"],"msg":"Value error, the cursor is not one this list gave for this resource and these credentials","type":"value_error"}`
	tests := []struct {
		name, query string
		want        string
	}{
		{"no svc_id", "", `[{"loc":["query","svc_id"],"msg":"Field required","type":"missing"}]`},
		{"svc_id not a uuid", "svc_id=x", `[{"loc":["query","svc_id"],"msg":"Input should be a valid UUID","type":"uuid_parsing"}]`},
		{"limit 0", "svc_id=" + model + "&limit=0", `[{"loc":["query","limit"],"msg":"Input should be greater than or equal to 1","type":"greater_than_equal"}]`},
		{"limit too large", "svc_id=" + model + "&limit=1001", `[{"loc":["query","limit"],"msg":"Input should be less than or equal to 1000","type":"less_than_equal"}]`},
		{"limit not a number", "svc_id=" + model + "&limit=ten", `[{"loc":["query","limit"],"msg":"Input should be a valid integer, unable to parse string as an integer","type":"int_parsing"}]`},
		{"cursor made up", "svc_id=" + model + "&cursor=abc", `[` + badCursor + `]`},
		{"cursor of another resource", "svc_id=" + other + "&cursor=" + cursor, `[` + badCursor + `]`},
		{"every problem", "limit=-1&cursor=x", `[{"loc":["query","svc_id"],"msg":"Field required","type":"missing"},
			{"loc":["query","limit"],"msg":"Input should be greater than or equal to 1","type":"greater_than_equal"},` + badCursor + `]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("GET", "/provisions/users_with_access?"+tc.query, key, nil)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, `{"detail":`+tc.want+`}`)
		})
	}
	r := f.do("GET", "/provisions/users_with_access?svc_id=00000000-0000-4000-8000-000000000000", key, nil)
	if r.Status != http.StatusNotFound {
		t.Fatalf("unknown resource = %d %s, want 404", r.Status, r.Body)
	}
	jsonEqual(t, r.Body, `{"detail":"Resource not found."}`)
	jsonEqual(t, f.must("GET", "/provisions/users_with_access?svc_id="+other, key, nil).Body, `{"users":[],"next_cursor":null}`)
	second := decode[reversePage](t, f.must("GET", "/provisions/users_with_access?svc_id="+model+"&limit=1&cursor="+cursor, key, nil))
	if len(second.Users) != 1 || second.Users[0].ID != "u-2" || second.NextCursor != nil {
		t.Errorf("second page = %+v, want u-2 and no cursor", second)
	}
}
