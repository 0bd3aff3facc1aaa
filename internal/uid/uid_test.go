package uid_test

import (
	"regexp"
	"testing"

	"github.com/grantry/grantry/internal/uid"
)

// v4 is the canonical lowercase form with the version nibble 4 and the variant bits 10.
var v4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() string
	}{{"New", uid.New}, {"NewCheap", uid.NewCheap}} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 10000
			seen := make(map[string]bool, n)
			for range n {
				id := tc.new()
				if !v4.MatchString(id) {
					t.Fatalf("%s() = %q, want a lowercase hyphenated version 4 UUID", tc.name, id)
				}
				if seen[id] {
					t.Fatalf("%s() returned %q twice", tc.name, id)
				}
				seen[id] = true
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	b.Run("New", func(b *testing.B) {
		for b.Loop() {
			uid.New()
		}
	})
	b.Run("NewCheap", func(b *testing.B) {
		for b.Loop() {
			uid.NewCheap()
		}
	})
}
