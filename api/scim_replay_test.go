package api_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// scimStep is one request of a provider's conversation with Grantry, as recorded in
// testdata/scim/<provider>.json, with what must come back and what it must do to access.
//
// Text of the form {{name}} in path, query, headers, body, response and access is replaced by
// a variable: "model" (a registered model's id) and whatever earlier steps saved. In response,
// "<any>" matches any value that is there and "<absent>" requires the member to be missing;
// every other value must be equal, and objects may have members the response leaves out.
type scimStep struct {
	Name     string            `json:"name"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Query    map[string]string `json:"query"`
	Headers  map[string]string `json:"headers"`
	Body     json.RawMessage   `json:"body"`
	Status   int               `json:"status"`
	Response json.RawMessage   `json:"response"`
	// Save names variables to set from the response: a member path such as "id" or
	// "Resources.0.id".
	Save map[string]string `json:"save"`
	// Grant names a user (after substitution) to be granted the model through the API once
	// the step is done, as an administrator would.
	Grant string `json:"grant"`
	// Access says what POST /provisions/can_user_access must answer for each user named, for
	// the model, once the step is done.
	Access map[string]bool `json:"access"`
}

var scimVar = regexp.MustCompile(`\{\{(\w+)\}\}`)

// expand replaces the variables in s; an unknown one stops the test.
func expand(tb testing.TB, s string, vars map[string]string) string {
	tb.Helper()
	return scimVar.ReplaceAllStringFunc(s, func(m string) string {
		name := scimVar.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			tb.Fatalf("variable %s is not set", name)
		}
		return v
	})
}

// expandJSON replaces the variables in a JSON text, quoting their values for a JSON string.
func expandJSON(tb testing.TB, raw []byte, vars map[string]string) []byte {
	tb.Helper()
	quoted := make(map[string]string, len(vars))
	for k, v := range vars {
		b, _ := json.Marshal(v)
		quoted[k] = string(b[1 : len(b)-1])
	}
	return []byte(expand(tb, string(raw), quoted))
}

// replaySCIM runs the conversation in testdata/scim/<name>.json against a fresh server: the
// organization has a model, and a SCIM integration named after the provider whose token the
// steps use.
func replaySCIM(t *testing.T, name string) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "scim", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []scimStep
	if err := json.Unmarshal(raw, &steps); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	f := newFixture(t)
	_, key := f.org("acme")
	vars := map[string]string{"model": f.model(key, "gpt-4o")}
	_, token := f.scimIntegration(key, name)

	for i, st := range steps {
		ok := t.Run(strconv.Itoa(i+1)+" "+st.Name, func(t *testing.T) {
			target := "/scim/v2" + expand(t, st.Path, vars)
			if len(st.Query) > 0 {
				q := url.Values{}
				for k, v := range st.Query {
					q.Set(k, expand(t, v, vars))
				}
				target += "?" + q.Encode()
			}
			var body []byte
			if len(st.Body) > 0 {
				body = expandJSON(t, st.Body, vars)
			}
			req := httptest.NewRequest(st.Method, target, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "application/scim+json")
			if body != nil {
				req.Header.Set("Content-Type", "application/scim+json; charset=utf-8")
			}
			for k, v := range st.Headers {
				req.Header.Set(k, expand(t, v, vars))
			}
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)

			if rec.Code != st.Status {
				t.Fatalf("%s %s = %d %s, want %d", st.Method, target, rec.Code, rec.Body, st.Status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/scim+json" {
				t.Errorf("Content-Type = %q, want application/scim+json", ct)
			}
			var got any
			if rec.Code != http.StatusNoContent {
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatalf("body %s: %v", rec.Body, err)
				}
			} else if rec.Body.Len() != 0 {
				t.Errorf("204 with a body: %s", rec.Body)
			}
			if rec.Code == http.StatusCreated {
				loc, _ := lookup(got, "meta.location")
				if l := rec.Header().Get("Location"); l == "" || l != loc {
					t.Errorf("Location = %q, want meta.location %v", l, loc)
				}
			}
			if len(st.Response) > 0 {
				var want any
				if err := json.Unmarshal(expandJSON(t, st.Response, vars), &want); err != nil {
					t.Fatalf("response pattern: %v", err)
				}
				for _, problem := range matchJSON(want, got, "") {
					t.Errorf("%s", problem)
				}
				if t.Failed() {
					t.Logf("body: %s", rec.Body)
				}
			}
			for v, path := range st.Save {
				val, ok := lookup(got, path)
				s, isString := val.(string)
				if !ok || !isString {
					t.Fatalf("cannot save %s: the response has no string at %s", v, path)
				}
				vars[v] = s
			}
			if st.Grant != "" {
				f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": expand(t, st.Grant, vars), "svc_id": vars["model"]})
			}
			for user, want := range st.Access {
				if got := f.check(key, expand(t, user, vars), vars["model"]); got != want {
					t.Errorf("can_user_access(%s) = %v, want %v", user, got, want)
				}
			}
		})
		if !ok {
			return
		}
	}
}

// lookup returns the value at a dotted member path ("Resources.0.id") of a decoded JSON value.
func lookup(v any, path string) (any, bool) {
	for part := range strings.SplitSeq(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// matchJSON compares a decoded response with a pattern (see scimStep) and returns every
// difference, each naming where it is.
func matchJSON(want, got any, at string) []string {
	if want == "<any>" {
		if got == nil {
			return []string{at + ": missing, want a value"}
		}
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{at + ": got " + show(got) + ", want an object"}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, present := g[k]
			if w[k] == "<absent>" {
				if present {
					out = append(out, at+"."+k+": got "+show(gv)+", want it absent")
				}
				continue
			}
			if !present {
				out = append(out, at+"."+k+": missing, want "+show(w[k]))
				continue
			}
			out = append(out, matchJSON(w[k], gv, at+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{at + ": got " + show(got) + ", want " + show(want)}
		}
		var out []string
		for i := range w {
			out = append(out, matchJSON(w[i], g[i], at+"."+strconv.Itoa(i))...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{at + ": got " + show(got) + ", want " + show(want)}
	}
	return nil
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// scimIntegration creates a SCIM integration named name with the API key and returns its id
// and its token.
func (f *fixture) scimIntegration(key, name string) (id, token string) {
	f.tb.Helper()
	r := decode[struct {
		AuthIntegration struct{ ID string } `json:"auth_integration"`
		SCIM            struct {
			BaseURL string `json:"base_url"`
			Token   string `json:"token"`
		} `json:"scim"`
	}](f.tb, f.must("POST", "/auth_integration/create", key, map[string]string{"name": name, "type": "scim"}))
	if r.SCIM.BaseURL != "/scim/v2" || !strings.HasPrefix(r.SCIM.Token, "gscim_") {
		f.tb.Fatalf("scim = %+v, want base_url /scim/v2 and a gscim_ token", r.SCIM)
	}
	return r.AuthIntegration.ID, r.SCIM.Token
}

// TestSCIMOkta replays the requests Okta's SCIM 2.0 test suites (the Runscope "Okta SCIM 2.0
// Spec Test" and its CRUD test) and Okta's provisioning send.
func TestSCIMOkta(t *testing.T) { replaySCIM(t, "okta") }

// TestSCIMEntraID replays the requests Microsoft Entra ID's SCIM validator and its
// provisioning service send.
func TestSCIMEntraID(t *testing.T) { replaySCIM(t, "entra") }
