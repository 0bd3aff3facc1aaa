package authz

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Question is what one decision is asked: may the organization's user use the resources
// asked about (allow, for exactly one; allow_all, for all of them)?
type Question struct {
	OrgID, UserID string
	// ResourceIDs are the ids asked about, as sent (input.resource_ids).
	ResourceIDs []string
	// All asks allow_all (can_user_access_all) rather than allow (can_user_access).
	All bool
	// APIKeyID is the id of the API key the request was made with (input.request.api_key_id).
	APIKeyID string
	// Now is the time of the request (input.now).
	Now time.Time
}

// view is the policy's input for one question, over the facts held: a value of it is looked
// at where the policy reads it (the memo's key, a pruned input) instead of the whole input
// being built for every question.
type view struct {
	q      Question
	now    int64
	nowT   *ast.Term // input.now, made when first needed (nowTerm)
	cat    *catalog
	u      *user       // nil: no such user
	groups []*group    // the user's groups, as u.groups orders them; nil where one is gone
	asked  []*resource // by the index of q.ResourceIDs; nil where there is no such resource
}

// views are reused: a view lives for one question, and every check asks one.
var views = sync.Pool{New: func() any { return new(view) }}

// newView returns a view of q's input over the facts given; release gives it back once the
// question is answered.
func newView(q *Question, cat *catalog, u *user, groups []*group) *view {
	v := views.Get().(*view)
	v.q, v.now, v.nowT, v.cat, v.u, v.groups = *q, nanos(q.Now), nil, cat, u, groups
	v.asked = v.asked[:0]
	for _, id := range q.ResourceIDs {
		v.asked = append(v.asked, cat.resources[id])
	}
	return v
}

// release gives v back for another question; nothing may use it after.
func (v *view) release() {
	clear(v.asked)
	*v = view{asked: v.asked[:0]}
	views.Put(v)
}

// nowTerm is input.now.
func (v *view) nowTerm() *ast.Term {
	if v.nowT == nil {
		v.nowT = numberTerm(v.now)
	}
	return v.nowT
}

// kind is what a value of the input is, by where it stands in the input's shape.
type kind uint8

const (
	kAbsent kind = iota
	kBool
	kNumber
	kString
	kRoot      // input
	kUser      // input.user
	kSource    // input.user.source
	kAttrs     // input.user.attributes
	kGrants    // a resource_list
	kGrant     // one grant of a resource_list
	kGroups    // input.user.groups
	kGroup     // one group
	kIDs       // input.resource_ids
	kResources // input.resources
	kResource  // one resource of input.resources
	kRequest   // input.request
)

// value is one value of a view's input: a small struct passed by value, so that looking at
// the input allocates nothing.
type value struct {
	kind kind
	v    *view
	s    string
	n    int64
	b    bool
	gs   grants
	g    grant
	grp  *group
	res  *resource
}

var absent = value{}

func (v *view) str(s string) value   { return value{kind: kString, v: v, s: s} }
func (v *view) boolean(b bool) value { return value{kind: kBool, v: v, b: b} }
func (v *view) number(n int64) value { return value{kind: kNumber, v: v, n: n} }
func (v *view) root() value          { return value{kind: kRoot, v: v} }
func (x value) at(k kind) value      { return value{kind: k, v: x.v} }

// The fields of the input's objects of fixed fields, in key order.
var fieldsOf = map[kind][]string{
	kRoot:     {"now", "request", "resource_ids", "resources", "user"},
	kUser:     {"active", "attributes", "email", "first", "groups", "id", "last", "resource_list", "source"},
	kSource:   {"id", "name", "type"},
	kGrant:    {"expires_at", "name"},
	kGroup:    {"name", "resource_list"},
	kResource: {"integration_type", "kind", "name"},
	kRequest:  {"api_key_id"},
}

// object reports whether x is an object, and array whether it is an array.
func (x value) object() bool { return x.kind >= kRoot && x.kind != kIDs }
func (x value) array() bool  { return x.kind == kIDs }

// get returns x's field key, or absent.
func (x value) get(key string) value {
	v := x.v
	switch x.kind {
	case kRoot:
		switch key {
		case "user":
			if v.u != nil {
				return x.at(kUser)
			}
		case "resource_ids":
			return x.at(kIDs)
		case "resources":
			return x.at(kResources)
		case "now":
			return v.number(v.now)
		case "request":
			return x.at(kRequest)
		}
	case kUser:
		u := v.u
		switch key {
		case "id":
			return v.str(u.id)
		case "active":
			return v.boolean(u.active)
		case "email":
			return v.str(u.email)
		case "first":
			return v.str(u.first)
		case "last":
			return v.str(u.last)
		case "source":
			if u.source != nil {
				return x.at(kSource)
			}
		case "attributes":
			return x.at(kAttrs)
		case "resource_list":
			return value{kind: kGrants, v: v, gs: u.grants}
		case "groups":
			return x.at(kGroups)
		}
	case kSource:
		s := v.u.source
		switch key {
		case "id":
			return v.str(s.id)
		case "name":
			return v.str(s.name)
		case "type":
			return v.str(s.typ)
		}
	case kAttrs:
		attrs := v.u.attrs
		if i, ok := slices.BinarySearchFunc(attrs, key, func(a attr, k string) int { return cmp.Compare(a.key, k) }); ok {
			return v.str(attrs[i].value)
		}
	case kGrants:
		if g, ok := x.gs.find(v.cat.resources[key]); ok {
			return value{kind: kGrant, v: v, g: g}
		}
	case kGrant:
		switch key {
		case "name":
			return v.str(x.g.res.name)
		case "expires_at":
			if x.g.expires != 0 {
				return v.number(x.g.expires)
			}
		}
	case kGroups:
		if i, ok := slices.BinarySearch(v.u.groups, key); ok && v.groups[i] != nil {
			return value{kind: kGroup, v: v, grp: v.groups[i]}
		}
	case kGroup:
		switch key {
		case "name":
			return v.str(x.grp.name)
		case "resource_list":
			return value{kind: kGrants, v: v, gs: x.grp.grants}
		}
	case kResources:
		for i, id := range v.q.ResourceIDs {
			if id == key && v.asked[i] != nil {
				return value{kind: kResource, v: v, res: v.asked[i]}
			}
		}
	case kResource:
		switch key {
		case "kind":
			return v.str(x.res.kind)
		case "name":
			return v.str(x.res.name)
		case "integration_type":
			return v.str(x.res.integration)
		}
	case kRequest:
		if key == "api_key_id" && v.q.APIKeyID != "" {
			return v.str(v.q.APIKeyID)
		}
	}
	return absent
}

// each calls fn with every key and value of the object x in key order, or every element of the
// array x (with an empty key).
func (x value) each(fn func(key string, e value)) {
	v := x.v
	switch x.kind {
	case kIDs:
		for _, id := range v.q.ResourceIDs {
			fn("", v.str(id))
		}
	case kAttrs:
		for _, a := range v.u.attrs {
			fn(a.key, v.str(a.value))
		}
	case kGrants:
		for _, g := range x.gs.byID() {
			fn(g.res.id, value{kind: kGrant, v: v, g: g})
		}
	case kGroups:
		for i, id := range v.u.groups {
			if v.groups[i] != nil {
				fn(id, value{kind: kGroup, v: v, grp: v.groups[i]})
			}
		}
	case kResources:
		for _, id := range v.resourceKeys() {
			fn(id, x.get(id))
		}
	default:
		for _, key := range fieldsOf[x.kind] {
			if e := x.get(key); e.kind != kAbsent {
				fn(key, e)
			}
		}
	}
}

// getAsked returns x's field of the i-th id asked about: get(q.ResourceIDs[i]), with the
// resource it names already found.
func (x value) getAsked(i int) value {
	v := x.v
	switch x.kind {
	case kGrants:
		if g, ok := x.gs.find(v.asked[i]); ok {
			return value{kind: kGrant, v: v, g: g}
		}
		return absent
	case kResources:
		if r := v.asked[i]; r != nil {
			return value{kind: kResource, v: v, res: r}
		}
		return absent
	}
	return x.get(v.q.ResourceIDs[i])
}

// count is how many keys or elements each calls fn with.
func (x value) count() int {
	n := 0
	x.each(func(string, value) { n++ })
	return n
}

// resourceKeys are the keys of input.resources: the ids asked about that exist, each once, in
// order.
func (v *view) resourceKeys() []string {
	ids := make([]string, 0, len(v.asked))
	for i, r := range v.asked {
		if r != nil {
			ids = append(ids, v.q.ResourceIDs[i])
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// term returns x as the policy's input holds it.
func (x value) term() *ast.Term {
	switch x.kind {
	case kBool:
		return ast.BooleanTerm(x.b)
	case kNumber:
		return numberTerm(x.n)
	case kString:
		return ast.StringTerm(x.s)
	case kIDs:
		terms := make([]*ast.Term, len(x.v.q.ResourceIDs))
		for i, id := range x.v.q.ResourceIDs {
			terms[i] = ast.StringTerm(id)
		}
		return ast.ArrayTerm(terms...)
	case kSource:
		return x.v.u.source.term
	case kResource:
		return x.res.term
	case kGrant:
		if x.g.expires == 0 {
			return x.g.res.grant
		}
	case kGrants:
		obj := ast.NewObjectWithCapacity(x.gs.len())
		x.each(func(_ string, e value) { obj.Insert(e.g.res.idTerm, e.term()) })
		return ast.NewTerm(obj)
	}
	obj := ast.NewObject()
	x.each(func(key string, e value) { obj.Insert(ast.StringTerm(key), e.term()) })
	return ast.NewTerm(obj)
}

// input is the whole input of the question.
func (v *view) input() ast.Value { return v.root().term().Value }
