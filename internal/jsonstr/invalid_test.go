package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInvalidText(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{`{"user_id":"ada"}`, -1},
		{`{"user_id":"Ada Lovelace \u00e9 é 日本 😀"}`, -1},
		{`{"user_id":"\ud83d\ude00"}`, -1},                // a pair is one character
		{`{"user_id":"\ufffd and ` + "\uFFFD" + `"}`, -1}, // sent as U+FFFD, kept so
		{`{"user_id":"\\ud800"}`, -1},                     // an escaped backslash, then text
		{"{\"user_id\":\"a\xffb\"}", 13},
		{"{\"user_id\":\"\xc3\"}", 12},
		{"{\"user_id\":\"\xed\xa0\x80\"}", 12}, // a surrogate encoded in UTF-8
		{`{"user_id":"\ud800"}`, 12},
		{`{"user_id":"\udc00\ud800"}`, 12},
		{`{"user_id":"\ud800\u0041"}`, 12},
		{`{"user_id":"x\uD800`, 13},
		{"\\\xab\x80", 1},
	} {
		if got := InvalidText([]byte(tc.text)); got != tc.want {
			t.Errorf("InvalidText(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// FuzzInvalidText holds InvalidText to what encoding/json does: when it finds nothing, every
// U+FFFD that decoding a JSON string gives was sent as one; when decoding makes one that was
// not sent, InvalidText finds it.
func FuzzInvalidText(f *testing.F) {
	for _, s := range []string{`ada`, `\ud800`, `\ud83d\ude00`, "a\xffb", `\ufffd`, "\uFFFD", `\\ud800`, `\uDBFF\uDFFF`, `\ud800\ud800\udc00`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text := `"` + s + `"`
		var v string
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return
		}
		replaced := strings.Count(v, "\uFFFD") != sentReplacements(s)
		if found := InvalidText([]byte(text)) >= 0; found != replaced {
			t.Fatalf("InvalidText(%q) found something: %v; decoding replaced something: %v (%q)", text, found, replaced, v)
		}
	})
}

// sentReplacements counts the U+FFFD that the body of a JSON string sends: as the character, or
// as its \u escape.
func sentReplacements(s string) int {
	n := 0
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == 'u':
			if i+6 <= len(s) && strings.EqualFold(s[i+2:i+6], "fffd") {
				n++
			}
			i += 2
		case s[i] == '\\':
			i += 2
		case strings.HasPrefix(s[i:], "\uFFFD"):
			n++
			i += len("\uFFFD")
		default:
			i++
		}
	}
	return n
}
