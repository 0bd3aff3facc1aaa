package policy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Policies for the lifecycle tests: each allows everything or nothing, with a test of its own.
var (
	openPolicy = []Module{
		{"authz.rego", "package grantry.authz\nallow := true\nallow_all := true\n"},
		{"authz_test.rego", "package grantry.authz_test\nimport data.grantry.authz\ntest_open if { authz.allow }\n"},
	}
	closedPolicy = []Module{
		{"authz.rego", "package grantry.authz\nallow := false\nallow_all := false\n"},
		{"authz_test.rego", "package grantry.authz_test\nimport data.grantry.authz\ntest_closed if { not authz.allow }\n"},
	}
	brokenPolicy  = []Module{{"authz.rego", "package grantry.authz\nallow if {\n"}}
	failingPolicy = []Module{
		{"authz.rego", "package grantry.authz\nallow := true\nallow_all := true\n"},
		{"authz_test.rego", "package grantry.authz_test\nimport data.grantry.authz\ntest_closed if { not authz.allow }\n"},
	}
	incompletePolicy = []Module{{"authz.rego", "package grantry.authz\nallow := true\n"}}
)

// anyInput asks about a resource that exists, of a user who holds nothing.
func anyInput(tb testing.TB) ast.Value {
	return input(tb, user("u", true, nil, nil), []string{"r"}, map[string][2]string{"r": {"model", "m"}}, time.Time{})
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		modules []Module
		want    string // in the error; "" for success
	}{
		{"good", openPolicy, ""},
		{"shipped", Embedded(), ""},
		{"syntax error", brokenPolicy, "parse policy"},
		{"failing test", failingPolicy, "policy tests failed: data.grantry.authz_test.test_closed"},
		{"missing rule", incompletePolicy, "does not define data.grantry.authz.allow_all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), tc.modules)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Load error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReplace: a good policy replaces the running one; a broken one, one failing its own
// tests, or one missing a rule is refused and counted, and the old one goes on deciding.
func TestReplace(t *testing.T) {
	ctx := context.Background()
	l := NewLive(mustEngine(t, closedPolicy))
	check := func(step string, wantAllow bool, wantOK, wantFailed uint64, wantRevision string) {
		t.Helper()
		got, err := l.Engine().Decide(ctx, false, anyInput(t))
		if err != nil || got != wantAllow {
			t.Errorf("%s: Allow = %v, %v; want %v", step, got, err, wantAllow)
		}
		if l.Reloads() != wantOK || l.ReloadFailures() != wantFailed {
			t.Errorf("%s: reloads %d, failures %d; want %d, %d", step, l.Reloads(), l.ReloadFailures(), wantOK, wantFailed)
		}
		if l.Revision() != wantRevision {
			t.Errorf("%s: running revision %s, want %s", step, l.Revision(), wantRevision)
		}
	}
	if _, err := l.Replace(ctx, openPolicy); err != nil {
		t.Fatal(err)
	}
	check("good policy swaps in", true, 1, 0, Revision(openPolicy))
	for _, bad := range []struct {
		name    string
		modules []Module
	}{
		{"broken policy", brokenPolicy},
		{"policy failing its own test", failingPolicy},
		{"policy missing allow_all", incompletePolicy},
	} {
		if _, err := l.Replace(ctx, bad.modules); err == nil {
			t.Errorf("Replace(%s) succeeded", bad.name)
		}
	}
	check("bad policies are refused", true, 1, 3, Revision(openPolicy))
	if _, err := l.Replace(ctx, openPolicy); !errors.Is(err, ErrUnchanged) {
		t.Errorf("Replace(the running policy) error = %v, want ErrUnchanged", err)
	}
	check("the same policy again changes nothing", true, 1, 3, Revision(openPolicy))
	if _, err := l.Replace(ctx, closedPolicy); err != nil {
		t.Fatal(err)
	}
	check("and back", false, 2, 3, Revision(closedPolicy))
}

// TestReplaceUnderLoad swaps policies while checks run; no check sees an error or a policy
// half-loaded. Run it with -race.
func TestReplaceUnderLoad(t *testing.T) {
	ctx := context.Background()
	l := NewLive(mustEngine(t, closedPolicy))
	stop := make(chan struct{})
	in := anyInput(t)
	var checks atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e := l.Engine()
				allowed, err := e.Decide(ctx, false, in)
				if err != nil {
					t.Errorf("Allow during a reload: %v", err)
					return
				}
				// The answer must be the one of the engine asked, whichever it is.
				if want := e.Revision() == Revision(openPolicy); allowed != want {
					t.Errorf("engine %s answered %v", e.Revision()[:8], allowed)
					return
				}
				if _, err := l.Engine().Explain(ctx, in); err != nil {
					t.Errorf("Explain during a reload: %v", err)
					return
				}
				checks.Add(1)
			}
		})
	}
	for i := range 20 {
		next := openPolicy
		if i%2 == 1 {
			next = closedPolicy
		}
		if _, err := l.Replace(ctx, next); err != nil {
			t.Errorf("Replace %d: %v", i, err)
		}
		if _, err := l.Replace(ctx, brokenPolicy); err == nil {
			t.Error("Replace(broken) succeeded")
		}
	}
	close(stop)
	wg.Wait()
	if checks.Load() == 0 {
		t.Error("no check ran during the reloads")
	}
	if l.Reloads() != 20 || l.ReloadFailures() != 20 {
		t.Errorf("reloads %d, failures %d; want 20, 20", l.Reloads(), l.ReloadFailures())
	}
}

// writePolicy writes each module into dir as deployment tools do, atomically: written aside,
// then renamed into place. (A file rewritten in place is empty for a moment, which a watcher
// on a loaded machine may catch and refuse before it loads the whole.)
func writePolicy(tb testing.TB, dir string, mods []Module) {
	tb.Helper()
	for _, m := range mods {
		tmp := filepath.Join(dir, "."+m.Name+".tmp")
		if err := os.WriteFile(tmp, []byte(m.Source), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, m.Name)); err != nil {
			tb.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds, failing the test after a generous deadline.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	tb.Fatalf("%s: never happened", what)
}

// watching starts a Live on the closed policy written into a new folder, watching it every
// interval until the test ends, and returns the folder, the Live and its reload signal.
func watching(t *testing.T, interval time.Duration) (dir string, l *Live, reload chan<- struct{}) {
	t.Helper()
	dir = t.TempDir()
	writePolicy(t, dir, closedPolicy)
	mods, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l = NewLive(mustEngine(t, mods))
	signal := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Watch(ctx, dir, interval, signal, nil)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return dir, l, signal
}

func TestWatch(t *testing.T) {
	dir, l, _ := watching(t, 5*time.Millisecond)

	// A changed file is picked up. Files are written one after the other, so the watcher may
	// catch a folder half-written, refuse it, and load the whole once it is: failures are
	// counted from here on.
	writePolicy(t, dir, openPolicy)
	waitFor(t, "reload after a change", func() bool { return l.Revision() == Revision(openPolicy) })
	failures := l.ReloadFailures()

	// A broken file is refused once, and the running policy stays.
	writePolicy(t, dir, brokenPolicy)
	waitFor(t, "refusal of a broken policy", func() bool { return l.ReloadFailures() == failures+1 })
	time.Sleep(50 * time.Millisecond) // ten more looks: the same broken files are not retried
	if l.ReloadFailures() != failures+1 || l.Revision() != Revision(openPolicy) {
		t.Errorf("after a broken policy: %d more failures, revision %s; want 1 more and the open policy", l.ReloadFailures()-failures, l.Revision())
	}

	// A failing test is refused too.
	writePolicy(t, dir, failingPolicy)
	waitFor(t, "refusal of a policy failing its test", func() bool { return l.ReloadFailures() == failures+2 })
	if l.Revision() != Revision(openPolicy) {
		t.Error("a policy failing its own test replaced the running one")
	}
}

// TestWatchReloadsOnSignal: a signal reloads the folder at once, with no need for the watcher
// to look (it looks only once an hour here).
func TestWatchReloadsOnSignal(t *testing.T) {
	dir, l, reload := watching(t, time.Hour)

	writePolicy(t, dir, openPolicy)
	reload <- struct{}{}
	waitFor(t, "reload on signal", func() bool { return l.Revision() == Revision(openPolicy) })
}

// TestWatchFollowsASwappedLink updates a folder the way Kubernetes updates a mounted ConfigMap:
// the visible files are links through ..data to a hidden folder, and an update points ..data
// at a new hidden folder in one rename. The swap is seen, and each file is loaded once.
func TestWatchFollowsASwappedLink(t *testing.T) {
	dir := t.TempDir()
	version := func(name string, mods []Module) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writePolicy(t, filepath.Join(dir, name), mods)
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", closedPolicy)
	for _, m := range closedPolicy {
		if err := os.Symlink(filepath.Join("..data", m.Name), filepath.Join(dir, m.Name)); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if Revision(mods) != Revision(closedPolicy) {
		t.Fatalf("LoadDir read %d modules, want each of the closed policy's once", len(mods))
	}
	l := NewLive(mustEngine(t, mods))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var logs lockedBuffer
	go func() {
		l.Watch(ctx, dir, 5*time.Millisecond, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	// The watcher's first looks load the folder once more; only a later swap is a change.
	waitFor(t, "the watcher settling", func() bool { return strings.Contains(logs.String(), "policy unchanged") })

	version("..v2", openPolicy)
	waitFor(t, "reload after the link swap", func() bool { return l.Revision() == Revision(openPolicy) })
	if l.ReloadFailures() != 0 {
		t.Errorf("%d reloads failed", l.ReloadFailures())
	}
}

// lockedBuffer is a buffer that a watcher's log and the test may use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
