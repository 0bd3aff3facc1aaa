package uid_test

import (
	"regexp"
	"testing"

	"github.com/grantry/grantry/internal/uid"
)

// v4 is the canonical lowercase form with the version nibble 4 and the variant bits 10.
var v4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNew(t *testing.T) {
	const n = 10000
	seen := make(map[string]bool, n)
	for range n {
		id := uid.New()
		if !v4.MatchString(id) {
			t.Fatalf("New() = %q, want a lowercase hyphenated version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("New() returned %q twice", id)
		}
		seen[id] = true
	}
}
