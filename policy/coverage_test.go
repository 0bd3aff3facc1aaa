package policy

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestRegoTestsCoverEveryLine runs authz_test.rego under OPA's coverage tracer and fails on
// any line of authz.rego that no test evaluates: every rule, and every line of it, is tested.
func TestRegoTestsCoverEveryLine(t *testing.T) {
	parsed, err := parse(Embedded(), true)
	if err != nil {
		t.Fatal(err)
	}
	cov := cover.New()
	ch, err := tester.NewRunner().SetDefaultRegoVersion(ast.RegoV1).SetCoverageQueryTracer(cov).SetModules(parsed).RunTests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := range ch {
		if r.Fail || r.Error != nil {
			t.Errorf("Rego test %s.%s failed: %v", r.Package, r.Name, r.Error)
		}
	}
	report := cov.Report(parsed)
	fr, ok := report.Files["authz.rego"]
	if !ok || fr.CoveredLines == 0 {
		t.Fatalf("the coverage report has nothing for authz.rego: %+v", report.Files)
	}
	for _, r := range fr.NotCovered {
		t.Errorf("authz.rego lines %d to %d are not covered by any Rego test", r.Start.Row, r.End.Row)
	}
}
