package policy

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The parts of a test's policy input, written as the input is documented.

// grant is one grant of a resource_list: its resource's name, and its expiry (zero: never).
type grant struct {
	name    string
	expires time.Time
}

// group is one of a user's groups.
type group struct {
	name   string
	grants map[string]grant
}

// nanos is t in Unix nanoseconds, held at the bounds of an int64 as Grantry holds it (an
// expiry in the year 9999).
func nanos(t time.Time) json.Number {
	n := t.UnixNano()
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		n = math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		n = math.MinInt64
	}
	return json.Number(strconv.FormatInt(n, 10))
}

func resourceList(grants map[string]grant) map[string]any {
	out := map[string]any{}
	for id, g := range grants {
		v := map[string]any{"name": g.name}
		if !g.expires.IsZero() {
			v["expires_at"] = nanos(g.expires)
		}
		out[id] = v
	}
	return out
}

// user is input.user.
func user(id string, active bool, grants map[string]grant, groups map[string]group) map[string]any {
	gs := map[string]any{}
	for gid, g := range groups {
		gs[gid] = map[string]any{"name": g.name, "resource_list": resourceList(g.grants)}
	}
	return map[string]any{"id": id, "active": active, "resource_list": resourceList(grants), "groups": gs}
}

// input is the input of a question about ids, of which resources exist (by id: kind and name),
// asked about u (nil: no such user) at now (zero: no time).
func input(tb testing.TB, u map[string]any, ids []string, resources map[string][2]string, now time.Time) ast.Value {
	tb.Helper()
	rs := map[string]any{}
	for _, id := range ids {
		if r, ok := resources[id]; ok {
			rs[id] = map[string]any{"kind": r[0], "name": r[1]}
		}
	}
	in := map[string]any{"resource_ids": ids, "resources": rs}
	if u != nil {
		in["user"] = u
	}
	if !now.IsZero() {
		in["now"] = nanos(now)
	}
	v, err := ast.InterfaceToValue(in)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// nanosT is t as the input holds a time.
func nanosT(t time.Time) *ast.Term { return ast.NumberTerm(nanos(t)) }
