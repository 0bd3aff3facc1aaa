package authz

import (
	"cmp"
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/grantry/grantry/policy"
)

// appendKey appends the memo's key of the view's question under what the rule reads (r): the
// bytes policy.Reads.AppendKey gives of the whole input, written from the facts without the
// input being built. TestKeyIsTheReadsKey holds the two to the same bytes.
func appendKey(b []byte, r *policy.Reads, v *view) []byte {
	b = keyNode(b, r.Root(), v.root())
	for _, c := range r.NowConstants() {
		b = append(b, byte(ast.Compare(c.Value, v.nowTerm().Value)+1))
	}
	return b
}

func keyNode(b []byte, n *policy.ReadNode, x value) []byte {
	if x.kind == kAbsent {
		return append(b, policy.TagAbsent)
	}
	b = append(b, x.tag())
	if n.Now {
		b = append(b, x.compareNow())
	}
	if n.Whole {
		b = x.appendWhole(b)
	}
	for i := range n.Probes {
		b = x.appendProbe(b, &n.Probes[i])
	}
	switch {
	case x.object():
		if n.Any != nil {
			b = binary.AppendUvarint(b, uint64(x.count()))
			x.each(func(key string, e value) {
				b = appendString(b, key)
				b = keyNode(b, n.Any, e)
			})
			return b
		}
		for _, key := range n.Keys() {
			b = keyNode(b, n.Fields[key], x.get(key))
		}
		if n.Asked != nil {
			for i := range x.v.q.ResourceIDs {
				b = keyNode(b, n.Asked, x.getAsked(i))
			}
		}
	case x.array():
		if n.Any != nil {
			b = binary.AppendUvarint(b, uint64(x.count()))
			x.each(func(_ string, e value) { b = keyNode(b, n.Any, e) })
		}
	}
	return b
}

// tag is policy.Tag of x's value.
func (x value) tag() byte {
	switch x.kind {
	case kAbsent:
		return policy.TagAbsent
	case kBool:
		if x.b {
			return policy.TagTrue
		}
		return policy.TagFalse
	case kNumber:
		return policy.TagNumber
	case kString:
		return policy.TagString
	case kIDs:
		return policy.TagArray
	}
	return policy.TagObject
}

// compareNow is how x compares with the time: 0 less, 1 equal, 2 greater.
func (x value) compareNow() byte {
	if x.kind == kNumber {
		return byte(cmp.Compare(x.n, x.v.now) + 1)
	}
	return byte(ast.Compare(x.term().Value, x.v.nowTerm().Value) + 1)
}

// appendWhole is policy.Append of x's value.
func (x value) appendWhole(b []byte) []byte {
	switch x.kind {
	case kBool:
		return append(b, x.tag())
	case kString:
		return appendString(b, x.s)
	case kNumber:
		return appendNumber(b, x.n)
	case kIDs:
		b = append(b, policy.TagArray)
		b = binary.AppendUvarint(b, uint64(len(x.v.q.ResourceIDs)))
		for _, id := range x.v.q.ResourceIDs {
			b = appendString(b, id)
		}
		return b
	}
	return policy.Append(b, x.term().Value)
}

// appendProbe is policy.AppendProbe of x's value, written without building it where x is a
// string, a boolean or a number probed against one of its kind.
func (x value) appendProbe(b []byte, p *policy.Probe) []byte {
	switch p.Op {
	case policy.ProbeEqual, policy.ProbeCompare:
		c, ok := x.compareConst(p.Const.Value)
		if !ok {
			break
		}
		if p.Op == policy.ProbeCompare {
			return append(b, byte(c+1))
		}
		if c == 0 {
			return append(b, 1)
		}
		return append(b, 0)
	case policy.ProbeStartsWith, policy.ProbeEndsWith, policy.ProbeContains:
		if c, ok := p.Const.Value.(ast.String); ok && x.kind == kString {
			return append(b, policy.StringProbe(*p, x.s, string(c)))
		}
	case policy.ProbeCount:
		switch {
		case x.kind == kString:
			return appendNumber(b, int64(utf8.RuneCountInString(x.s)))
		case x.object() || x.array():
			return appendNumber(b, int64(x.count()))
		case x.kind != kAbsent:
			return append(b, policy.TagAbsent)
		}
	}
	return policy.AppendProbe(b, *p, x.term().Value)
}

// compareConst compares x with the constant c as ast.Compare would, where x is a string, a
// boolean or a whole number and c of the same kind; ok is false otherwise.
func (x value) compareConst(c ast.Value) (int, bool) {
	switch c := c.(type) {
	case ast.String:
		if x.kind == kString {
			return cmp.Compare(x.s, string(c)), true
		}
	case ast.Boolean:
		if x.kind == kBool {
			return cmp.Compare(b2i(x.b), b2i(bool(c))), true
		}
	case ast.Number:
		if n, err := strconv.ParseInt(string(c), 10, 64); err == nil && x.kind == kNumber {
			return cmp.Compare(x.n, n), true
		}
	}
	return 0, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendNumber is policy.Append of the number n.
func appendNumber(b []byte, n int64) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], n, 10)
	b = append(b, policy.TagNumber)
	b = binary.AppendUvarint(b, uint64(len(d)))
	return append(b, d...)
}

func appendString(b []byte, s string) []byte {
	b = append(b, policy.TagString)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// prune is policy.Reads.Prune of the view's input, built from the facts: only what the rule
// reads of them becomes a value. TestKeyIsTheReadsKey holds the two to the same value.
func prune(r *policy.Reads, v *view) ast.Value {
	out := pruneNode(r.Root(), v.root()).Value
	if r.ReadsNow() {
		out.(ast.Object).Insert(ast.StringTerm("now"), v.nowTerm())
	}
	return out
}

func pruneNode(n *policy.ReadNode, x value) *ast.Term {
	if n.Whole || n.Truthy || n.Now || len(n.Probes) > 0 || (n.Any == nil && n.Asked == nil && len(n.Keys()) == 0) {
		return x.term()
	}
	switch {
	case x.object():
		out := ast.NewObject()
		if n.Any != nil {
			x.each(func(key string, e value) { out.Insert(ast.StringTerm(key), pruneNode(n.Any, e)) })
			return ast.NewTerm(out)
		}
		for _, key := range n.Keys() {
			if e := x.get(key); e.kind != kAbsent {
				out.Insert(ast.StringTerm(key), pruneNode(n.Fields[key], e))
			}
		}
		if n.Asked != nil {
			for i, id := range x.v.q.ResourceIDs {
				if e := x.getAsked(i); e.kind != kAbsent {
					out.Insert(ast.StringTerm(id), pruneNode(n.Asked, e))
				}
			}
		}
		return ast.NewTerm(out)
	case x.array():
		if n.Any != nil {
			var elems []*ast.Term
			x.each(func(_ string, e value) { elems = append(elems, pruneNode(n.Any, e)) })
			return ast.ArrayTerm(elems...)
		}
	}
	return x.term()
}
