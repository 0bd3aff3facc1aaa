package scim

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/grantry/grantry/internal/jsonstr"
)

// Path is the target of a PATCH operation (RFC 7644 §3.5.2): an attribute path, optionally
// with a value filter that selects values of a multi-valued attribute, and a sub-attribute
// of those values after it, as in `emails[type eq "work"].value`.
type Path struct {
	AttrPath
	// Filter selects values of a multi-valued attribute; nil when the path has none.
	Filter *Filter
}

// ParsePath parses a PATCH path. A malformed one is an *Error of type invalidPath.
func ParsePath(s string) (Path, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		ap, err := ParseAttrPath(s)
		return Path{AttrPath: ap}, err
	}
	ap, err := ParseAttrPath(s[:open])
	if err != nil || ap.Sub != "" {
		return Path{}, errorf(InvalidPath, "%q is not a PATCH path", s)
	}
	end := closingBracket(s, open)
	if end < 0 {
		return Path{}, errorf(InvalidPath, "the value filter of %q is not closed", s)
	}
	f, err := ParseFilter(s[open+1 : end])
	if err != nil {
		return Path{}, errorf(InvalidPath, "the value filter of %q is not valid: %s", s, err.(*Error).Detail)
	}
	if rest := s[end+1:]; rest != "" {
		sub, ok := strings.CutPrefix(rest, ".")
		if !ok || !validName(sub) {
			return Path{}, errorf(InvalidPath, "%q is not a PATCH path", s)
		}
		ap.Sub = sub
	}
	return Path{AttrPath: ap, Filter: f}, nil
}

// closingBracket returns the index of the "]" that closes the "[" at s[open], skipping
// brackets inside quoted strings, or -1.
func closingBracket(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '"':
			end, err := stringEnd(s, i)
			if err != nil {
				return -1
			}
			i = end - 1
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// The operations of a PATCH, lower-cased: Entra ID sends "Add", "Replace" and "Remove".
const (
	OpAdd     = "add"
	OpReplace = "replace"
	OpRemove  = "remove"
)

// Operation is one operation of a PATCH request.
type Operation struct {
	Op string
	// Path is nil when the request gave none (or an empty one): then Value is an object of
	// attributes, as Okta sends {"op":"replace","value":{"active":false}}.
	Path  *Path
	Value any
}

// MaxPatchOperations bounds the operations of one PATCH request, each of which may go over a
// whole multi-valued attribute: providers send one to a few, and a list of members in one.
const MaxPatchOperations = 1000

// ParsePatch decodes a PATCH request body: {"schemas":[PatchOp],"Operations":[…]}. The
// member names "Operations", "op", "path" and "value" are matched without regard to case.
// A body that is not such a message is an *Error of type invalidSyntax; a bad path is
// invalidPath; remove without a path is noTarget; add or replace without a path and without
// an object value, and more than MaxPatchOperations operations, are invalidValue.
func ParsePatch(body []byte) ([]Operation, error) {
	msg, err := DecodeObject(body)
	if err != nil {
		return nil, err
	}
	rawOps, ok := getFold(msg, "Operations").([]any)
	if !ok || len(rawOps) == 0 {
		return nil, errorf(InvalidSyntax, "the PATCH request must have a non-empty Operations list")
	}
	if len(rawOps) > MaxPatchOperations {
		return nil, errorf(InvalidValue, "the PATCH request has %d operations; at most %d are taken", len(rawOps), MaxPatchOperations)
	}
	ops := make([]Operation, 0, len(rawOps))
	for i, raw := range rawOps {
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil, errorf(InvalidSyntax, "operation %d is not an object", i)
		}
		name, _ := getFold(obj, "op").(string)
		op := Operation{Op: strings.ToLower(name), Value: getFold(obj, "value")}
		if op.Op != OpAdd && op.Op != OpReplace && op.Op != OpRemove {
			return nil, errorf(InvalidSyntax, "operation %d: op must be add, replace or remove", i)
		}
		switch path := getFold(obj, "path").(type) {
		case nil:
		case string:
			if path != "" {
				p, err := ParsePath(path)
				if err != nil {
					return nil, err
				}
				op.Path = &p
			}
		default:
			return nil, errorf(InvalidPath, "operation %d: path must be a string", i)
		}
		if op.Path == nil {
			if op.Op == OpRemove {
				return nil, errorf(NoTarget, "operation %d: remove needs a path", i)
			}
			if _, ok := op.Value.(map[string]any); !ok {
				return nil, errorf(InvalidValue, "operation %d: without a path, the value must be an object of attributes", i)
			}
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// DecodeObject decodes a request body that must be one JSON object. Anything else is an
// *Error of type invalidSyntax, and so is text that is not UTF-8 (or a lone surrogate escape),
// which decoding would replace with U+FFFD rather than keep as it was sent.
func DecodeObject(body []byte) (map[string]any, error) {
	if at := jsonstr.InvalidText(body); at >= 0 {
		return nil, errorf(InvalidSyntax, "the request body is not valid UTF-8 at byte %d", at)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errorf(InvalidSyntax, "the request body is not valid JSON")
	}
	if dec.More() {
		return nil, errorf(InvalidSyntax, "the request body holds more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(InvalidSyntax, "the request body is not a JSON object")
	}
	return obj, nil
}

// Build turns the body of a POST or PUT into a resource of type rt, as if each of its
// attributes were replaced into an empty resource: names take their schema's case, values
// are checked against their attribute's type, and what Grantry does not keep is dropped
// (unknown attributes, read-only ones such as id and meta, and the password). A value of the
// wrong type is an *Error of type invalidValue.
func Build(rt *ResourceType, body map[string]any) (map[string]any, error) {
	doc := map[string]any{}
	if err := applyObject(rt, doc, OpReplace, body); err != nil {
		return nil, err
	}
	return doc, nil
}

// Apply applies the operations to doc, a resource of type rt, in order. Operations on
// attributes Grantry does not keep, or on read-only ones (Okta sends the id along), change
// nothing. On error doc may be partly changed; callers apply to a copy.
func Apply(rt *ResourceType, doc map[string]any, ops []Operation) error {
	for _, op := range ops {
		var err error
		if op.Path == nil {
			err = applyObject(rt, doc, op.Op, op.Value.(map[string]any))
		} else {
			err = applyPath(rt, doc, op.Op, *op.Path, op.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applyObject applies a path-less add or replace: each member of value is an operation of its
// own on the attribute it names. A member may be a schema's URN whose value holds that
// schema's attributes, or (as Entra ID sends) an attribute path such as "name.givenName" or
// `emails[type eq "work"].value`. Members that are no attribute path are ignored.
func applyObject(rt *ResourceType, doc map[string]any, op string, value map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(value)) {
		v := value[k]
		if strings.EqualFold(k, rt.Schema.ID) {
			if m, ok := v.(map[string]any); ok {
				if err := applyObject(rt, doc, op, m); err != nil {
					return err
				}
			}
			continue
		}
		p, err := ParsePath(k)
		if err != nil {
			continue
		}
		if err := applyPath(rt, doc, op, p, v); err != nil {
			return err
		}
	}
	return nil
}

// applyPath applies one operation to the attribute p names.
func applyPath(rt *ResourceType, doc map[string]any, op string, p Path, value any) error {
	if p.URN != "" && p.Sub == "" && p.Filter == nil {
		if ext := rt.Extension(p.URN + ":" + p.Attr); ext != nil {
			return applyExtension(rt, doc, op, ext, value)
		}
	}
	schema, a := rt.lookup(p.URN, p.Attr)
	if a == nil || a.Mutability == ReadOnly || a.Mutability == WriteOnly {
		return nil
	}
	container := doc
	if schema != "" {
		ext, _ := doc[schema].(map[string]any)
		if ext == nil {
			if op == OpRemove {
				return nil
			}
			ext = map[string]any{}
		}
		container = ext
		defer func() {
			if len(ext) == 0 {
				delete(doc, schema)
			} else {
				doc[schema] = ext
			}
		}()
	}
	if op != OpRemove && value == nil {
		// A null value unassigns the attribute (RFC 7643 §2.5).
		op = OpRemove
		value = nil
	}
	switch {
	case p.Filter != nil:
		return applyFiltered(container, op, a, p, value)
	case p.Sub != "":
		return applySub(container, op, a, p.Sub, value)
	}
	return applyWhole(container, op, a, value)
}

// applyExtension applies an operation whose path is an extension's URN: its value holds the
// extension's attributes.
func applyExtension(rt *ResourceType, doc map[string]any, op string, ext *Schema, value any) error {
	if op == OpRemove {
		delete(doc, ext.ID)
		return nil
	}
	m, ok := value.(map[string]any)
	if !ok {
		return errorf(InvalidValue, "the value of %s must be an object", ext.ID)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p, err := ParseAttrPath(k)
		if err != nil || p.URN != "" {
			continue
		}
		p.URN = ext.ID
		if err := applyPath(rt, doc, op, Path{AttrPath: p}, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// applyWhole applies an operation to a whole attribute.
func applyWhole(container map[string]any, op string, a *Attribute, value any) error {
	cur := container[a.Name]
	if op == OpRemove {
		if a.MultiValued && value != nil {
			// Entra ID removes members with {"op":"Remove","path":"members","value":[{"value":"<id>"}]}:
			// only the values listed go.
			gone, err := normalize(a, value)
			if err != nil {
				return err
			}
			named := newValueSet(a, asList(gone))
			setOrDelete(container, a.Name, slices.DeleteFunc(slices.Clone(asList(cur)), named.names))
			return nil
		}
		delete(container, a.Name)
		return nil
	}
	nv, err := normalize(a, value)
	if err != nil {
		return err
	}
	switch {
	case nv == nil:
		if op == OpReplace {
			delete(container, a.Name)
		}
	case a.MultiValued && op == OpAdd:
		list := slices.Clone(asList(cur))
		have := map[string]bool{}
		for _, x := range list {
			have[wholeKey(x)] = true
		}
		for _, e := range nv.([]any) {
			if k := wholeKey(e); !have[k] {
				have[k] = true
				list = append(list, e)
			}
		}
		container[a.Name] = onePrimary(list)
	case a.MultiValued:
		container[a.Name] = onePrimary(nv.([]any))
	case a.Type == TypeComplex:
		// RFC 7644 §3.5.2.3: sub-attributes not given are left unchanged, for add and replace;
		// but a new "value" names another thing (the manager), whose old $ref must not stay.
		old, _ := cur.(map[string]any)
		if v, ok := nv.(map[string]any)["value"]; ok && old["value"] != v {
			old = nil
		}
		merged := cloneMap(old)
		for k, v := range nv.(map[string]any) {
			merged[k] = v
		}
		container[a.Name] = merged
	default:
		container[a.Name] = nv
	}
	return nil
}

// applySub applies an operation to a sub-attribute of a complex attribute, or of every value
// of a multi-valued one.
func applySub(container map[string]any, op string, a *Attribute, sub string, value any) error {
	sa := a.Sub(sub)
	if sa == nil || sa.Mutability == ReadOnly {
		return nil
	}
	var nv any
	if op != OpRemove {
		var err error
		if nv, err = normalizeOne(sa, value); err != nil {
			return err
		}
	}
	if a.MultiValued {
		list := slices.Clone(asList(container[a.Name]))
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			list[i] = withSub(m, sa.Name, nv)
		}
		setOrDelete(container, a.Name, list)
		return nil
	}
	if op == OpRemove && container[a.Name] == nil {
		return nil
	}
	m, _ := container[a.Name].(map[string]any)
	setOrDelete(container, a.Name, withSub(m, sa.Name, nv))
	return nil
}

// applyFiltered applies an operation to the values of a multi-valued attribute that its
// value filter selects, or to a sub-attribute of each of them.
func applyFiltered(container map[string]any, op string, a *Attribute, p Path, value any) error {
	if !a.MultiValued || a.Type != TypeComplex {
		return errorf(InvalidPath, "a value filter needs a multi-valued complex attribute, and %s is not one", a.Name)
	}
	var sa *Attribute
	if p.Sub != "" {
		if sa = a.Sub(p.Sub); sa == nil || sa.Mutability == ReadOnly {
			return nil
		}
	}
	list := slices.Clone(asList(container[a.Name]))
	var matched []int
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && p.Filter.root.eval(m, elementScope{a}) {
			matched = append(matched, i)
		}
	}
	if op == OpRemove {
		for j := len(matched) - 1; j >= 0; j-- {
			i := matched[j]
			if sa == nil {
				list = slices.Delete(list, i, i+1)
			} else {
				list[i] = withSub(list[i].(map[string]any), sa.Name, nil)
			}
		}
		setOrDelete(container, a.Name, list)
		return nil
	}
	if len(matched) == 0 {
		// Entra ID replaces `emails[type eq "work"].value` of a user who has no work email
		// yet: the filter's equality makes the new value.
		attr, v, ok := simpleEquality(p.Filter)
		fa := a.Sub(attr)
		if !ok || fa == nil {
			return errorf(NoTarget, "the value filter of %s matches no value", a.Name)
		}
		list = append(list, map[string]any{fa.Name: v})
		matched = []int{len(list) - 1}
	}
	for _, i := range matched {
		m := list[i].(map[string]any)
		if sa != nil {
			nv, err := normalizeOne(sa, value)
			if err != nil {
				return err
			}
			list[i] = withSub(m, sa.Name, nv)
			continue
		}
		nv, err := normalizeOne(a, value)
		if err != nil {
			return err
		}
		nm, _ := nv.(map[string]any)
		if op == OpAdd {
			merged := cloneMap(m)
			for k, v := range nm {
				merged[k] = v
			}
			nm = merged
		}
		list[i] = nm
	}
	setOrDelete(container, a.Name, onePrimary(list))
	return nil
}

// withSub returns a copy of m with sub set to v, or removed when v is nil; nil if nothing
// is left.
func withSub(m map[string]any, sub string, v any) map[string]any {
	out := cloneMap(m)
	if v == nil {
		delete(out, sub)
	} else {
		out[sub] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// setOrDelete stores v as container[name], dropping nil values of a list; an empty list or
// object, or nil, removes the attribute instead.
func setOrDelete(container map[string]any, name string, v any) {
	switch x := v.(type) {
	case []any:
		x = slices.DeleteFunc(x, func(e any) bool {
			m, isMap := e.(map[string]any)
			return e == nil || isMap && len(m) == 0
		})
		if len(x) == 0 {
			delete(container, name)
			return
		}
		container[name] = x
	case map[string]any:
		if len(x) == 0 {
			delete(container, name)
			return
		}
		container[name] = x
	case nil:
		delete(container, name)
	default:
		container[name] = v
	}
}

// onePrimary keeps at most one value marked primary (RFC 7643 §2.4): the last one so marked,
// which is the one most recently written.
func onePrimary(list []any) []any {
	last := -1
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && m["primary"] == true {
			last = i
		}
	}
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && i != last && m["primary"] == true {
			list[i] = withSub(m, "primary", false)
		}
	}
	return list
}

// valueSet is the values of a multi-valued attribute that a removal names: by their "value"
// sub-attribute where it gives one (members are named by id alone), or whole. It is a set, so
// that removing many values from many is not the product of the two.
type valueSet struct {
	fold   bool // "value" is not case-exact
	values map[string]bool
	wholes map[string]bool
}

func newValueSet(a *Attribute, named []any) valueSet {
	vs := valueSet{values: map[string]bool{}, wholes: map[string]bool{}}
	if va := a.Sub("value"); va != nil && !va.CaseExact {
		vs.fold = true
	}
	for _, g := range named {
		if gm, ok := g.(map[string]any); ok && gm["value"] != nil {
			gv, _ := gm["value"].(string)
			vs.values[vs.key(gv)] = true
			continue
		}
		vs.wholes[wholeKey(g)] = true
	}
	return vs
}

func (vs valueSet) key(v string) string {
	if vs.fold {
		return strings.ToLower(v)
	}
	return v
}

// names reports whether the set names e.
func (vs valueSet) names(e any) bool {
	if em, ok := e.(map[string]any); ok && len(vs.values) > 0 {
		ev, _ := em["value"].(string)
		if vs.values[vs.key(ev)] {
			return true
		}
	}
	return len(vs.wholes) > 0 && vs.wholes[wholeKey(e)]
}

// wholeKey is a key that two values share only when they are equal: their JSON, whose objects
// encoding/json writes with sorted keys. Every value here came from JSON, so it encodes.
func wholeKey(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// normalize checks value against attribute a and returns it with canonical names: a list for
// a multi-valued attribute (a single value is taken as a list of one), with empty values left
// out; nil when nothing is left. A single-valued attribute takes a list of one as its one
// value, as Entra ID sends the manager ({"path":"manager","value":[{"value":…,"$ref":…}]}),
// and an empty list as no value.
func normalize(a *Attribute, value any) (any, error) {
	if value == nil {
		return nil, nil
	}
	if !a.MultiValued {
		if list, ok := value.([]any); ok {
			switch len(list) {
			case 0:
				return nil, nil
			case 1:
				value = list[0]
			default:
				return nil, errorf(InvalidValue, "%s takes one value, not a list of %d", a.Name, len(list))
			}
		}
		return normalizeOne(a, value)
	}
	list, ok := value.([]any)
	if !ok {
		list = []any{value}
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		ne, err := normalizeOne(a, e)
		if err != nil {
			return nil, err
		}
		if ne != nil {
			out = append(out, ne)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// normalizeOne checks one value of attribute a. Booleans may come as the strings "True" and
// "False" in any case (Entra ID sends them so); a plain string for a complex attribute that
// has a "value" sub-attribute is taken as that value (Entra ID sends the enterprise manager
// so). Sub-attributes that are unknown or read-only are dropped.
func normalizeOne(a *Attribute, value any) (any, error) {
	switch a.Type {
	case TypeComplex:
		m, ok := value.(map[string]any)
		if !ok {
			if s, isStr := value.(string); isStr && a.Sub("value") != nil {
				m = map[string]any{"value": s}
			} else if value == nil {
				return nil, nil
			} else {
				return nil, errorf(InvalidValue, "%s must be an object", a.Name)
			}
		}
		out := map[string]any{}
		for k, v := range m {
			sa := a.Sub(k)
			if sa == nil || sa.Mutability == ReadOnly || sa.Mutability == WriteOnly || v == nil {
				continue
			}
			nv, err := normalizeOne(sa, v)
			if err != nil {
				return nil, errorf(InvalidValue, "%s.%s", a.Name, err.(*Error).Detail)
			}
			out[sa.Name] = nv
		}
		if len(out) == 0 {
			return nil, nil
		}
		return out, nil
	case TypeBoolean:
		switch v := value.(type) {
		case bool:
			return v, nil
		case string:
			if strings.EqualFold(v, "true") {
				return true, nil
			}
			if strings.EqualFold(v, "false") {
				return false, nil
			}
		}
		return nil, errorf(InvalidValue, "%s must be a boolean", a.Name)
	default:
		s, ok := value.(string)
		if !ok {
			return nil, errorf(InvalidValue, "%s must be a string", a.Name)
		}
		return s, nil
	}
}
