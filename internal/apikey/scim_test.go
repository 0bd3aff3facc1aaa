package apikey

import (
	"strings"
	"testing"
)

func TestGenerateSCIM(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := GenerateSCIM()
		body, ok := strings.CutPrefix(k, SCIMPrefix)
		if !ok || len(body) != bodyLen || strings.HasPrefix(k, Prefix) {
			t.Fatalf("GenerateSCIM() = %q, want %q and %d base62 digits", k, SCIMPrefix, bodyLen)
		}
		for _, r := range body {
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				t.Fatalf("GenerateSCIM() = %q has %q, not base62", k, r)
			}
		}
		if seen[k] {
			t.Fatalf("GenerateSCIM() repeated %q", k)
		}
		seen[k] = true
	}
}
