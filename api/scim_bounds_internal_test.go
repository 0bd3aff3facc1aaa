package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/grantry/grantry/internal/scim"
)

// TestCheckFilterWork: a filter is refused as tooMany exactly when its terms times the
// resources it would be evaluated on pass maxFilterWork.
func TestCheckFilterWork(t *testing.T) {
	terms := func(n int) *scim.Filter {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`userName eq "u%d"`, i)
		}
		f, err := scim.ParseFilter(strings.Join(parts, " or "))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		f          *scim.Filter
		candidates int
		refused    bool
	}{
		{nil, 10 * maxFilterWork, false},
		{terms(1), maxFilterWork, false},
		{terms(1), maxFilterWork + 1, true},
		{terms(scim.MaxFilterTerms), maxFilterWork / scim.MaxFilterTerms, false},
		{terms(scim.MaxFilterTerms), maxFilterWork/scim.MaxFilterTerms + 1, true},
	} {
		err := checkFilterWork(tc.f, tc.candidates)
		te, ok := errors.AsType[*scimTypeError](err)
		if refused := ok && te.Type == scim.TooMany; refused != tc.refused {
			t.Errorf("checkFilterWork(%d terms, %d candidates) = %v, want refused %v", tc.f.Terms(), tc.candidates, err, tc.refused)
		}
	}
}

// TestFilterPageStopsAtTheDeadline: filtering stops once the request's context is done, with
// an error that is not a store's.
func TestFilterPageStopsAtTheDeadline(t *testing.T) {
	f, err := scim.ParseFilter(`userName eq "x"`)
	if err != nil {
		t.Fatal(err)
	}
	candidates := make([]map[string]any, 1000)
	for i := range candidates {
		candidates[i] = map[string]any{"userName": fmt.Sprint(i)}
	}
	q := listQuery{filter: f, startIndex: 1, count: 10}
	if _, _, err := filterPage(context.Background(), scim.User, q, candidates); err != nil {
		t.Fatalf("filterPage = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	_, _, err = filterPage(ctx, scim.User, q, candidates)
	if err != errSCIMDeadline || isStoreError(err) {
		t.Errorf("filterPage after the deadline = %v, want errSCIMDeadline, not a store error", err)
	}
}
