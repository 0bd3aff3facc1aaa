package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/grantry/grantry/policy"
)

// The policy folders outside the package: the family of policies that the memo analysis is
// tested against, each saying in a "# memo:" line what the analysis should find, and the
// examples a user copies to start a policy of their own.
const (
	familyDir   = "../testdata/policies"
	examplesDir = "../examples/policies"
)

// policyFolder is one folder of .rego files that Grantry could load as its policy.
type policyFolder struct {
	name string // as the subtest is named: the folder's path in the repository
	dir  string
}

// policyFolders returns every folder of the family and of the examples; it fails when either
// holds none, so that a moved folder cannot pass by being tested on nothing.
func policyFolders(tb testing.TB, roots ...string) []policyFolder {
	tb.Helper()
	var out []policyFolder
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			tb.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			n++
			out = append(out, policyFolder{name: strings.TrimPrefix(root, "../") + "/" + e.Name(), dir: filepath.Join(root, e.Name())})
		}
		if n == 0 {
			tb.Fatalf("%s holds no policy folders", root)
		}
	}
	return out
}

// loadFolder reads the folder's modules, as GRANTRY_POLICY_DIR would.
func loadFolder(tb testing.TB, dir string) []policy.Module {
	tb.Helper()
	mods, err := policy.LoadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return mods
}

// TestFamilyRegoTestsPass holds every folder to the gate `grantry policy test` applies: it has
// tests, they all pass, and the policy defines what Grantry queries.
func TestFamilyRegoTestsPass(t *testing.T) {
	ctx := context.Background()
	for _, f := range policyFolders(t, familyDir, examplesDir) {
		t.Run(f.name, func(t *testing.T) {
			mods := loadFolder(t, f.dir)
			ran, failures, err := policy.RunTests(ctx, mods)
			if err != nil {
				t.Fatal(err)
			}
			if ran == 0 {
				t.Error("no Rego tests (test_* rules in a *_test.rego file)")
			}
			for _, fail := range failures {
				t.Errorf("Rego test %s", fail)
			}
			if _, err := policy.New(ctx, mods); err != nil {
				t.Errorf("Grantry could not serve it: %v", err)
			}
		})
	}
}

// TestFamilyRegoTestsCoverEveryLine runs each folder's tests under OPA's coverage tracer and
// fails on any line of a policy module that no test evaluates, as the shipped policy's tests
// are held to: every rule of every policy is tested.
func TestFamilyRegoTestsCoverEveryLine(t *testing.T) {
	ctx := context.Background()
	for _, f := range policyFolders(t, familyDir, examplesDir) {
		t.Run(f.name, func(t *testing.T) {
			parsed := map[string]*ast.Module{}
			var sources []string
			for _, m := range loadFolder(t, f.dir) {
				mod, err := ast.ParseModuleWithOpts(m.Name, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
				if err != nil {
					t.Fatal(err)
				}
				parsed[m.Name] = mod
				if !m.IsTest() {
					sources = append(sources, m.Name)
				}
			}
			cov := cover.New()
			ch, err := tester.NewRunner().SetDefaultRegoVersion(ast.RegoV1).SetCoverageQueryTracer(cov).SetModules(parsed).RunTests(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for r := range ch {
				if r.Fail || r.Error != nil {
					t.Errorf("Rego test %s.%s failed: %v", r.Package, r.Name, r.Error)
				}
			}
			report := cov.Report(parsed)
			for _, name := range sources {
				fr, ok := report.Files[name]
				if !ok || fr.CoveredLines == 0 {
					t.Errorf("no test evaluates %s", name)
					continue
				}
				for _, r := range fr.NotCovered {
					t.Errorf("%s lines %d to %d are not covered by any Rego test", name, r.Start.Row, r.End.Row)
				}
			}
		})
	}
}

// TestFamilyIsFormatted keeps every module as `opa fmt` writes it, as make lint does the
// shipped policy.
func TestFamilyIsFormatted(t *testing.T) {
	for _, f := range policyFolders(t, familyDir, examplesDir) {
		t.Run(f.name, func(t *testing.T) {
			for _, m := range loadFolder(t, f.dir) {
				formatted, err := format.SourceWithOpts(m.Name, []byte(m.Source), format.Opts{RegoVersion: ast.RegoV1})
				if err != nil {
					t.Fatalf("%s: %v", m.Name, err)
				}
				if diff := cmp.Diff(string(formatted), m.Source); diff != "" {
					t.Errorf("%s is not opa fmt-clean (-want +got):\n%s", m.Name, diff)
				}
			}
		})
	}
}

// memoLine is the one line of a family policy's opening comment that says what the memo
// analysis should find of it: bounded, or unbounded and why.
var memoLine = regexp.MustCompile(`^# memo: (bounded|unbounded \(.+\))$`)

// TestFamilyMemoLines: each family policy's authz.rego opens with a comment block that holds
// exactly one memo line, well formed, and the analysis of what the policy reads (policy.Reads)
// finds what it says of both rules.
func TestFamilyMemoLines(t *testing.T) {
	for _, f := range policyFolders(t, familyDir) {
		t.Run(f.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(f.dir, "authz.rego"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(src), "\n")
			if !strings.HasPrefix(lines[0], "# ") {
				t.Errorf("authz.rego opens with %q, not a comment saying what it decides", lines[0])
			}
			var memos []string
			header := true
			for i, line := range lines {
				if !strings.HasPrefix(line, "#") {
					header = false
				}
				if !strings.HasPrefix(line, "# memo:") {
					continue
				}
				memos = append(memos, line)
				switch {
				case !memoLine.MatchString(line):
					t.Errorf("authz.rego:%d: %q is neither `# memo: bounded` nor `# memo: unbounded (<why>)`", i+1, line)
				case !header:
					t.Errorf("authz.rego:%d: the memo line is not in the opening comment block", i+1)
				}
			}
			if len(memos) != 1 {
				t.Fatalf("authz.rego has %d memo lines, want exactly one: %q", len(memos), memos)
			}
			e, err := policy.New(context.Background(), loadFolder(t, f.dir))
			if err != nil {
				t.Fatal(err)
			}
			want := memos[0] == "# memo: bounded"
			for _, all := range []bool{false, true} {
				if r := e.Reads(all); r.Bounded() != want {
					t.Errorf("all=%v: the analysis finds Bounded() = %v (%s), the policy says %q\n%s", all, r.Bounded(), r.Why(), memos[0], r)
				}
			}
		})
	}
}
