package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Reads is what one rule of a compiled policy reads of its input, found by following every
// reference into input through the rule's body, the local variables bound to parts of input,
// and the rules and functions it calls. Two inputs that agree on everything a rule reads get
// the same answer from it, so an answer may be remembered under a key made of exactly that
// (AppendKey) and given again for any input with the same key.
//
// The analysis over-approximates: where it cannot tell what part of a value is read, it takes
// the whole value. Where it cannot bound what the rule reads at all, Bounded is false and Why
// says what: the whole input (which holds the time of the request), input.now used other than
// in a comparison (<, <=, >, >=, ==, !=) with a value of input or a constant, a built-in whose
// answer is not a function of its arguments (http.send, time.now_ns, rand.intn, ...), or the
// `with` keyword. Such a rule must be evaluated for every question.
type Reads struct {
	root      *ReadNode
	nowConsts []*ast.Term
	why       string
}

// ReadNode is one place in the input that a rule reads: the input itself at the root, a field
// below it, and so on. A place read only to reach below it (it is defined, and what type it is)
// has no flag set.
type ReadNode struct {
	// Whole says that the value here is read whole: a key includes all of it.
	Whole bool
	// Truthy says that the rule tests whether the value is defined and not false.
	Truthy bool
	// Now says that the rule compares the value with input.now: a key includes the outcome.
	Now bool
	// Probes are what the rule asks of the value alone against constants (equal to one, starts
	// with one, in a set, how many elements): a key includes their outcomes, in this order,
	// rather than the value, so that values alike in them share answers.
	Probes []Probe
	// Fields are the places below read by a constant key, keyed by it.
	Fields map[string]*ReadNode
	// Asked is what is read below of the keys that are ids the question asks about (the
	// elements of input.resource_ids), when the rule reads only those.
	Asked *ReadNode
	// Any is what is read below of every key or element.
	Any *ReadNode

	keys []string // of Fields, sorted
}

// Keys returns the keys of Fields, sorted.
func (n *ReadNode) Keys() []string { return n.keys }

// Probe is one question a rule asks of a place's value alone: the operation, the constant it is
// asked against (nil for ProbeCount), and the operand the value is (0 or 1) where that matters.
type Probe struct {
	Op    string
	Const *ast.Term
	Pos   int
}

// The probes whose outcome a key holds instead of the value (AppendKey writes each outcome).
const (
	ProbeEqual      = "equal"      // ==, != or = with the constant: 1 if equal, else 0
	ProbeCompare    = "compare"    // <, <=, >, >=: how the value compares with it, 0 1 2
	ProbeStartsWith = "startswith" // startswith(value, c) at Pos 0, startswith(c, value) at 1
	ProbeEndsWith   = "endswith"   // as startswith
	ProbeContains   = "contains"   // as startswith
	ProbeMember     = "member"     // value in c: 1 or 0
	ProbeCount      = "count"      // count(value): the number, or absent where count fails
)

func (t Probe) String() string {
	if t.Const == nil {
		return t.Op
	}
	return fmt.Sprintf("%s/%d %v", t.Op, t.Pos, t.Const)
}

// Bounded reports whether the analysis bounded what the rule reads; if not, Why says why.
func (r *Reads) Bounded() bool { return r.why == "" }

// Why says why the rule's reads are not bounded; empty when they are.
func (r *Reads) Why() string { return r.why }

// Root is the input's place: what the rule reads of the input as a whole.
func (r *Reads) Root() *ReadNode { return r.root }

// NowConstants are the constants the rule compares input.now with, in the order a key holds
// the outcomes.
func (r *Reads) NowConstants() []*ast.Term { return r.nowConsts }

// ReadsNow reports whether the rule compares input.now with anything.
func (r *Reads) ReadsNow() bool { return len(r.nowConsts) > 0 || r.root.readsNow() }

func (n *ReadNode) readsNow() bool {
	if n == nil {
		return false
	}
	return n.Now || n.Asked.readsNow() || n.Any.readsNow() || fieldsReadNow(n)
}

// String shows the places read, one per line, for tests and GET /policy.
func (r *Reads) String() string {
	var b strings.Builder
	var walk func(path string, n *ReadNode)
	walk = func(path string, n *ReadNode) {
		var flags []string
		if n.Whole {
			flags = append(flags, "whole")
		}
		if n.Truthy {
			flags = append(flags, "truthy")
		}
		if n.Now {
			flags = append(flags, "now")
		}
		for _, t := range n.Probes {
			flags = append(flags, t.String())
		}
		if len(flags) > 0 {
			fmt.Fprintf(&b, "%s %s\n", path, strings.Join(flags, ","))
		} else if len(n.keys) == 0 && n.Asked == nil && n.Any == nil {
			fmt.Fprintf(&b, "%s defined\n", path)
		}
		for _, k := range n.keys {
			walk(path+"."+k, n.Fields[k])
		}
		if n.Asked != nil {
			walk(path+"[asked]", n.Asked)
		}
		if n.Any != nil {
			walk(path+"[_]", n.Any)
		}
	}
	walk("input", r.root)
	for _, c := range r.nowConsts {
		fmt.Fprintf(&b, "input.now vs %v\n", c)
	}
	return b.String()
}

// analyseReads finds what the rule query of the compiled policy reads of its input.
func analyseReads(c *ast.Compiler, query ast.Ref) *Reads {
	a := &analyser{compiler: c, root: &ReadNode{}, rules: map[string]*ruleResult{}}
	a.read(a.ref(newEnv(nil), query), useWhole)
	r := &Reads{root: a.root, nowConsts: a.nowConsts, why: a.why}
	if r.why == "" {
		r.why = unboundedRoot(a.root)
	}
	// The question is always part of a key: the ids asked about are read whole.
	a.node(path{{key: "resource_ids"}}).Whole = true
	finish(r.root)
	return r
}

// unboundedRoot says why reads at the root are unbounded: the whole input, or input.now read
// other than through comparisons.
func unboundedRoot(root *ReadNode) string {
	if root.Whole || root.Truthy || root.Any != nil || root.Asked != nil {
		return "it reads the whole input, which holds the time of the request"
	}
	if now := root.Fields["now"]; now != nil && (now.Whole || now.Truthy || now.Now || now.Any != nil || now.Asked != nil || len(now.Fields) > 0) {
		return "it uses input.now other than in a comparison with a value of input or a constant"
	}
	return ""
}

// finish drops what a node read whole holds below it, unless a comparison with the time is
// below; folds what a node reads by name and of asked ids into what it reads of every key,
// where it reads every key (which over-approximates, as it must); and sorts every node's keys.
func finish(n *ReadNode) {
	if n == nil {
		return
	}
	if n.Whole && !n.Asked.readsNow() && !n.Any.readsNow() && !fieldsReadNow(n) {
		n.Fields, n.Asked, n.Any = nil, nil, nil // read whole, and no comparison below
	}
	if n.Whole {
		n.Probes = nil // the value is in the key
	}
	slices.SortFunc(n.Probes, func(a, b Probe) int { return strings.Compare(a.String(), b.String()) })
	n.Probes = slices.CompactFunc(n.Probes, func(a, b Probe) bool { return a.String() == b.String() })
	if n.Any != nil {
		for _, c := range n.Fields {
			merge(n.Any, c)
		}
		if n.Asked != nil {
			merge(n.Any, n.Asked)
		}
		n.Fields, n.Asked = nil, nil
	}
	n.keys = n.keys[:0]
	for k := range n.Fields {
		n.keys = append(n.keys, k)
	}
	slices.Sort(n.keys)
	for _, c := range n.Fields {
		finish(c)
	}
	finish(n.Asked)
	finish(n.Any)
}

// merge adds what src reads to dst.
func merge(dst, src *ReadNode) {
	dst.Whole = dst.Whole || src.Whole
	dst.Truthy = dst.Truthy || src.Truthy
	dst.Now = dst.Now || src.Now
	dst.Probes = append(dst.Probes, src.Probes...)
	for k, c := range src.Fields {
		if dst.Fields == nil {
			dst.Fields = map[string]*ReadNode{}
		}
		if d, ok := dst.Fields[k]; ok {
			merge(d, c)
		} else {
			dst.Fields[k] = c
		}
	}
	for _, pair := range [][2]**ReadNode{{&dst.Asked, &src.Asked}, {&dst.Any, &src.Any}} {
		d, s := pair[0], pair[1]
		switch {
		case *s == nil:
		case *d == nil:
			*d = *s
		default:
			merge(*d, *s)
		}
	}
}

func fieldsReadNow(n *ReadNode) bool {
	for _, c := range n.Fields {
		if c.readsNow() {
			return true
		}
	}
	return false
}

// step is one step of a path into input: a constant key, an asked id, or any key.
type step struct {
	key   string
	asked bool
	any   bool
}

type path []step

func (p path) extend(s step) path { return append(slices.Clip(p), s) }

// isAsked reports whether p is an element of input.resource_ids.
func (p path) isAsked() bool {
	return len(p) == 2 && p[0].key == "resource_ids" && !p[0].asked && !p[0].any && (p[1].any || p[1].asked)
}

func (p path) isNow() bool { return len(p) == 1 && p[0].key == "now" && !p[0].any && !p[0].asked }

func (p path) String() string {
	var b strings.Builder
	b.WriteString("input")
	for _, s := range p {
		switch {
		case s.asked:
			b.WriteString("[asked]")
		case s.any:
			b.WriteString("[_]")
		default:
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

// val is what the analysis knows of a term's value: a place in input, a constant, something
// else (computed, or of data), or nothing yet (a variable not yet bound).
type val struct {
	kind valKind
	path path      // kindInput
	con  *ast.Term // kindConst
}

type valKind uint8

const (
	kindOther valKind = iota
	kindInput
	kindConst
	kindUnbound
)

var other = val{}

// use is how a value is used where it is read.
type use uint8

const (
	useTruthy use = iota + 1 // whether it is defined and not false
	useWhole
)

// env holds the variables bound in a body, and sees its parent's.
type env struct {
	parent *env
	vars   map[ast.Var]val
}

func newEnv(parent *env) *env { return &env{parent: parent, vars: map[ast.Var]val{}} }

func (e *env) get(v ast.Var) (val, bool) {
	for ; e != nil; e = e.parent {
		if x, ok := e.vars[v]; ok {
			return x, true
		}
	}
	return val{}, false
}

func (e *env) bind(v ast.Var, x val) { e.vars[v] = x }

type analyser struct {
	compiler  *ast.Compiler
	root      *ReadNode
	nowConsts []*ast.Term
	why       string
	rules     map[string]*ruleResult // by rule path and abstract arguments
	depth     int
}

// ruleResult is the value of a rule (or a function called with some arguments) once analysed;
// nil while it is being analysed.
type ruleResult struct {
	done bool
	v    val
}

// unbounded notes that the reads cannot be bounded, keeping the first reason.
func (a *analyser) unbounded(format string, args ...any) {
	if a.why == "" {
		a.why = fmt.Sprintf(format, args...)
	}
}

// node returns the node of p, made as needed.
func (a *analyser) node(p path) *ReadNode {
	n := a.root
	for _, s := range p {
		var next **ReadNode
		switch {
		case s.asked:
			next = &n.Asked
		case s.any:
			next = &n.Any
		default:
			if n.Fields == nil {
				n.Fields = map[string]*ReadNode{}
			}
			c, ok := n.Fields[s.key]
			if !ok {
				c = &ReadNode{}
				n.Fields[s.key] = c
			}
			n = c
			continue
		}
		if *next == nil {
			*next = &ReadNode{}
		}
		n = *next
	}
	return n
}

// read notes that x is read, used as u.
func (a *analyser) read(x val, u use) {
	if x.kind != kindInput {
		return
	}
	n := a.node(x.path)
	switch u {
	case useTruthy:
		n.Truthy = true
	case useWhole:
		n.Whole = true
	}
}

// body analyses the expressions of a body in order, binding variables in e.
func (a *analyser) body(e *env, b ast.Body) {
	for _, expr := range b {
		a.expr(e, expr)
	}
}

func (a *analyser) expr(e *env, expr *ast.Expr) {
	if len(expr.With) > 0 {
		a.unbounded("it uses the with keyword")
	}
	if expr.Negated {
		e = newEnv(e) // what a negation binds stays inside it
	}
	switch t := expr.Terms.(type) {
	case *ast.Term:
		a.read(a.term(e, t), useTruthy)
	case []*ast.Term:
		a.call(e, t, true)
	case *ast.Every:
		inner := newEnv(e)
		domain := a.term(e, t.Domain)
		var key, elem val = other, other
		if domain.kind == kindInput {
			a.node(domain.path) // iterated: reached
			elem = val{kind: kindInput, path: domain.path.extend(step{any: true})}
		}
		a.unify(inner, t.Key, key)
		a.unify(inner, t.Value, elem)
		a.body(inner, t.Body)
	case *ast.SomeDecl:
		// Declarations only; the compiler rewrote any `some x in y` into references.
	}
}

// Comparison built-ins: their outcome depends only on how their operands compare, so a
// comparison with input.now needs only that outcome in a key.
var comparisons = map[string]bool{
	ast.GreaterThan.Name: true, ast.GreaterThanEq.Name: true, ast.LessThan.Name: true,
	ast.LessThanEq.Name: true, ast.Equal.Name: true, ast.NotEqual.Name: true,
}

// call analyses a call expression or term (operator then operands, and maybe an output) and
// returns its output's value. asExpr says it stands as an expression of a body, where an
// output operand is bound to the result.
func (a *analyser) call(e *env, terms []*ast.Term, asExpr bool) val {
	op, ok := terms[0].Value.(ast.Ref)
	if !ok {
		a.unbounded("it calls %v, which the analysis does not know", terms[0])
		return other
	}
	operands := terms[1:]
	name := op.String()
	switch name {
	case ast.Equality.Name, ast.Assign.Name:
		if len(operands) == 2 {
			a.unifyTerms(e, operands[0], operands[1])
			return other
		}
	}
	if op[0].Equal(ast.DefaultRootDocument) {
		return a.callFunction(e, op, operands)
	}
	b, ok := ast.BuiltinMap[name]
	if !ok {
		a.unbounded("it calls %s, which the analysis does not know", name)
		return other
	}
	if b.Nondeterministic {
		a.unbounded("it calls %s, whose answer is not a function of its arguments", name)
	}
	n := len(b.Decl.FuncArgs().Args)
	args := make([]val, 0, n)
	for i, t := range operands {
		if i >= n {
			break
		}
		args = append(args, a.term(e, t))
	}
	switch {
	case comparisons[name] && len(args) == 2:
		a.compare(args[0], args[1], name)
	case !a.probe(name, args):
		for _, x := range args {
			a.read(x, useWhole)
		}
	}
	if len(operands) > n {
		a.unify(e, operands[n], other)
	}
	return other
}

// The built-ins whose outcome on one place of input and constants a key may hold: by name,
// the probe and the operands the place may be.
var probes = map[string]struct {
	op        string
	positions []int
}{
	ast.StartsWith.Name: {ProbeStartsWith, []int{0, 1}},
	ast.EndsWith.Name:   {ProbeEndsWith, []int{0, 1}},
	ast.Contains.Name:   {ProbeContains, []int{0, 1}},
	ast.Member.Name:     {ProbeMember, []int{0}},
	ast.Count.Name:      {ProbeCount, []int{0}},
}

// probe notes the call of built-in name with args as a probe of a place of input, when it is
// one (one operand that place, the others constants), and reports whether it was.
func (a *analyser) probe(name string, args []val) bool {
	t, ok := probes[name]
	if !ok {
		return false
	}
	at := -1
	for i, x := range args {
		switch x.kind {
		case kindInput:
			if at >= 0 || !slices.Contains(t.positions, i) {
				return false
			}
			at = i
		case kindConst:
		default:
			return false
		}
	}
	if at < 0 {
		return false
	}
	pr := Probe{Op: t.op, Pos: at}
	if len(args) == 2 {
		pr.Const = args[1-at].con
	}
	n := a.node(args[at].path)
	n.Probes = append(n.Probes, pr)
	return true
}

// compare notes a comparison (the built-in name: equal, lt, …) of x and y: with input.now on
// one side, the outcome of comparing the other side with the time is what is read; with a
// constant on one side, the outcome of comparing the other with it; otherwise both are read
// whole.
func (a *analyser) compare(x, y val, name string) {
	if y.kind == kindInput && y.path.isNow() {
		x, y = y, x
	}
	if x.kind != kindInput || !x.path.isNow() {
		if x.kind == kindConst && y.kind == kindInput {
			x, y = y, x
		}
		if x.kind == kindInput && y.kind == kindConst && !x.path.isNow() {
			op := ProbeCompare
			if name == ast.Equal.Name || name == ast.NotEqual.Name || name == ast.Equality.Name {
				op = ProbeEqual
			}
			n := a.node(x.path)
			n.Probes = append(n.Probes, Probe{Op: op, Const: y.con})
			return
		}
		a.read(x, useWhole)
		a.read(y, useWhole)
		return
	}
	a.node(x.path) // defined
	switch y.kind {
	case kindInput:
		if !y.path.isNow() {
			a.node(y.path).Now = true
		}
	case kindConst:
		for _, c := range a.nowConsts {
			if c.Equal(y.con) {
				return
			}
		}
		a.nowConsts = append(a.nowConsts, y.con)
	default:
		a.unbounded("it compares input.now with a computed value")
	}
}

// callFunction analyses a call of a function of the policy with operands and returns the
// value of its output.
func (a *analyser) callFunction(e *env, op ast.Ref, operands []*ast.Term) val {
	rules := a.compiler.GetRulesExact(op)
	if len(rules) == 0 {
		a.unbounded("it calls %v, which the policy does not define", op)
		return other
	}
	n := len(rules[0].Head.Args)
	args := make([]val, 0, n)
	for i, t := range operands {
		if i >= n {
			break
		}
		args = append(args, a.term(e, t))
	}
	out := a.rulesValue(op.String(), rules, args)
	if len(operands) > n {
		a.unify(e, operands[n], out)
	}
	return out
}

// rulesValue analyses the rules that define one document or function, called with args, and
// returns their value: the place in input every definition gives, when they all give the same
// one; otherwise whatever places they give are read whole.
func (a *analyser) rulesValue(name string, rules []*ast.Rule, args []val) val {
	key := name + "(" + argsKey(args) + ")"
	if r, ok := a.rules[key]; ok {
		if !r.done {
			return other // recursion, which the compiler refuses anyway
		}
		return r.v
	}
	r := &ruleResult{}
	a.rules[key] = r
	a.depth++
	defer func() { a.depth-- }()
	if a.depth > 64 {
		a.unbounded("its rules nest too deeply to analyse")
		r.done = true
		return other
	}
	var outs []val
	for _, rule := range rules {
		for def := rule; def != nil; def = def.Else {
			outs = append(outs, a.rule(def, args))
		}
	}
	r.v = a.join(outs)
	r.done = true
	return r.v
}

// join is the one value of outs, if they are all the same place in input; else every place
// among them is read whole and the value is unknown.
func (a *analyser) join(outs []val) val {
	if len(outs) == 1 && outs[0].kind == kindInput {
		return outs[0]
	}
	for _, x := range outs {
		a.read(x, useWhole)
	}
	return other
}

func argsKey(args []val) string {
	parts := make([]string, len(args))
	for i, x := range args {
		switch x.kind {
		case kindInput:
			parts[i] = x.path.String()
		case kindConst:
			parts[i] = x.con.String()
		default:
			parts[i] = "?"
		}
	}
	return strings.Join(parts, ",")
}

// rule analyses one definition of a rule (one branch of an else chain) with args bound to
// its parameters, and returns the value of its head.
func (a *analyser) rule(r *ast.Rule, args []val) val {
	e := newEnv(nil)
	for i, p := range r.Head.Args {
		x := other
		if i < len(args) {
			x = args[i]
		}
		a.unify(e, p, x)
	}
	a.body(e, r.Body)
	// A rule's head may name its document with variables (p[x] := ..., a.b[k] contains v);
	// those and its key are bound in its body, or are iterated.
	for _, t := range r.Head.Ref()[1:] {
		a.read(a.term(e, t), useWhole)
	}
	if r.Head.Key != nil {
		a.read(a.term(e, r.Head.Key), useWhole)
	}
	if r.Head.Value == nil {
		return other
	}
	v := a.term(e, r.Head.Value)
	if r.Head.Key != nil || len(r.Head.Ref()) > 1 && !r.Head.Ref()[len(r.Head.Ref())-1].IsGround() {
		// Part of a set or object the rule builds: the whole document is computed.
		a.read(v, useWhole)
		return other
	}
	return v
}

// unifyTerms analyses x = y (or x := y).
func (a *analyser) unifyTerms(e *env, x, y *ast.Term) {
	if v, ok := x.Value.(ast.Var); ok && !bound(e, v) {
		a.unify(e, x, a.term(e, y))
		return
	}
	if v, ok := y.Value.(ast.Var); ok && !bound(e, v) {
		a.unify(e, y, a.term(e, x))
		return
	}
	if isPattern(x) && !isPattern(y) {
		a.unify(e, x, a.term(e, y))
		return
	}
	if isPattern(y) && !isPattern(x) {
		a.unify(e, y, a.term(e, x))
		return
	}
	// Two values: a comparison.
	a.compare(a.term(e, x), a.term(e, y), ast.Equality.Name)
}

func bound(e *env, v ast.Var) bool {
	_, ok := e.get(v)
	return ok
}

// isPattern reports whether t is an array or object that may bind variables inside it.
func isPattern(t *ast.Term) bool {
	switch t.Value.(type) {
	case *ast.Array, ast.Object:
		return !t.IsGround()
	}
	return false
}

// unify binds the variables of the pattern t to the value x: a variable not yet bound takes
// x; an array or object pattern reads x whole and binds its variables to x's elements; any
// other term is compared with x.
func (a *analyser) unify(e *env, t *ast.Term, x val) {
	switch p := t.Value.(type) {
	case ast.Var:
		if p.IsWildcard() {
			if x.kind == kindInput {
				a.node(x.path)
			}
			return
		}
		if y, ok := e.get(p); ok && y.kind != kindUnbound {
			a.compare(y, x, ast.Equality.Name)
			return
		}
		if x.kind == kindInput {
			a.node(x.path) // bound only if defined
		}
		e.bind(p, x)
		return
	case *ast.Array:
		if !t.IsGround() {
			a.read(x, useWhole)
			for i := range p.Len() {
				a.unify(e, p.Elem(i), elementOf(x))
			}
			return
		}
	case ast.Object:
		if !t.IsGround() {
			a.read(x, useWhole)
			p.Foreach(func(k, v *ast.Term) {
				a.read(a.term(e, k), useWhole)
				a.unify(e, v, fieldOf(x, k))
			})
			return
		}
	}
	a.compare(a.term(e, t), x, ast.Equality.Name)
}

// elementOf is an element of x, where x is an array.
func elementOf(x val) val {
	if x.kind != kindInput {
		return other
	}
	return val{kind: kindInput, path: x.path.extend(step{any: true})}
}

// fieldOf is x's field k, where x is an object.
func fieldOf(x val, k *ast.Term) val {
	if x.kind != kindInput {
		return other
	}
	if s, ok := k.Value.(ast.String); ok {
		return val{kind: kindInput, path: x.path.extend(step{key: string(s)})}
	}
	return val{kind: kindInput, path: x.path.extend(step{any: true})}
}

// term returns the value of t, analysing what evaluating it reads: places in input that it
// holds inside (the elements of a composite term) are read whole.
func (a *analyser) term(e *env, t *ast.Term) val {
	switch v := t.Value.(type) {
	case ast.Var:
		if x, ok := e.get(v); ok {
			return x
		}
		return val{kind: kindUnbound}
	case ast.Ref:
		return a.ref(e, v)
	case ast.Call:
		return a.call(e, v, false)
	case *ast.Array:
		for i := range v.Len() {
			a.read(a.term(e, v.Elem(i)), useWhole)
		}
	case ast.Object:
		v.Foreach(func(k, x *ast.Term) {
			a.read(a.term(e, k), useWhole)
			a.read(a.term(e, x), useWhole)
		})
	case ast.Set:
		v.Foreach(func(x *ast.Term) { a.read(a.term(e, x), useWhole) })
	case *ast.ArrayComprehension:
		inner := newEnv(e)
		a.body(inner, v.Body)
		a.read(a.term(inner, v.Term), useWhole)
	case *ast.SetComprehension:
		inner := newEnv(e)
		a.body(inner, v.Body)
		a.read(a.term(inner, v.Term), useWhole)
	case *ast.ObjectComprehension:
		inner := newEnv(e)
		a.body(inner, v.Body)
		a.read(a.term(inner, v.Key), useWhole)
		a.read(a.term(inner, v.Value), useWhole)
	default:
		if t.IsGround() {
			return val{kind: kindConst, con: t}
		}
	}
	if t.IsGround() {
		return val{kind: kindConst, con: t}
	}
	return other
}

// ref returns the value of the reference r, analysing what it reads: a reference into input
// is a place (every step of it reached), a reference into data is the value of the rules it
// names, a reference below a variable continues the variable's place.
func (a *analyser) ref(e *env, r ast.Ref) val {
	var x val
	rest := r[1:]
	switch h := r[0].Value.(type) {
	case ast.Var:
		switch {
		case r[0].Equal(ast.InputRootDocument):
			x = val{kind: kindInput}
		case r[0].Equal(ast.DefaultRootDocument):
			x, rest = a.dataRef(e, r)
		default:
			bx, ok := e.get(h)
			if !ok || bx.kind == kindUnbound {
				a.unbounded("it reads %v before binding it", r[0])
				return other
			}
			x = bx
		}
	default:
		x = a.term(e, r[0])
	}
	for _, t := range rest {
		s := a.stepOf(e, t, x)
		if x.kind == kindInput {
			x = val{kind: kindInput, path: x.path.extend(s)}
		} else {
			x = other
		}
	}
	if x.kind == kindInput {
		a.node(x.path)
	}
	return x
}

// stepOf returns the step a term of a reference takes into x: its key when it is a constant
// string, an asked id when it is bound to an element of input.resource_ids, and any key
// otherwise (binding it, if it is a variable not yet bound).
func (a *analyser) stepOf(e *env, t *ast.Term, x val) step {
	if s, ok := t.Value.(ast.String); ok {
		return step{key: string(s)}
	}
	if v, ok := t.Value.(ast.Var); ok {
		if y, ok := e.get(v); ok && y.kind != kindUnbound {
			if y.kind == kindInput && y.path.isAsked() {
				return step{asked: true}
			}
			if y.kind == kindConst {
				if s, ok := y.con.Value.(ast.String); ok {
					return step{key: string(s)}
				}
			}
			a.read(y, useWhole)
			return step{any: true}
		}
		if !v.IsWildcard() {
			e.bind(v, other) // a key of x, iterated
		}
		return step{any: true}
	}
	k := a.term(e, t)
	if k.kind == kindInput && k.path.isAsked() {
		return step{asked: true}
	}
	a.read(k, useWhole)
	return step{any: true}
}

// dataRef analyses a reference into data: the rules it names, and returns the value of the
// document and the steps of r beyond it. A reference to several rules at once (a package, or
// a document named by a variable) reads each of their values whole.
func (a *analyser) dataRef(e *env, r ast.Ref) (val, ast.Ref) {
	for i := 2; i <= len(r); i++ {
		prefix := r[:i]
		if !prefix.IsGround() {
			break
		}
		if rules := a.compiler.GetRulesExact(prefix); len(rules) > 0 {
			if len(rules[0].Head.Args) > 0 {
				a.unbounded("it refers to the function %v without calling it", prefix)
				return other, nil
			}
			return a.rulesValue(prefix.String(), rules, nil), r[i:]
		}
	}
	rules := a.compiler.GetRulesDynamicWithOpts(r, ast.RulesOptions{IncludeHiddenModules: true})
	if len(rules) == 0 {
		return other, nil // no rule: a base document, which Grantry never loads
	}
	byName := map[string][]*ast.Rule{}
	for _, rule := range rules {
		name := rule.Ref().String()
		byName[name] = append(byName[name], rule)
	}
	for name, group := range byName {
		if len(group[0].Head.Args) > 0 {
			continue // a function named by a prefix is not called by it
		}
		a.read(a.rulesValue(name, group, nil), useWhole)
	}
	for _, t := range r[1:] {
		if v, ok := t.Value.(ast.Var); ok && !bound(e, v) {
			e.bind(v, other)
		}
	}
	return other, nil
}
