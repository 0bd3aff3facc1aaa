package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repoRoot is where README.md and docs/ are, seen from this package.
const repoRoot = "../.."

// runnableInfo is the info string of a fenced block that the documentation tests run: the
// README's walk-through and the examples of docs/ that a reader can paste as they are.
const runnableInfo = "sh runnable"

// fence is one fenced code block of a Markdown file.
type fence struct {
	info string
	line int // of its first line of code
	code []string
}

var fenceRE = regexp.MustCompile("^(```+|~~~+)\\s*(.*)$")

// proseLine is a line of Markdown outside the code blocks, with its number.
type proseLine struct {
	n    int
	text string
}

// fences returns the fenced code blocks of markdown, and the lines outside them.
func fences(markdown string) (blocks []fence, prose []proseLine) {
	lines := strings.Split(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			prose = append(prose, proseLine{i + 1, lines[i]})
			continue
		}
		b := fence{info: strings.TrimSpace(m[2]), line: i + 2}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != m[1]; i++ {
			b.code = append(b.code, lines[i])
		}
		blocks = append(blocks, b)
	}
	return blocks, prose
}

func readDoc(tb testing.TB, name string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(raw)
}

// docFiles are the README and every page of docs/, relative to the repository.
func docFiles(tb testing.TB) []string {
	tb.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		tb.Fatalf("no pages in docs/: %v", err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", filepath.Base(p)))
	}
	return files
}

// expectation is a "# → …" comment: what the commands before it print.
type expectation struct {
	line    int    // in the Markdown file
	command string // the last command before it, for the failure message
	want    string
}

// resultMarker separates, in a script's output, what each expectation is compared with.
const resultMarker = "@@grantry-docs-result@@"

// instrument joins blocks into one bash script in which every "# → …" comment is replaced by
// a line printing a marker, and returns the expectations in order.
func instrument(blocks []fence) (string, []expectation) {
	var script strings.Builder
	var expects []expectation
	var last string
	for _, b := range blocks {
		for i, line := range b.code {
			if want, ok := strings.CutPrefix(strings.TrimSpace(line), "# → "); ok {
				fmt.Fprintf(&script, "printf '\\n%s\\n'\n", resultMarker)
				expects = append(expects, expectation{line: b.line + i, command: last, want: want})
				continue
			}
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				last = t
			}
			script.WriteString(line + "\n")
		}
	}
	return script.String(), expects
}

// matches reports whether got is want, where each "…" in want stands for any text.
func matches(got, want string) bool {
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`).MatchString(got)
}

// exampleEnv reads from the README how the walk-through starts Grantry and what it exports to
// the shell: the settings of the server, and the shell's variables (GRANTRY, the base URL,
// is the caller's to set).
func exampleEnv(tb testing.TB) (server, shell map[string]string) {
	tb.Helper()
	blocks, _ := fences(readDoc(tb, "README.md"))
	server, shell = map[string]string{}, map[string]string{}
	assign := regexp.MustCompile(`\b([A-Z_]+)=(\S+)`)
	for _, b := range blocks {
		for _, line := range b.code {
			switch {
			case strings.HasSuffix(line, "make run") && strings.Contains(line, "GRANTRY_BOOTSTRAP_API_KEY="):
				for _, m := range assign.FindAllStringSubmatch(line, -1) {
					if !strings.HasPrefix(m[2], "$") {
						server[m[1]] = m[2]
					}
				}
			case strings.HasPrefix(line, "export GRANTRY="):
				for _, m := range assign.FindAllStringSubmatch(line, -1) {
					shell[m[1]] = m[2]
				}
			}
		}
	}
	if server["GRANTRY_BOOTSTRAP_API_KEY"] == "" || shell["GRANTRY_KEY"] != server["GRANTRY_BOOTSTRAP_API_KEY"] {
		tb.Fatalf("the README's walk-through starts Grantry with %v and exports %v; want a bootstrap key, and GRANTRY_KEY set to it", server, shell)
	}
	return server, shell
}

// TestDocsExamples runs the README's walk-through, and the runnable examples of each page of
// docs/, as a reader would paste them: in order, with bash, against a Grantry started as the
// README starts it on a data folder of its own, each page on a fresh one. Every command's
// output must be what its "# →" comment says.
func TestDocsExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the examples need %s: %v", tool, err)
		}
	}
	serverEnv, shellEnv := exampleEnv(t)
	ran := 0
	for _, name := range docFiles(t) {
		blocks, _ := fences(readDoc(t, name))
		var runnable []fence
		for _, b := range blocks {
			if b.info == runnableInfo {
				runnable = append(runnable, b)
			}
		}
		if len(runnable) == 0 {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir()}
			for k, v := range serverEnv {
				env[k] = v
			}
			url, _, _ := startServer(t, env)
			runExamples(t, name, runnable, url, shellEnv)
		})
	}
	if ran < 2 {
		t.Errorf("examples of %d files ran; want the README's walk-through and docs/'s", ran)
	}
}

func runExamples(t *testing.T, name string, blocks []fence, url string, shellEnv map[string]string) {
	script, expects := instrument(blocks)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LC_ALL=C.UTF-8", "GRANTRY=" + url}
	for k, v := range shellEnv {
		if k != "GRANTRY" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := strings.Split(stdout.String(), "\n"+resultMarker+"\n")
	for i, e := range expects {
		if i >= len(got)-1 {
			t.Errorf("%s:%d: the examples stopped before `%s` (%v); standard error:\n%s", name, e.line, e.command, err, stderr.String())
			return
		}
		if out := strings.TrimSpace(got[i]); !matches(out, e.want) {
			t.Errorf("%s:%d: `%s` printed\n\t%s\nwhere the comment says\n\t%s", name, e.line, e.command, out, e.want)
		}
	}
	if rest := strings.TrimSpace(got[len(got)-1]); rest != "" {
		t.Errorf("%s: the commands after the last \"# →\" printed %q; say what they print", name, rest)
	}
	if err != nil {
		t.Errorf("%s: the examples failed: %v\n%s", name, err, stderr.String())
	}
}

// TestInstrument: the expectations are found with their lines and commands, and a result that
// differs from its comment is caught.
func TestInstrument(t *testing.T) {
	blocks, _ := fences("intro\n```sh runnable\nX=1\necho $X\n# → 1\n```\n\n```sh runnable\necho '{\"id\":\"abc\"}'\n# → {\"id\":\"…\"}\n```\n")
	script, expects := instrument(blocks)
	if len(expects) != 2 || expects[0].line != 5 || expects[0].command != "echo $X" || expects[1].want != `{"id":"…"}` {
		t.Fatalf("expectations = %+v", expects)
	}
	out, err := exec.Command("bash", "-c", script).Output()
	if err != nil {
		t.Skipf("no bash: %v", err)
	}
	got := strings.Split(string(out), "\n"+resultMarker+"\n")
	if len(got) != 3 || !matches(strings.TrimSpace(got[0]), expects[0].want) || !matches(strings.TrimSpace(got[1]), expects[1].want) {
		t.Errorf("the script printed %q", out)
	}
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{
		{"true", "true", true},
		{"false", "true", false},
		{`{"id":"5f62"}`, `{"id":"…"}`, true},
		{`{"id":"5f62","x":1}`, `{"id":"…"}`, false},
		{"a.b", "a…", true},
		{"axb", "a.b", false},
	} {
		if matches(tc.got, tc.want) != tc.ok {
			t.Errorf("matches(%q, %q) = %v", tc.got, tc.want, !tc.ok)
		}
	}
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`)
	hasSchemeRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	slugRemoveRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors are the heading anchors GitHub makes for markdown: lower case, punctuation dropped,
// spaces turned into hyphens, repeats numbered.
func anchors(markdown string) map[string]bool {
	_, prose := fences(markdown)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range prose {
		m := headingRE.FindStringSubmatch(line.text)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(slugRemoveRE.ReplaceAllString(strings.ToLower(strings.ReplaceAll(m[1], "`", "")), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestDocsLinks: every relative link of the README and docs/ names a file of the repository,
// and every #anchor a heading of the page it points into.
func TestDocsLinks(t *testing.T) {
	checked := 0
	for _, name := range docFiles(t) {
		_, prose := fences(readDoc(t, name))
		for _, line := range prose {
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line.text, ""), -1) {
				target := m[1]
				if hasSchemeRE.MatchString(target) {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				file := name
				if path != "" {
					file = filepath.Join(filepath.Dir(name), path)
					if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
						t.Errorf("%s:%d: the link to %s points nowhere", name, line.n, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(readDoc(t, file))[anchor] {
					t.Errorf("%s:%d: the link to %s names no heading of %s", name, line.n, target, file)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found; the test no longer reads the documentation")
	}
}

// TestAnchors holds the anchors to GitHub's rule on the headings the documentation uses.
func TestAnchors(t *testing.T) {
	got := anchors("# Grantry\n## openapi.json and /docs\n## Why was this allowed? — explain\n```\n# not a heading\n```\n## Groups\n## Groups\n### `make bench-large`\n")
	for _, want := range []string{"grantry", "openapijson-and-docs", "why-was-this-allowed--explain", "groups", "groups-1", "make-bench-large"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block made an anchor")
	}
}

// TestDocsPolicyExample: the example policy of docs/policy.md passes `grantry policy test`,
// as the page says it does.
func TestDocsPolicyExample(t *testing.T) {
	var out bytes.Buffer
	dir := filepath.Join(repoRoot, "docs", "policy-example")
	if err := run(context.Background(), []string{"policy", "test", dir}, func(string) string { return "" }, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("grantry policy test %s: %v\n%s", dir, err, out.String())
	}
	if !strings.Contains(out.String(), " passed, 0 failed") {
		t.Errorf("grantry policy test printed:\n%s", out.String())
	}
}
