package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Input is what one decision reads; authz.rego documents its shape. The caller fills it from
// the store, scoped to the caller's organization.
type Input struct {
	// User is nil when the organization has no user with the id asked about.
	User *User
	// ResourceIDs are the resource ids asked about, as sent.
	ResourceIDs []string
	// Resources holds those of ResourceIDs that exist in the organization.
	Resources map[string]Resource
	// Now is the time of the request, input.now: a grant allows only while its expiry is
	// after it. The zero time leaves input.now out, so that no expiring grant allows.
	Now time.Time
}

// User is the part of a user the policy reads. It depends on the store alone, never on the
// time of a request, so that it can be built once and used for many decisions: its OPA value
// is built on its first decision and reused by the next ones, so a User must not be changed
// (or copied) once it has been decided on.
type User struct {
	ID     string
	Active bool
	// Grants maps the id of every resource granted to the user directly to the grant.
	Grants map[string]Grant
	// Groups maps the id of every group the user is a member of to the group, with the
	// group's grants.
	Groups map[string]Group
	// Asked, when not nil, says that Grants and the groups' Grants hold only the grants of
	// these resources: all that allow and allow_all of the shipped policy read of a question
	// about them (Engine.input). Such a user may be decided on only so, about those
	// resources; any other use is an error.
	Asked []string

	once sync.Once
	term atomic.Pointer[ast.Term] // set once, by value

	expiriesOnce sync.Once
	expiries     []time.Time // of every grant that expires, sorted
}

// NextExpiry returns the earliest expiry after now among the user's grants, direct or through
// a group: until then, every decision made about the user at now stays the same. It returns
// the zero time when no grant expires after now. The expiries are sorted once, on first use.
func (u *User) NextExpiry(now time.Time) time.Time {
	u.expiriesOnce.Do(func() {
		add := func(grants map[string]Grant) {
			for _, g := range grants {
				if !g.ExpiresAt.IsZero() {
					u.expiries = append(u.expiries, g.ExpiresAt)
				}
			}
		}
		add(u.Grants)
		for _, g := range u.Groups {
			add(g.Grants)
		}
		slices.SortFunc(u.expiries, time.Time.Compare)
	})
	i, _ := slices.BinarySearchFunc(u.expiries, now, func(e, t time.Time) int {
		if e.After(t) {
			return 1
		}
		return -1
	})
	if i == len(u.expiries) {
		return time.Time{}
	}
	return u.expiries[i]
}

// HeldResources returns, each once, the ids of the resources the user holds a grant on, of
// their own or through a group, live or expired.
func (u *User) HeldResources() []string {
	ids := make([]string, 0, len(u.Grants))
	for id := range u.Grants {
		ids = append(ids, id)
	}
	for _, g := range u.Groups {
		for id := range g.Grants {
			if _, own := u.Grants[id]; !own {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Holds reports whether the user holds a grant on the resource id, of their own or through a
// group, live or expired.
func (u *User) Holds(id string) bool {
	if _, own := u.Grants[id]; own {
		return true
	}
	for _, g := range u.Groups {
		if _, ok := g.Grants[id]; ok {
			return true
		}
	}
	return false
}

// value is the user as an OPA value, built once and kept: a replaced policy reads the whole
// user at every decision.
func (u *User) value() *ast.Term {
	u.once.Do(func() { u.term.Store(u.wholeTerm()) })
	return u.term.Load()
}

// valueOnce is the user as an OPA value, the one value keeps if it has been built, or else one
// built for this use and not kept. Permitted reads the whole user once for the user's set, and
// the set then answers without it: kept, the value was about a quarter of what the check path's
// cache held of a user of 50 grants (BenchmarkCachedUserMemory: 14,152 bytes with it, 10,513
// without).
func (u *User) valueOnce() *ast.Term {
	if t := u.term.Load(); t != nil {
		return t
	}
	return u.wholeTerm()
}

// wholeTerm builds the user as an OPA value, with every grant.
func (u *User) wholeTerm() *ast.Term {
	groups := ast.NewObject()
	for id, g := range u.Groups {
		groups.Insert(ast.StringTerm(id), groupTerm(g.Name, grantsTerm(g.Grants)))
	}
	return u.userTerm(grantsTerm(u.Grants), ast.NewTerm(groups))
}

// valueFor is the user as an OPA value with, of the user's own grants and of each group's, only
// those of the resources ids, which is all that allow and allow_all of the shipped policy read
// of them (Engine.input). Built for one decision and not kept, it costs a few inserts where the
// whole value costs one per grant, for a user decided on once (as most of a large
// organization's users are, each time they drop out of the check path's cache). Once the whole
// value has been built it is returned instead.
func (u *User) valueFor(ids []string) *ast.Term {
	if t := u.term.Load(); t != nil {
		return t
	}
	groups := ast.NewObject()
	for id, g := range u.Groups {
		groups.Insert(ast.StringTerm(id), groupTerm(g.Name, grantsOf(g.Grants, ids)))
	}
	return u.userTerm(grantsOf(u.Grants, ids), ast.NewTerm(groups))
}

// userTerm is the user with resource_list and groups as given.
func (u *User) userTerm(resourceList, groups *ast.Term) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.StringTerm("id"), ast.StringTerm(u.ID)),
		ast.Item(ast.StringTerm("active"), ast.BooleanTerm(u.Active)),
		ast.Item(ast.StringTerm("resource_list"), resourceList),
		ast.Item(ast.StringTerm("groups"), groups),
	)
}

// groupTerm is one group of input.user.groups.
func groupTerm(name string, resourceList *ast.Term) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.StringTerm("name"), ast.StringTerm(name)),
		ast.Item(ast.StringTerm("resource_list"), resourceList),
	)
}

// Grant is one grant of a resource, to a user or to a group, as the policy reads it.
type Grant struct {
	// Name is the name of the resource granted.
	Name string
	// ExpiresAt is when the grant stops allowing; zero means never.
	ExpiresAt time.Time

	term *ast.Term // the grant as an OPA value, shared by every grant of the resource; or nil
	key  *ast.Term // the resource's id as an OPA value, shared likewise; or nil
}

// Group is a group of users as the policy reads it.
type Group struct {
	Name string
	// Grants maps the id of every resource granted to the group to the grant.
	Grants map[string]Grant
}

// Resource is the part of a registered resource the policy reads. A Resource made by
// NewResource carries its OPA values, built once; one made as a literal has them built on
// each use.
type Resource struct {
	Kind string
	Name string

	key   *ast.Term // the resource's id as an OPA value
	term  *ast.Term // as input.resources holds it
	grant *ast.Term // a grant of it that never expires, as resource_list holds it
	asked *ast.Term // input.resource_ids when it alone is asked about: [id]
	found *ast.Term // input.resources when it alone is asked about: {id: term}
}

// NewResource returns the resource id with its OPA values built, so that the many users and
// decisions that read it share them instead of building their own.
func NewResource(id, kind, name string) Resource {
	r := Resource{Kind: kind, Name: name, key: ast.StringTerm(id)}
	r.term, r.grant = r.resourceTerm(), grantTerm(name, time.Time{})
	r.asked = ast.ArrayTerm(r.key)
	r.found = ast.NewTerm(ast.NewObject(ast.Item(r.key, r.term)))
	return r
}

// Intern returns id, as the resource's own copy of it when r was made by NewResource for id:
// the grants of the many users holding the resource, keyed by it, then share one copy of the id
// instead of each keeping the one read with the grant from the store, about a sixth of what
// the check path's cache held of a user (BenchmarkCachedUserMemory).
func (r Resource) Intern(id string) string {
	if isString(r.key, id) {
		return string(r.key.Value.(ast.String))
	}
	return id
}

// Grant returns a grant of the resource that expires at expiresAt (zero: never), sharing the
// resource's OPA value when it never expires.
func (r Resource) Grant(expiresAt time.Time) Grant {
	g := Grant{Name: r.Name, ExpiresAt: expiresAt, key: r.key}
	if expiresAt.IsZero() {
		g.term = r.grant
	}
	return g
}

func (r Resource) resourceTerm() *ast.Term {
	if r.term != nil {
		return r.term
	}
	return ast.ObjectTerm(
		ast.Item(ast.StringTerm("kind"), ast.StringTerm(r.Kind)),
		ast.Item(ast.StringTerm("name"), ast.StringTerm(r.Name)),
	)
}

// The keys of the input object, shared by every input.
var (
	keyResourceIDs = ast.StringTerm("resource_ids")
	keyResources   = ast.StringTerm("resources")
	keyNow         = ast.StringTerm("now")
	keyUser        = ast.StringTerm("user")
)

// whole returns an error if in's user holds only the grants of some resources (User.Asked),
// which only allow and allow_all of the shipped policy may read.
func (in Input) whole() error {
	if in.User != nil && in.User.Asked != nil {
		return fmt.Errorf("user %s was read with the grants of %d resources, not all of them", in.User.ID, len(in.User.Asked))
	}
	return nil
}

// value builds the input as an OPA value directly, which costs far less than encoding JSON and
// having OPA parse it again. The usual question, about one resource that exists, reads the
// values its Resource holds.
func (in Input) value() ast.Value { return in.with((*User).value) }

// valueOnce is value with the user's value not kept (User.valueOnce).
func (in Input) valueOnce() ast.Value { return in.with((*User).valueOnce) }

// valueAsked is value with only the user's grants of the resources asked about (valueFor).
func (in Input) valueAsked() ast.Value {
	return in.with(func(u *User) *ast.Term { return u.valueFor(in.ResourceIDs) })
}

// with is the input with the user as user makes it.
func (in Input) with(user func(*User) *ast.Term) ast.Value {
	ids, resources := in.asked()
	obj := ast.NewObject(ast.Item(keyResourceIDs, ids), ast.Item(keyResources, resources))
	if !in.Now.IsZero() {
		obj.Insert(keyNow, nanosTerm(in.Now))
	}
	if in.User != nil {
		obj.Insert(keyUser, user(in.User))
	}
	return obj
}

// asked returns input.resource_ids and input.resources.
func (in Input) asked() (ids, resources *ast.Term) {
	if len(in.ResourceIDs) == 1 && len(in.Resources) == 1 {
		id := in.ResourceIDs[0]
		if r := in.Resources[id]; isString(r.key, id) { // made by NewResource, for this id
			return r.asked, r.found
		}
	}
	terms := make([]*ast.Term, len(in.ResourceIDs))
	for i, id := range in.ResourceIDs {
		terms[i] = ast.StringTerm(id)
	}
	found := ast.NewObject()
	for id, r := range in.Resources {
		found.Insert(ast.StringTerm(id), r.resourceTerm())
	}
	return ast.ArrayTerm(terms...), ast.NewTerm(found)
}

// grantsTerm is a resource_list: {"<id>": {"name": "...", "expires_at": <ns>}}, without
// expires_at for a grant that never expires.
func grantsTerm(grants map[string]Grant) *ast.Term {
	list := ast.NewObjectWithCapacity(len(grants))
	for id, g := range grants {
		list.Insert(g.terms(id))
	}
	return ast.NewTerm(list)
}

// grantsOf is the resource_list of those of grants that are of the resources ids.
func grantsOf(grants map[string]Grant, ids []string) *ast.Term {
	list := ast.NewObjectWithCapacity(min(len(ids), len(grants)))
	for _, id := range ids {
		if g, ok := grants[id]; ok {
			list.Insert(g.terms(id))
		}
	}
	return ast.NewTerm(list)
}

// terms is the grant, of the resource id, as an item of a resource_list: the shared values of
// a grant made by Resource.Grant, or values built now.
func (g Grant) terms(id string) (key, grant *ast.Term) {
	key, grant = g.key, g.term
	if grant == nil {
		grant = grantTerm(g.Name, g.ExpiresAt)
	}
	if !isString(key, id) {
		key = ast.StringTerm(id)
	}
	return key, grant
}

// isString reports whether term is the string id: a Resource or Grant made as a literal has no
// key, and one of a resource held under another id has the wrong one.
func isString(term *ast.Term, id string) bool {
	if term == nil {
		return false
	}
	s, ok := term.Value.(ast.String)
	return ok && string(s) == id
}

// grantTerm is one grant of resource_list: {"name": "...", "expires_at": <ns>}, without
// expires_at when expiresAt is zero.
func grantTerm(name string, expiresAt time.Time) *ast.Term {
	grant := ast.NewObject(ast.Item(ast.StringTerm("name"), ast.StringTerm(name)))
	if !expiresAt.IsZero() {
		grant.Insert(ast.StringTerm("expires_at"), nanosTerm(expiresAt))
	}
	return ast.NewTerm(grant)
}

// The times Unix nanoseconds can hold in an int64: from 1677 to 2262.
var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// nanosTerm is t in Unix nanoseconds, so that Rego compares times as numbers. A time beyond
// what an int64 holds (an expiry in the year 9999) is held at the nearest bound, which keeps
// every comparison with a request time right.
func nanosTerm(t time.Time) *ast.Term {
	n := t.UnixNano()
	switch {
	case t.Before(minNanos):
		n = math.MinInt64
	case t.After(maxNanos):
		n = math.MaxInt64
	}
	return ast.NumberTerm(json.Number(strconv.FormatInt(n, 10)))
}
