package jsonstr

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// slogString is how slog.JSONHandler writes s as a value.
func slogString(t testing.TB, s string) string {
	var out bytes.Buffer
	h := slog.NewJSONHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "v" {
				return slog.Attr{} // only the attribute, not the time, level and message
			}
			return a
		},
	})
	slog.New(h).Info("", "v", s)
	line := strings.TrimSuffix(out.String(), "\n")
	v, ok := strings.CutPrefix(line, `{"v":`)
	if !ok || !strings.HasSuffix(v, "}") {
		t.Fatalf("slog wrote %q, not a single attribute v", line)
	}
	return strings.TrimSuffix(v, "}")
}

func check(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
		t.Errorf("Append(%q) = %s, want what encoding/json writes, %s", s, got[1:], want)
	}
	if got, want := AppendSlog([]byte("x"), s), slogString(t, s); string(got) != "x"+want {
		t.Errorf("AppendSlog(%q) = %s, want what slog.JSONHandler writes, %s", s, got[1:], want)
	}
}

func TestWritesWhatEncodingJSONAndSlogWrite(t *testing.T) {
	tests := []string{
		"",
		"plain-ascii_0123 ~!@#$%^*()",
		`quote " and backslash \`,
		"<script>&amp;</script>",
		"controls \x00\x01\b\f\n\r\t\x1f\x7f",
		"unicode é 中文 🙂",
		"separators \u2028 and \u2029",
		"invalid \xff and cut \xe4\xb8",
		"\xed\xa0\x80 a surrogate's bytes",
		strings.Repeat("long é<", 300),
	}
	for _, s := range tests {
		check(t, s)
	}
	for b := range 256 {
		check(t, "a"+string(rune(b))+"b")         // every rune up to U+00FF
		check(t, "a"+string([]byte{byte(b)})+"b") // every byte, valid UTF-8 or not
	}
}

func FuzzWritesWhatEncodingJSONAndSlogWrite(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\b\f\u2028\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(check)
}
