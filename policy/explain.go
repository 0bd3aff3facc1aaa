package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Explanation says what the policy decided about one input, and why.
type Explanation struct {
	Allowed bool
	// Reasons are the strings of the policy's reasons rule, sorted; empty when the policy has
	// no such rule. Values of the rule that are not strings are left out.
	Reasons []string
	// Revision is the revision of the policy that decided.
	Revision string
}

// ReasonEvaluationFailed is the reason given when the policy could not be evaluated, which
// denies.
const ReasonEvaluationFailed = "policy evaluation failed"

// ErrEvaluation is what Explain's errors wrap when the policy itself failed, as against the
// input it was asked about.
var ErrEvaluation = errors.New("policy evaluation failed")

// Explain decides input as allow does and evaluates the reasons rule. When the policy cannot
// be evaluated it returns the error together with the explanation of the deny that follows
// from it, so that a caller can both log the error and answer.
func (e *Engine) Explain(ctx context.Context, input ast.Value) (Explanation, error) {
	ex := Explanation{Revision: e.revision, Reasons: []string{}}
	allowed, err := decide(ctx, e.allow, input)
	if err != nil {
		ex.Reasons = []string{ReasonEvaluationFailed}
		return ex, fmt.Errorf("%w: %w", ErrEvaluation, err)
	}
	ex.Allowed = allowed
	rs, err := eval(ctx, e.reasons, input)
	if err != nil {
		return ex, fmt.Errorf("%w: reasons: %w", ErrEvaluation, err)
	}
	if len(rs) == 1 && len(rs[0].Expressions) == 1 {
		// A set comes back from OPA as a slice.
		values, _ := rs[0].Expressions[0].Value.([]any)
		for _, v := range values {
			if r, ok := v.(string); ok {
				ex.Reasons = append(ex.Reasons, r)
			}
		}
	}
	slices.Sort(ex.Reasons)
	return ex, nil
}
