package scim

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Filter is a parsed filter expression of RFC 7644 §3.4.2.2, such as
// `userName eq "ada@example.com"` or `id eq "…" and members[value eq "…"]`.
type Filter struct {
	root  expr
	terms int
}

// AttrPath names an attribute: an optional schema URN, the attribute, and an optional
// sub-attribute, as in "urn:ietf:params:scim:schemas:core:2.0:User:name.givenName".
type AttrPath struct {
	URN  string
	Attr string
	Sub  string
}

// The bounds of a filter, so that what one costs to parse and to evaluate on a resource is
// bounded whatever a client sends: providers send a term or two (Entra ID's longest is
// `id eq "…" and members[value eq "…"]`). maxFilterDepth bounds the nesting of parentheses,
// brackets and "not", so that a hostile filter cannot exhaust the stack; MaxFilterTerms the
// attribute expressions (comparisons, presence tests and value filters, each counted).
const (
	MaxFilterLength = 8 << 10
	MaxFilterTerms  = 100
	maxFilterDepth  = 32
)

// ParseFilter parses a filter. Operators, "and", "or", "not" and the literals true, false and
// null are matched without regard to letter case, as providers send them either way. A
// malformed filter, one longer than MaxFilterLength bytes or with more than MaxFilterTerms
// terms, or one that is not valid UTF-8, is an *Error of type invalidFilter.
func ParseFilter(s string) (*Filter, error) {
	if len(s) > MaxFilterLength {
		return nil, errorf(InvalidFilter, "the filter is longer than %d bytes", MaxFilterLength)
	}
	if !utf8.ValidString(s) {
		return nil, errorf(InvalidFilter, "the filter is not valid UTF-8")
	}
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errorf(InvalidFilter, "unexpected %q at offset %d of the filter", t.text, t.pos)
	}
	return &Filter{root: root, terms: p.terms}, nil
}

// Terms returns how many attribute expressions the filter has: a measure of what evaluating
// it on one resource costs.
func (f *Filter) Terms() int { return f.terms }

// Matches reports whether the resource doc, of type rt, satisfies the filter. Attribute
// names are matched without regard to case; string values are compared without regard to
// case unless the attribute is case-exact (id, externalId, members.value), as RFC 7643 §2.2
// asks. An attribute the resource type does not have matches nothing.
func (f *Filter) Matches(rt *ResourceType, doc map[string]any) bool {
	return f.root.eval(doc, resourceScope{rt})
}

// Equality returns v when the filter is `attr eq "v"` on a top-level attribute of rt, or an
// "and" with such a comparison on either side: then only resources whose attr equals v can
// match, and the caller may look them up by an index before it applies the whole filter.
func (f *Filter) Equality(rt *ResourceType, attr string) (string, bool) {
	return equality(f.root, rt, attr)
}

func equality(e expr, rt *ResourceType, attr string) (string, bool) {
	switch e := e.(type) {
	case compare:
		s, ok := e.value.(string)
		if !ok || e.op != "eq" || e.path.Sub != "" || !strings.EqualFold(e.path.Attr, attr) {
			return "", false
		}
		if e.path.URN != "" && !strings.EqualFold(e.path.URN, rt.Schema.ID) {
			return "", false
		}
		return s, true
	case logical:
		if !e.and {
			return "", false
		}
		if v, ok := equality(e.left, rt, attr); ok {
			return v, true
		}
		return equality(e.right, rt, attr)
	}
	return "", false
}

// simpleEquality returns the sub-attribute and value of a value filter of the form
// `type eq "work"`, which is what a PATCH may create when no element matches it.
func simpleEquality(f *Filter) (string, any, bool) {
	c, ok := f.root.(compare)
	if !ok || c.op != "eq" || c.path.URN != "" || c.path.Sub != "" || c.value == nil {
		return "", nil, false
	}
	return c.path.Attr, c.value, true
}

// expr is a node of a parsed filter.
type expr interface {
	eval(obj map[string]any, sc scope) bool
}

type logical struct {
	and         bool
	left, right expr
}

func (l logical) eval(obj map[string]any, sc scope) bool {
	if l.and {
		return l.left.eval(obj, sc) && l.right.eval(obj, sc)
	}
	return l.left.eval(obj, sc) || l.right.eval(obj, sc)
}

type not struct{ e expr }

func (n not) eval(obj map[string]any, sc scope) bool { return !n.e.eval(obj, sc) }

type present struct{ path AttrPath }

func (p present) eval(obj map[string]any, sc scope) bool {
	vals, _ := sc.resolve(obj, p.path)
	for _, v := range vals {
		if !empty(v) {
			return true
		}
	}
	return false
}

// compare is `path op value`; value is a string, a float64, a bool or nil (null). folded is a
// string value in lower case, made once rather than for every resource compared.
type compare struct {
	path   AttrPath
	op     string
	value  any
	folded string
}

func (c compare) eval(obj map[string]any, sc scope) bool {
	vals, a := sc.resolve(obj, c.path)
	if c.value == nil {
		// "eq null" asks whether the attribute is unassigned, as RFC 7643 §2.5 equates null
		// with having no value.
		has := present{c.path}.eval(obj, sc)
		switch c.op {
		case "eq":
			return !has
		case "ne":
			return has
		}
		return false
	}
	if c.op == "ne" {
		for _, v := range vals {
			if c.compareValue(v, "eq", a) {
				return false
			}
		}
		return true
	}
	for _, v := range vals {
		if c.compareValue(v, c.op, a) {
			return true
		}
	}
	return false
}

// valuePath is `attr[filter]`: some value of the multi-valued attribute satisfies filter.
type valuePath struct {
	path   AttrPath
	filter expr
}

func (vp valuePath) eval(obj map[string]any, sc scope) bool {
	elems, a := sc.elements(obj, vp.path)
	if a == nil {
		return false
	}
	for _, e := range elems {
		if m, ok := e.(map[string]any); ok && vp.filter.eval(m, elementScope{a}) {
			return true
		}
	}
	return false
}

// scope resolves attribute paths: at the top of a resource, or inside one value of a
// multi-valued complex attribute (the inside of a value filter).
type scope interface {
	// resolve returns the values a comparison looks at, and their attribute's definition.
	resolve(obj map[string]any, p AttrPath) ([]any, *Attribute)
	// elements returns the values of a multi-valued complex attribute.
	elements(obj map[string]any, p AttrPath) ([]any, *Attribute)
}

type resourceScope struct{ rt *ResourceType }

func (s resourceScope) attr(obj map[string]any, p AttrPath) (any, *Attribute) {
	schema, a := s.rt.lookup(p.URN, p.Attr)
	if a == nil {
		return nil, nil
	}
	container := obj
	if schema != "" {
		container, _ = getFold(obj, schema).(map[string]any)
	}
	return getFold(container, a.Name), a
}

func (s resourceScope) resolve(obj map[string]any, p AttrPath) ([]any, *Attribute) {
	v, a := s.attr(obj, p)
	if a == nil {
		return nil, nil
	}
	return values(v, a, p.Sub)
}

func (s resourceScope) elements(obj map[string]any, p AttrPath) ([]any, *Attribute) {
	v, a := s.attr(obj, p)
	if a == nil || p.Sub != "" || a.Type != TypeComplex {
		return nil, nil
	}
	return asList(v), a
}

type elementScope struct{ parent *Attribute }

func (s elementScope) resolve(obj map[string]any, p AttrPath) ([]any, *Attribute) {
	if p.URN != "" || p.Sub != "" {
		return nil, nil
	}
	a := s.parent.Sub(p.Attr)
	if a == nil {
		return nil, nil
	}
	return values(getFold(obj, a.Name), a, "")
}

func (elementScope) elements(map[string]any, AttrPath) ([]any, *Attribute) { return nil, nil }

// values returns what a comparison on attribute a (or its sub-attribute sub) looks at in v.
// A complex attribute named without a sub-attribute stands for its "value" sub-attribute, so
// that `emails co "@example.com"` means what it says.
func values(v any, a *Attribute, sub string) ([]any, *Attribute) {
	if v == nil {
		return nil, a
	}
	if sub == "" && a.Type == TypeComplex {
		if va := a.Sub("value"); va != nil {
			sub = va.Name
		}
	}
	if sub == "" {
		return asList(v), a
	}
	sa := a.Sub(sub)
	if sa == nil {
		return nil, nil
	}
	var out []any
	for _, e := range asList(v) {
		if m, ok := e.(map[string]any); ok {
			if sv := getFold(m, sa.Name); sv != nil {
				out = append(out, sv)
			}
		}
	}
	return out, sa
}

func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	return []any{v}
}

// compareValue applies op to a resource's value v and the filter's literal.
func (c compare) compareValue(v any, op string, a *Attribute) bool {
	switch lit := c.value.(type) {
	case string:
		switch v := v.(type) {
		case string:
			return compareStrings(v, lit, c.folded, op, a)
		case bool:
			// A provider that writes `active eq "true"` means the boolean.
			b, err := strconv.ParseBool(strings.ToLower(lit))
			return err == nil && op == "eq" && v == b
		}
	case bool:
		switch v := v.(type) {
		case bool:
			return op == "eq" && v == lit
		case string:
			return op == "eq" && strings.EqualFold(v, strconv.FormatBool(lit))
		}
	case float64:
		n, ok := number(v)
		if !ok {
			return false
		}
		return ordered(cmpFloat(n, lit), op)
	}
	return false
}

// compareStrings applies op to v and lit; folded is lit in lower case.
func compareStrings(v, lit, folded, op string, a *Attribute) bool {
	if a != nil && a.Type == TypeDateTime && op != "co" && op != "sw" && op != "ew" {
		tv, err1 := time.Parse(time.RFC3339Nano, v)
		tl, err2 := time.Parse(time.RFC3339Nano, lit)
		if err1 == nil && err2 == nil {
			return ordered(tv.Compare(tl), op)
		}
	}
	if a == nil || !a.CaseExact {
		v, lit = strings.ToLower(v), folded
	}
	switch op {
	case "co":
		return strings.Contains(v, lit)
	case "sw":
		return strings.HasPrefix(v, lit)
	case "ew":
		return strings.HasSuffix(v, lit)
	}
	return ordered(strings.Compare(v, lit), op)
}

// ordered turns a three-way comparison into the answer of op.
func ordered(c int, op string) bool {
	switch op {
	case "eq":
		return c == 0
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// empty reports whether v counts as unassigned: null, "", or an empty list or object.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// getFold returns m[key], matching key without regard to case when there is no exact match.
func getFold(m map[string]any, key string) any {
	if m == nil {
		return nil
	}
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// The filter's tokens.
type tokenKind int

const (
	tEOF tokenKind = iota
	tWord
	tString
	tNumber
	tLParen
	tRParen
	tLBracket
	tRBracket
)

type token struct {
	kind tokenKind
	text string
	pos  int
	str  string  // the decoded value of a tString
	num  float64 // the value of a tNumber
}

func tokenize(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == '[' || c == ']':
			toks = append(toks, token{kind: punctuation(c), text: string(c), pos: i})
			i++
		case c == '"':
			end, err := stringEnd(s, i)
			if err != nil {
				return nil, err
			}
			var v string
			if err := json.Unmarshal([]byte(s[i:end]), &v); err != nil {
				return nil, errorf(InvalidFilter, "the string at offset %d of the filter is not a valid JSON string", i)
			}
			toks = append(toks, token{kind: tString, text: s[i:end], pos: i, str: v})
			i = end
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			word := s[i:j]
			t := token{kind: tWord, text: word, pos: i}
			if c == '-' || c == '+' || ('0' <= c && c <= '9') {
				// A word that is no number at all (a GUID such as 2819c223-7f76-…) stays a
				// word, which may be a value written without quotes; one that is a number out
				// of range is refused.
				n, err := strconv.ParseFloat(word, 64)
				switch {
				case errors.Is(err, strconv.ErrSyntax):
				case err != nil || math.IsInf(n, 0) || math.IsNaN(n):
					return nil, errorf(InvalidFilter, "%q at offset %d of the filter is not a number", word, i)
				default:
					t.kind, t.num = tNumber, n
				}
			}
			toks = append(toks, t)
			i = j
		default:
			return nil, errorf(InvalidFilter, "unexpected character %q at offset %d of the filter", c, i)
		}
	}
	return append(toks, token{kind: tEOF, pos: len(s)}), nil
}

// stringEnd returns the offset just past the JSON string that starts at s[start].
func stringEnd(s string, start int) (int, error) {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errorf(InvalidFilter, "the string at offset %d of the filter is not closed", start)
}

func punctuation(c byte) tokenKind {
	switch c {
	case '(':
		return tLParen
	case ')':
		return tRParen
	case '[':
		return tLBracket
	}
	return tRBracket
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '$' || c == ':' || c == '.' || c == '+' || c == '@'
}

type parser struct {
	toks  []token
	i     int
	terms int // attribute expressions parsed so far
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) keyword(t token, word string) bool {
	return t.kind == tWord && strings.EqualFold(t.text, word)
}

// or parses FILTER = and-expr *("or" and-expr): "and" binds tighter than "or".
func (p *parser) or(depth int) (expr, error) {
	left, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword(p.peek(), "or") {
		p.next()
		right, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		left = logical{and: false, left: left, right: right}
	}
	return left, nil
}

func (p *parser) and(depth int) (expr, error) {
	left, err := p.atom(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword(p.peek(), "and") {
		p.next()
		right, err := p.atom(depth)
		if err != nil {
			return nil, err
		}
		left = logical{and: true, left: left, right: right}
	}
	return left, nil
}

func (p *parser) atom(depth int) (expr, error) {
	if depth > maxFilterDepth {
		return nil, errorf(InvalidFilter, "the filter nests more than %d levels deep", maxFilterDepth)
	}
	t := p.next()
	switch {
	case t.kind == tLParen:
		e, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return e, nil
	case p.keyword(t, "not") && p.peek().kind == tLParen:
		e, err := p.atom(depth + 1)
		if err != nil {
			return nil, err
		}
		return not{e}, nil
	case t.kind != tWord:
		return nil, p.unexpected(t, "an attribute")
	}
	path, err := ParseAttrPath(t.text)
	if err != nil {
		return nil, errorf(InvalidFilter, "%q at offset %d of the filter is not an attribute path", t.text, t.pos)
	}
	if p.terms++; p.terms > MaxFilterTerms {
		return nil, errorf(InvalidFilter, "the filter has more than %d terms", MaxFilterTerms)
	}
	if p.peek().kind == tLBracket {
		p.next()
		if path.Sub != "" {
			return nil, errorf(InvalidFilter, "a value filter follows a sub-attribute at offset %d of the filter", t.pos)
		}
		inner, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(tRBracket, "]"); err != nil {
			return nil, err
		}
		if t := p.peek(); t.kind != tWord || !strings.HasPrefix(t.text, ".") {
			return valuePath{path: path, filter: inner}, nil
		}
		// `emails[type eq "work"].value eq "…"`, as Entra ID matches users by their work email:
		// some value that the filter selects has a sub-attribute that compares so.
		sub := p.next()
		if !validName(sub.text[1:]) {
			return nil, errorf(InvalidFilter, "%q at offset %d of the filter is not a sub-attribute", sub.text, sub.pos)
		}
		cmp, err := p.comparison(AttrPath{Attr: sub.text[1:]})
		if err != nil {
			return nil, err
		}
		return valuePath{path: path, filter: logical{and: true, left: inner, right: cmp}}, nil
	}
	return p.comparison(path)
}

// comparison parses what follows the attribute path of an attribute expression: `pr`, or an
// operator and a value.
func (p *parser) comparison(path AttrPath) (expr, error) {
	opTok := p.next()
	if opTok.kind != tWord {
		return nil, p.unexpected(opTok, "an operator")
	}
	op := strings.ToLower(opTok.text)
	switch op {
	case "pr":
		return present{path: path}, nil
	case "eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le":
	default:
		return nil, errorf(InvalidFilter, "%q at offset %d of the filter is not an operator", opTok.text, opTok.pos)
	}
	vt := p.next()
	var value any
	switch {
	case vt.kind == tString:
		value = vt.str
	case vt.kind == tNumber:
		value = vt.num
	case p.keyword(vt, "true"):
		value = true
	case p.keyword(vt, "false"):
		value = false
	case p.keyword(vt, "null"):
		value = nil
	case vt.kind == tWord && !p.keyword(vt, "and") && !p.keyword(vt, "or") && !p.keyword(vt, "not"):
		// A value without quotes, as Microsoft's provisioning tutorial writes its examples
		// (`externalId eq jyoung`, `manager eq 2819c223-7f76-…`): the word, as a string.
		value = vt.text
	default:
		return nil, p.unexpected(vt, "a value")
	}
	if _, isBool := value.(bool); (isBool || value == nil) && op != "eq" && op != "ne" {
		return nil, errorf(InvalidFilter, "the operator %q cannot compare %s", op, vt.text)
	}
	folded, _ := value.(string)
	return compare{path: path, op: op, value: value, folded: strings.ToLower(folded)}, nil
}

func (p *parser) expect(kind tokenKind, text string) error {
	if t := p.next(); t.kind != kind {
		return p.unexpected(t, "\""+text+"\"")
	}
	return nil
}

func (p *parser) unexpected(t token, want string) error {
	if t.kind == tEOF {
		return errorf(InvalidFilter, "the filter ends where %s was expected", want)
	}
	return errorf(InvalidFilter, "%q at offset %d of the filter where %s was expected", t.text, t.pos, want)
}

// ParseAttrPath parses `[URN ":"] attrName ["." subAttr]`. The URN is everything before the
// last colon, so that the dots of "…:2.0:User" are not taken for a sub-attribute.
func ParseAttrPath(s string) (AttrPath, error) {
	var p AttrPath
	rest := s
	if len(s) > 4 && strings.EqualFold(s[:4], "urn:") {
		i := strings.LastIndexByte(s, ':')
		p.URN, rest = s[:i], s[i+1:]
	}
	attr, sub, hasSub := strings.Cut(rest, ".")
	if !validName(attr) || hasSub && !validName(sub) {
		return AttrPath{}, errorf(InvalidPath, "%q is not an attribute path", s)
	}
	p.Attr, p.Sub = attr, sub
	return p, nil
}

// validName reports whether s is an ATTRNAME of RFC 7643 §2.1 (with "$ref" allowed).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if i == 0 && !letter && c != '$' {
			return false
		}
		if !letter && !('0' <= c && c <= '9') && c != '_' && c != '-' && c != '$' {
			return false
		}
	}
	return true
}
