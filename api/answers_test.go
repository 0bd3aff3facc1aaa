package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestUserResourcesJSONWritesWhatTheMapDid holds remove_from_user's hand-written answer to
// what encoding/json wrote of the gin.H map it replaced, for lists of every length to three and
// for ids and names that need escaping.
func TestUserResourcesJSONWritesWhatTheMapDid(t *testing.T) {
	refs := []resourceRef{
		{ID: "5f0c6a52-1c1b-4a6e-9a7e-3b1f2f0e9d11", Name: "gpt-4o"},
		{ID: "0b6e…", Name: `a "quoted" <name> & \ more`},
		{ID: "x\u2028y", Name: "control \x01\b\f\n and \xff invalid"},
	}
	users := []string{"ada", "", `<b>"ada"</b>`, strings.Repeat("é", 300)}
	for _, user := range users {
		for n := 0; n <= len(refs); n++ {
			list := refs[:n]
			want, err := json.Marshal(gin.H{"user_id": user, "resources": list})
			if err != nil {
				t.Fatal(err)
			}
			if got := userResourcesJSON(user, list); string(got) != string(want) {
				t.Errorf("userResourcesJSON(%q, %d refs) =\n%s\nwant\n%s", user, n, got, want)
			}
		}
	}
}

// BenchmarkUserResourcesAnswer compares remove_from_user's answer for a user of 50 resources,
// written by userResourcesJSON and by encoding/json from a gin.H map, as it was.
func BenchmarkUserResourcesAnswer(b *testing.B) {
	refs := make([]resourceRef, 50)
	for i := range refs {
		refs[i] = resourceRef{ID: "5f0c6a52-1c1b-4a6e-9a7e-3b1f2f0e9d11", Name: "model-" + strings.Repeat("x", i%10)}
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			userResourcesJSON("holds-50", refs)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(gin.H{"user_id": "holds-50", "resources": refs}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
