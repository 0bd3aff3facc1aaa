package policy

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// AppendKey appends to b the key of input under what the rule reads of it: every place the
// rule reads, and only those, each as it is read (whole, whether it is truthy, how it compares
// with input.now). Two inputs with the same key get the same answer from the rule, if Bounded.
// It is the definition of the key: a faster encoder of the same facts (the decision engine's,
// which does not build an input) must give the same bytes.
//
// A place is written as a tag (0: absent, then by type: 1 null, 2 false, 3 true, 4 number,
// 5 string, 6 array, 7 object, 8 set); when it is compared with the time, the outcome (0 less,
// 1 equal, 2 greater, 3 no time); when read whole, the value (Append); the outcome of each of its
// probes (AppendProbe); then what is read below it: of an object, each read field in key order, then each asked id's entry in the order of
// input.resource_ids, or, where every key is read, their number and each key with its entry;
// of an array or set read at every element, their number and each. The outcomes of comparing
// each of NowConstants with the time follow.
func (r *Reads) AppendKey(b []byte, input ast.Value) []byte {
	obj, _ := input.(ast.Object)
	var now, asked *ast.Term
	if obj != nil {
		now, asked = obj.Get(keyNow), obj.Get(keyResourceIDs)
	}
	k := keyer{now: now, asked: askedIDs(asked)}
	b = k.node(b, r.root, ast.NewTerm(input))
	for _, c := range r.nowConsts {
		b = append(b, compareNow(c, now))
	}
	return b
}

// The keys of the input that a key and a pruned input read apart.
var (
	keyResourceIDs = ast.StringTerm("resource_ids")
	keyNow         = ast.StringTerm("now")
)

// The tags of AppendKey and Append.
const (
	TagAbsent byte = iota
	TagNull
	TagFalse
	TagTrue
	TagNumber
	TagString
	TagArray
	TagObject
	TagSet
)

// NowNone is the outcome of a comparison with the time when the input has none.
const NowNone = 3

type keyer struct {
	now   *ast.Term
	asked []*ast.Term
}

func askedIDs(t *ast.Term) []*ast.Term {
	if t == nil {
		return nil
	}
	arr, ok := t.Value.(*ast.Array)
	if !ok {
		return nil
	}
	ids := make([]*ast.Term, 0, arr.Len())
	for i := range arr.Len() {
		ids = append(ids, arr.Elem(i))
	}
	return ids
}

// compareNow is the outcome of comparing x with the time: 0 less, 1 equal, 2 greater, or
// NowNone when there is no time.
func compareNow(x, now *ast.Term) byte {
	if now == nil {
		return NowNone
	}
	return byte(ast.Compare(x.Value, now.Value) + 1)
}

func (k keyer) node(b []byte, n *ReadNode, t *ast.Term) []byte {
	if t == nil {
		return append(b, TagAbsent)
	}
	b = append(b, Tag(t.Value))
	if n.Now {
		b = append(b, compareNow(t, k.now))
	}
	if n.Whole {
		b = Append(b, t.Value)
	}
	for _, p := range n.Probes {
		b = AppendProbe(b, p, t.Value)
	}
	switch v := t.Value.(type) {
	case ast.Object:
		if n.Any != nil {
			b = binary.AppendUvarint(b, uint64(v.Len()))
			for _, key := range v.Keys() {
				b = Append(b, key.Value)
				b = k.node(b, n.Any, v.Get(key))
			}
			return b
		}
		for _, key := range n.keys {
			b = k.node(b, n.Fields[key], v.Get(ast.StringTerm(key)))
		}
		if n.Asked != nil {
			for _, id := range k.asked {
				b = k.node(b, n.Asked, v.Get(id))
			}
		}
	case *ast.Array:
		if n.Any != nil {
			b = binary.AppendUvarint(b, uint64(v.Len()))
			for i := range v.Len() {
				b = k.node(b, n.Any, v.Elem(i))
			}
		}
	case ast.Set:
		if n.Any != nil {
			b = binary.AppendUvarint(b, uint64(v.Len()))
			sorted := v.Sorted()
			for i := range sorted.Len() {
				b = k.node(b, n.Any, sorted.Elem(i))
			}
		}
	}
	return b
}

// AppendProbe appends the outcome of probe p of the value v: for ProbeEqual 1 if v equals the
// constant, else 0; for ProbeCompare how v compares with it (0 less, 1 equal, 2 greater); for
// ProbeStartsWith, ProbeEndsWith and ProbeContains 1 or 0, or 2 when an operand is not a string
// (the built-in fails); for ProbeMember 1 if v is an element (or, of an object, a value) of
// the constant, else 0; for ProbeCount the number (Append), or TagAbsent where count fails.
func AppendProbe(b []byte, p Probe, v ast.Value) []byte {
	switch p.Op {
	case ProbeEqual:
		if ast.Compare(v, p.Const.Value) == 0 {
			return append(b, 1)
		}
		return append(b, 0)
	case ProbeCompare:
		return append(b, byte(ast.Compare(v, p.Const.Value)+1))
	case ProbeStartsWith, ProbeEndsWith, ProbeContains:
		s, ok1 := v.(ast.String)
		c, ok2 := p.Const.Value.(ast.String)
		if !ok1 || !ok2 {
			return append(b, 2)
		}
		return append(b, StringProbe(p, string(s), string(c)))
	case ProbeMember:
		in := false
		switch c := p.Const.Value.(type) {
		case *ast.Array:
			for i := range c.Len() {
				in = in || ast.Compare(c.Elem(i).Value, v) == 0
			}
		case ast.Set:
			in = c.Contains(ast.NewTerm(v))
		case ast.Object:
			c.Foreach(func(_, x *ast.Term) { in = in || ast.Compare(x.Value, v) == 0 })
		}
		if in {
			return append(b, 1)
		}
		return append(b, 0)
	case ProbeCount:
		switch x := v.(type) {
		case *ast.Array:
			return appendCount(b, x.Len())
		case ast.Object:
			return appendCount(b, x.Len())
		case ast.Set:
			return appendCount(b, x.Len())
		case ast.String:
			return appendCount(b, utf8.RuneCountInString(string(x)))
		}
		return append(b, TagAbsent)
	}
	panic("unknown probe " + p.Op) // cannot happen: the analysis makes only the probes above
}

// StringProbe is the outcome of a string probe of the value s: startswith, endswith or
// contains, with s as the operand p.Pos and c as the other.
func StringProbe(p Probe, s, c string) byte {
	if p.Pos == 1 {
		s, c = c, s
	}
	var ok bool
	switch p.Op {
	case ProbeStartsWith:
		ok = strings.HasPrefix(s, c)
	case ProbeEndsWith:
		ok = strings.HasSuffix(s, c)
	default:
		ok = strings.Contains(s, c)
	}
	if ok {
		return 1
	}
	return 0
}

// appendCount appends n as ProbeCount's outcome: a number, as Append writes it.
func appendCount(b []byte, n int) []byte {
	return Append(b, ast.Number(strconv.Itoa(n)))
}

// Tag is the tag AppendKey writes for a value of v's type.
func Tag(v ast.Value) byte {
	switch v := v.(type) {
	case ast.Null:
		return TagNull
	case ast.Boolean:
		if v {
			return TagTrue
		}
		return TagFalse
	case ast.Number:
		return TagNumber
	case ast.String:
		return TagString
	case *ast.Array:
		return TagArray
	case ast.Object:
		return TagObject
	case ast.Set:
		return TagSet
	}
	return TagAbsent
}

// Append appends v to b whole and unambiguously: its tag, then a number's or a string's
// length and bytes, or a collection's length and elements (an object's keys in order, each
// followed by its value; a set's elements in order).
func Append(b []byte, v ast.Value) []byte {
	b = append(b, Tag(v))
	switch v := v.(type) {
	case ast.Number:
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	case ast.String:
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	case *ast.Array:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		for i := range v.Len() {
			b = Append(b, v.Elem(i).Value)
		}
	case ast.Object:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		for _, key := range v.Keys() {
			b = Append(b, key.Value)
			b = Append(b, v.Get(key).Value)
		}
	case ast.Set:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		sorted := v.Sorted()
		for i := range sorted.Len() {
			b = Append(b, sorted.Elem(i).Value)
		}
	}
	return b
}

// Prune returns input without what the rule does not read: where a place is read below only,
// just the fields, asked entries or elements read are kept; where it is read whole, tested or
// compared, or nothing below it is read, all of it. input.now is kept when the rule compares
// it. The rule, if Bounded, answers the pruned input as it answers input, and evaluates it
// faster when input holds much the rule does not read. Sets are kept whole.
func (r *Reads) Prune(input ast.Value) ast.Value {
	obj, ok := input.(ast.Object)
	if !ok {
		return input
	}
	k := keyer{asked: askedIDs(obj.Get(keyResourceIDs))}
	out := k.prune(r.root, ast.NewTerm(input)).Value
	if now := obj.Get(keyNow); now != nil && r.ReadsNow() {
		if o, ok := out.(ast.Object); ok {
			o.Insert(keyNow, now)
		}
	}
	return out
}

func (k keyer) prune(n *ReadNode, t *ast.Term) *ast.Term {
	if n.Whole || n.Truthy || n.Now || len(n.Probes) > 0 || (n.Any == nil && n.Asked == nil && len(n.keys) == 0) {
		return t
	}
	switch v := t.Value.(type) {
	case ast.Object:
		out := ast.NewObject()
		if n.Any != nil {
			v.Foreach(func(key, x *ast.Term) { out.Insert(key, k.prune(n.Any, x)) })
			return ast.NewTerm(out)
		}
		for _, key := range n.keys {
			kt := ast.StringTerm(key)
			if x := v.Get(kt); x != nil {
				out.Insert(kt, k.prune(n.Fields[key], x))
			}
		}
		if n.Asked != nil {
			for _, id := range k.asked {
				if x := v.Get(id); x != nil {
					out.Insert(id, k.prune(n.Asked, x))
				}
			}
		}
		return ast.NewTerm(out)
	case *ast.Array:
		if n.Any != nil {
			elems := make([]*ast.Term, v.Len())
			for i := range v.Len() {
				elems[i] = k.prune(n.Any, v.Elem(i))
			}
			return ast.ArrayTerm(elems...)
		}
	}
	// A set is kept whole: two elements pruned alike would become one.
	return t
}
