// Package policy holds Grantry's Rego policy and the Engine that decides access with it.
//
// The shipped policy is authz.rego (package grantry.authz) with its unit tests in
// authz_test.rego, both embedded in the binary. GRANTRY_POLICY_DIR replaces them with a
// folder of .rego files that must define the same two rules, allow and allow_all, may define
// reasons to explain its decisions, and must pass its own tests. Live holds the running
// policy and swaps in a new one atomically; Watch reloads a folder when it changes.
package policy

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

//go:embed authz.rego authz_test.rego
var embedded embed.FS

// The rules Grantry queries. A policy must define allow and allow_all; reasons is optional.
const (
	AllowQuery    = "data.grantry.authz.allow"
	AllowAllQuery = "data.grantry.authz.allow_all"
	// ReasonsQuery is the set of strings that explains a decision (POST /provisions/explain).
	ReasonsQuery = "data.grantry.authz.reasons"
)

// Module is one Rego source file.
type Module struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// IsTest reports whether the module holds tests rather than policy: its name ends in _test.rego.
func (m Module) IsTest() bool { return strings.HasSuffix(m.Name, "_test.rego") }

// Embedded returns the shipped policy and its tests.
func Embedded() []Module {
	var mods []Module
	for _, name := range []string{"authz.rego", "authz_test.rego"} {
		src, err := embedded.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("embedded policy %s: %v", name, err)) // cannot happen: go:embed checked it
		}
		mods = append(mods, Module{Name: name, Source: string(src)})
	}
	return mods
}

// LoadDir reads every .rego file below dir, tests included, named by their path relative to dir.
// Hidden files and folders (named with a leading dot) are skipped, as editors' swap files are
// hidden; and so a Kubernetes ConfigMap mount, whose visible files are symbolic links (which
// are followed) into hidden folders, yields each file once.
func LoadDir(dir string) ([]Module, error) {
	var mods []Module
	err := walkRego(dir, func(path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		mods = append(mods, Module{Name: filepath.ToSlash(rel), Source: string(src)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read policy folder %s: %w", dir, err)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("policy folder %s holds no .rego files", dir)
	}
	return mods, nil
}

// walkRego calls fn with the path of every .rego file below dir, skipping hidden entries.
func walkRego(dir string, fn func(path string) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || filepath.Ext(path) != ".rego" {
			return nil
		}
		return fn(path)
	})
}

// Engine decides access with one compiled policy. Its queries are prepared once and are safe
// for concurrent use. It fails closed: an undefined result, a result other than the boolean
// true, or an evaluation error is a deny.
type Engine struct {
	allow    rego.PreparedEvalQuery
	allowAll rego.PreparedEvalQuery
	reasons  rego.PreparedEvalQuery
	// reads is what allow and allow_all read of their input.
	reads    [2]*Reads
	revision string
	modules  []Module
}

// New compiles the policy modules (test modules are kept for display but not compiled into the
// decision), checks that they define allow and allow_all, and prepares both queries.
func New(ctx context.Context, modules []Module) (*Engine, error) {
	parsed, err := parse(modules, false)
	if err != nil {
		return nil, err
	}
	compiler := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if compiler.Compile(parsed); compiler.Failed() {
		return nil, fmt.Errorf("compile policy: %w", compiler.Errors)
	}
	var missing []string
	for _, q := range []string{AllowQuery, AllowAllQuery} {
		if len(compiler.GetRulesExact(ast.MustParseRef(q))) == 0 {
			missing = append(missing, q)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("policy does not define %s (package grantry.authz must define the rules allow and allow_all)", strings.Join(missing, " and "))
	}
	prepare := func(q string) (rego.PreparedEvalQuery, error) {
		pq, err := rego.New(rego.Compiler(compiler), rego.Query(q), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
		if err != nil {
			return pq, fmt.Errorf("prepare %s: %w", q, err)
		}
		return pq, nil
	}
	e := &Engine{revision: Revision(modules), modules: slices.Clone(modules)}
	for i, q := range []string{AllowQuery, AllowAllQuery} {
		e.reads[i] = analyseReads(compiler, ast.MustParseRef(q))
	}
	if e.allow, err = prepare(AllowQuery); err != nil {
		return nil, err
	}
	if e.allowAll, err = prepare(AllowAllQuery); err != nil {
		return nil, err
	}
	if e.reasons, err = prepare(ReasonsQuery); err != nil {
		return nil, err
	}
	return e, nil
}

// Reads returns what the rule a question is decided by reads of its input: allow_all's when
// all, else allow's.
func (e *Engine) Reads(all bool) *Reads {
	if all {
		return e.reads[1]
	}
	return e.reads[0]
}

// Decide evaluates allow_all (when all) or allow on input, failing closed: an undefined
// result, a result other than the boolean true, or an error is a deny.
func (e *Engine) Decide(ctx context.Context, all bool, input ast.Value) (bool, error) {
	q := e.allow
	if all {
		q = e.allowAll
	}
	return decide(ctx, q, input)
}

// Revision is the SHA-256 of the policy modules, tests included, in hex.
func (e *Engine) Revision() string { return e.revision }

// Modules returns the modules the engine was built from.
func (e *Engine) Modules() []Module { return slices.Clone(e.modules) }

// noMetrics is passed to every query: nothing reads OPA's per-query timers, and creating them
// costs more than a small policy's evaluation.
var noMetrics = metrics.NoOp()

// eval runs q on input. The query stops when ctx ends, as rego would arrange by starting a
// goroutine per query; a callback registered on ctx costs far less.
func eval(ctx context.Context, q rego.PreparedEvalQuery, input ast.Value, opts ...rego.EvalOption) (rego.ResultSet, error) {
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	return q.Eval(ctx, append(opts, rego.EvalParsedInput(input), rego.EvalMetrics(noMetrics), rego.EvalExternalCancel(cancel))...)
}

// noCache is the virtual document cache of allow and allow_all: a decision reads each rule
// and function of the policy about once per resource asked about, so OPA's cache, made anew for
// every evaluation, only costs. Explain keeps OPA's, since reasons reads
// allow_all several times.
type noCache struct{}

func (noCache) Push()                         {}
func (noCache) Pop()                          {}
func (noCache) Get(ast.Ref) (*ast.Term, bool) { return nil, false }
func (noCache) Put(ast.Ref, *ast.Term)        {}
func (noCache) Keys() []ast.Ref               { return nil }

// decide evaluates a boolean rule, failing closed.
func decide(ctx context.Context, q rego.PreparedEvalQuery, input ast.Value) (bool, error) {
	rs, err := eval(ctx, q, input, rego.EvalVirtualCache(noCache{}))
	if err != nil {
		return false, fmt.Errorf("evaluate policy: %w", err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return false, nil
	}
	allowed, ok := rs[0].Expressions[0].Value.(bool)
	return ok && allowed, nil
}

// Revision returns the hex SHA-256 over the modules' names and sources, in name order, so that
// the same files always give the same revision.
func Revision(modules []Module) string {
	sorted := slices.Clone(modules)
	slices.SortFunc(sorted, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, m := range sorted {
		fmt.Fprintf(h, "%d:%s\n%d:%s\n", len(m.Name), m.Name, len(m.Source), m.Source)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFailure is one Rego test that did not pass.
type TestFailure struct {
	Name string // package and rule, e.g. data.grantry.authz_test.test_allow
	Err  error  // nil when the test was simply false
}

func (f TestFailure) String() string {
	if f.Err != nil {
		return f.Name + ": " + f.Err.Error()
	}
	return f.Name + ": failed"
}

// RunTests runs the test_* rules of the modules (policy and tests together) and returns how many
// ran and the ones that failed. An error means the modules could not be compiled.
func RunTests(ctx context.Context, modules []Module) (ran int, failures []TestFailure, err error) {
	results, err := Test(ctx, modules)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range results {
		if !r.Passed {
			failures = append(failures, TestFailure{Name: r.Name, Err: r.Err})
		}
	}
	return len(results), failures, nil
}

// TestResult is the outcome of one Rego test.
type TestResult struct {
	Name     string // package and rule, e.g. data.grantry.authz_test.test_allow
	Passed   bool
	Err      error // why it could not be evaluated; nil when it passed or was simply false
	Duration time.Duration
}

// Test runs the test_* rules of the modules (policy and tests together) and returns every
// result, ordered by name. An error means the modules could not be compiled.
func Test(ctx context.Context, modules []Module) ([]TestResult, error) {
	parsed, err := parse(modules, true)
	if err != nil {
		return nil, err
	}
	ch, err := tester.NewRunner().SetDefaultRegoVersion(ast.RegoV1).SetModules(parsed).RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("run policy tests: %w", err)
	}
	var results []TestResult
	for r := range ch {
		results = append(results, TestResult{
			Name: r.Package + "." + r.Name, Passed: !r.Fail && r.Error == nil, Err: r.Error, Duration: r.Duration,
		})
	}
	slices.SortFunc(results, func(a, b TestResult) int { return strings.Compare(a.Name, b.Name) })
	return results, nil
}

func parse(modules []Module, withTests bool) (map[string]*ast.Module, error) {
	parsed := make(map[string]*ast.Module, len(modules))
	var errs []error
	for _, m := range modules {
		if m.IsTest() && !withTests {
			continue
		}
		mod, err := ast.ParseModuleWithOpts(m.Name, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parsed[m.Name] = mod
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	if len(parsed) == 0 {
		return nil, errors.New("parse policy: no policy modules")
	}
	return parsed, nil
}
