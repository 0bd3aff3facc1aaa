package scim

import "strings"

// Project applies the "attributes" and "excludedAttributes" query parameters of RFC 7644
// §3.4.2.5 to doc, a resource of type rt, and returns the result (doc itself is not changed).
// Each list is comma-separated attribute paths, with or without a schema URN. With
// attributes, only those named are returned; with excludedAttributes, those named are left
// out. "schemas" and the attributes returned always (id) stay either way. Names that are no
// attribute of rt are ignored.
func Project(rt *ResourceType, doc map[string]any, attributes, excluded string) map[string]any {
	if attributes = strings.TrimSpace(attributes); attributes != "" {
		return include(rt, doc, splitList(attributes))
	}
	if excluded = strings.TrimSpace(excluded); excluded != "" {
		return exclude(rt, doc, splitList(excluded))
	}
	return doc
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// target is where a named attribute lives in a resource: the key of its container ("" for the
// top level, else an extension's URN), its definition, and the sub-attribute named, if any.
type target struct {
	schema string
	a      *Attribute
	sub    *Attribute
}

func resolveTarget(rt *ResourceType, name string) (target, bool) {
	p, err := ParseAttrPath(name)
	if err != nil {
		return target{}, false
	}
	schema, a := rt.lookup(p.URN, p.Attr)
	if a == nil {
		return target{}, false
	}
	t := target{schema: schema, a: a}
	if p.Sub != "" {
		if t.sub = a.Sub(p.Sub); t.sub == nil {
			return target{}, false
		}
	}
	return t, true
}

func container(doc map[string]any, schema string) map[string]any {
	if schema == "" {
		return doc
	}
	m, _ := doc[schema].(map[string]any)
	return m
}

func include(rt *ResourceType, doc map[string]any, names []string) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"schemas", "id"} {
		if v, ok := doc[k]; ok {
			out[k] = v
		}
	}
	type key struct{ schema, name string }
	var order []key
	subs := map[key][]string{} // nil: the whole attribute
	for _, name := range names {
		t, ok := resolveTarget(rt, name)
		if !ok {
			continue
		}
		k := key{t.schema, t.a.Name}
		prev, seen := subs[k]
		if !seen {
			order = append(order, k)
		}
		switch {
		case t.sub == nil:
			subs[k] = nil
		case !seen || prev != nil:
			subs[k] = append(prev, t.sub.Name)
		}
	}
	for _, k := range order {
		v, ok := container(doc, k.schema)[k.name]
		if !ok {
			continue
		}
		dst := out
		if k.schema != "" {
			ext, _ := out[k.schema].(map[string]any)
			if ext == nil {
				ext = map[string]any{}
				out[k.schema] = ext
			}
			dst = ext
		}
		if subs[k] == nil {
			dst[k.name] = v
			continue
		}
		var picked any
		for _, sub := range subs[k] {
			picked = pick(picked, v, sub)
		}
		setOrDelete(dst, k.name, picked)
	}
	return out
}

// pick adds sub-attribute sub of v (a complex value, or a list of them) to what has been
// picked of it so far.
func pick(sofar, v any, sub string) any {
	switch v := v.(type) {
	case map[string]any:
		m, _ := sofar.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if sv, ok := v[sub]; ok {
			m[sub] = sv
		}
		return m
	case []any:
		prev, _ := sofar.([]any)
		out := make([]any, len(v))
		for i, e := range v {
			var before any
			if i < len(prev) {
				before = prev[i]
			}
			out[i] = pick(before, e, sub)
		}
		return out
	}
	return sofar
}

func exclude(rt *ResourceType, doc map[string]any, names []string) map[string]any {
	out := cloneMap(doc)
	for _, name := range names {
		t, ok := resolveTarget(rt, name)
		if !ok || t.a.Returned == "always" {
			continue
		}
		c := out
		if t.schema != "" {
			ext, _ := out[t.schema].(map[string]any)
			if ext == nil {
				continue
			}
			c = cloneMap(ext)
			out[t.schema] = c
		}
		if t.sub == nil {
			delete(c, t.a.Name)
			continue
		}
		switch v := c[t.a.Name].(type) {
		case map[string]any:
			setOrDelete(c, t.a.Name, withSub(v, t.sub.Name, nil))
		case []any:
			list := make([]any, len(v))
			for i, e := range v {
				if m, ok := e.(map[string]any); ok {
					list[i] = withSub(m, t.sub.Name, nil)
				} else {
					list[i] = e
				}
			}
			setOrDelete(c, t.a.Name, list)
		}
	}
	for _, ext := range rt.Extensions {
		if m, ok := out[ext.ID].(map[string]any); ok {
			setOrDelete(out, ext.ID, m)
		}
	}
	return out
}
