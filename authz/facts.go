package authz

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantry/grantry/internal/scim"
	"github.com/grantry/grantry/storage"
)

// resource is what the policy reads of a registered resource, with the values the policy's
// input holds of it built once and shared by every decision that reads them.
type resource struct {
	id, kind, name, integration string
	// num numbers the resource in its organization's catalog, for grants to be found by
	// (grants.find) without reading the resource's id.
	num uint32
	// gone is set when the resource is removed: a grant of it that a held user still lists
	// allows nothing, as the store, which removed the grant with it, would say.
	gone atomic.Bool

	idTerm *ast.Term // the id, as a key of resource_list and resources
	term   *ast.Term // as input.resources holds it
	grant  *ast.Term // a grant of it that never expires, as resource_list holds it
}

func newResource(r storage.Resource) *resource {
	res := &resource{id: r.ID, kind: string(r.Kind), name: r.Name, integration: r.Source}
	res.idTerm = ast.StringTerm(r.ID)
	res.term = ast.ObjectTerm(
		ast.Item(ast.StringTerm("kind"), ast.StringTerm(res.kind)),
		ast.Item(ast.StringTerm("name"), ast.StringTerm(res.name)),
		ast.Item(ast.StringTerm("integration_type"), ast.StringTerm(res.integration)),
	)
	res.grant = ast.ObjectTerm(ast.Item(ast.StringTerm("name"), ast.StringTerm(res.name)))
	return res
}

// source is an authentication integration as input.user.source holds it.
type source struct {
	id, name, typ string
	term          *ast.Term
}

func newSource(a storage.AuthIntegration) *source {
	typ := a.Type
	if typ == "" {
		typ = storage.IntegrationImport
	}
	s := &source{id: a.ID, name: a.Name, typ: typ}
	s.term = ast.ObjectTerm(
		ast.Item(ast.StringTerm("id"), ast.StringTerm(s.id)),
		ast.Item(ast.StringTerm("name"), ast.StringTerm(s.name)),
		ast.Item(ast.StringTerm("type"), ast.StringTerm(s.typ)),
	)
	return s
}

// catalog is what the policy reads of an organization as a whole: its resources and its
// authentication integrations. It is never changed once made: a change makes a new one.
type catalog struct {
	gen       uint64 // the organization's generation it was read at
	resources map[string]*resource
	sources   map[string]*source
	next      uint32 // the number the next resource added gets

	byName     map[nameKey][]string // the ids of resources by kind and name, made on first need
	byNameOnce sync.Once
}

type nameKey struct{ kind, name string }

// named returns the ids of the catalog's resources of kind named name, sorted: what a gateway
// asks to map a model's name to the resources it may be.
func (c *catalog) named(kind, name string) []string {
	c.byNameOnce.Do(func() {
		c.byName = map[nameKey][]string{}
		for id, r := range c.resources {
			k := nameKey{r.kind, r.name}
			c.byName[k] = append(c.byName[k], id)
		}
		for _, ids := range c.byName {
			slices.Sort(ids)
		}
	})
	return c.byName[nameKey{kind, name}]
}

// withResource returns a copy of c with r added (numbered next), or without the resource id
// when r is nil.
func (c *catalog) withResource(id string, r *resource) *catalog {
	out := &catalog{gen: c.gen, resources: make(map[string]*resource, len(c.resources)+1), sources: c.sources, next: c.next}
	for k, v := range c.resources {
		if k != id {
			out.resources[k] = v
		}
	}
	if r != nil {
		r.num = out.next
		out.next++
		out.resources[id] = r
	}
	return out
}

// withSource returns a copy of c with s added.
func (c *catalog) withSource(s *source) *catalog {
	out := &catalog{gen: c.gen, resources: c.resources, sources: make(map[string]*source, len(c.sources)+1), next: c.next}
	for k, v := range c.sources {
		out.sources[k] = v
	}
	out.sources[s.id] = s
	return out
}

// grant is one grant of a resource, to a user or a group.
type grant struct {
	res     *resource
	expires int64 // Unix nanoseconds; 0: never
}

// live reports whether the grant's resource still exists.
func (g grant) live() bool { return !g.res.gone.Load() }

// grants are a holder's grants: their resources, ordered by number, and when each expires, in
// a slice of its own that is nil when none does, as most grants never do. A million held users
// hold tens of millions of grants, so each costs a pointer, not a struct; the resources are
// few and shared, so a search's reads of their numbers stay in the CPU's cache.
type grants struct {
	res     []*resource
	expires []int64
}

func (gs grants) len() int { return len(gs.res) }

// at returns the i-th grant.
func (gs grants) at(i int) grant {
	g := grant{res: gs.res[i]}
	if gs.expires != nil {
		g.expires = gs.expires[i]
	}
	return g
}

// find returns the grant of the resource r (nil: none), if the holder has one.
func (gs grants) find(r *resource) (grant, bool) {
	if r == nil {
		return grant{}, false
	}
	i, ok := slices.BinarySearchFunc(gs.res, r.num, func(x *resource, n uint32) int { return cmp.Compare(x.num, n) })
	if !ok || gs.res[i] != r || r.gone.Load() {
		return grant{}, false
	}
	return gs.at(i), true
}

// byID returns the live grants ordered by their resources' ids, as an input's object holds
// them.
func (gs grants) byID() []grant {
	out := make([]grant, 0, gs.len())
	for i := range gs.res {
		if g := gs.at(i); g.live() {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b grant) int { return cmp.Compare(a.res.id, b.res.id) })
	return out
}

// grantsOf resolves a holder's grants, as the store read them, against the organization's
// resources; a grant of a resource the catalog does not have is left out, as the policy's input
// leaves it out.
func grantsOf(c *catalog, n int, each func(func(resourceID string, expiresAt time.Time))) grants {
	list := make([]grant, 0, n)
	each(func(id string, expiresAt time.Time) {
		if r, ok := c.resources[id]; ok {
			list = append(list, grant{res: r, expires: nanos(expiresAt)})
		}
	})
	return grantsFrom(list)
}

// grantsFrom returns list as grants: ordered by resource number, each resource once.
func grantsFrom(list []grant) grants {
	slices.SortFunc(list, func(a, b grant) int { return cmp.Compare(a.res.num, b.res.num) })
	list = slices.CompactFunc(list, func(a, b grant) bool { return a.res == b.res })
	gs := grants{res: make([]*resource, len(list))}
	for i, g := range list {
		gs.res[i] = g.res
		if g.expires != 0 && gs.expires == nil {
			gs.expires = make([]int64, len(list))
		}
		if gs.expires != nil {
			gs.expires[i] = g.expires
		}
	}
	return gs
}

// group is what the policy reads of a group: its name and grants.
type group struct {
	name   string
	grants grants
}

// attr is one of a user's attributes.
type attr struct{ key, value string }

// user is what the policy reads of a user.
type user struct {
	id, email, first, last string
	active                 bool
	source                 *source // nil when the user's integration is gone
	attrs                  []attr  // ordered by key
	grants                 grants
	groups                 []string // the ids of the user's groups, ordered
}

// newUser builds a user from their record and own grants, resolved against c.
func newUser(c *catalog, u storage.User, groups []string, n int, each func(func(string, time.Time))) *user {
	out := &user{
		id: u.ID, email: u.Email, first: u.First, last: u.Last, active: u.Active,
		source: c.sources[u.IntegrationID],
		grants: grantsOf(c, n, each),
		groups: slices.Compact(slices.Sorted(slices.Values(groups))),
	}
	typ := ""
	if out.source != nil {
		typ = out.source.typ
	}
	out.attrs = attributesOf(u.Attributes, typ)
	return out
}

// attributesOf returns what input.user.attributes holds of a user's stored attributes: the
// SCIM attributes the policy reads, for a user of a SCIM integration, or the object of strings
// an import gave. The store keeps what Grantry wrote, which always reads; a document that
// does not gives none.
func attributesOf(stored []byte, integrationType string) []attr {
	if len(stored) == 0 {
		return nil
	}
	read := scim.ImportedAttributes
	if integrationType == storage.IntegrationSCIM {
		read = scim.PolicyAttributes
	}
	m, _ := read(stored)
	out := make([]attr, 0, len(m))
	for k, v := range m {
		out = append(out, attr{k, v})
	}
	slices.SortFunc(out, func(a, b attr) int { return cmp.Compare(a.key, b.key) })
	return out
}

// The times Unix nanoseconds can hold in an int64: from 1677 to 2262.
var (
	minNanos = time.Unix(0, math.MinInt64+1)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// nanos is t in Unix nanoseconds, held at the nearest bound beyond what an int64 holds (an
// expiry in the year 9999), which keeps every comparison with a request's time right; 0 for the
// zero time, which means never.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minNanos):
		return math.MinInt64 + 1
	case t.After(maxNanos):
		return math.MaxInt64
	}
	if n := t.UnixNano(); n != 0 {
		return n
	}
	return 1 // the epoch itself, told apart from never
}

// numberTerm is n as the policy's input holds a time.
func numberTerm(n int64) *ast.Term {
	return ast.NumberTerm(json.Number(strconv.FormatInt(n, 10)))
}
