package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHelp: -h and --help on every command and subcommand print its usage to standard output
// and succeed, doing nothing else: no check is made, no file opened, no service called.
func TestHelp(t *testing.T) {
	// Every command would fail if it ran: nothing listens at the address, and the policy
	// folder named by the help flag does not exist.
	env := map[string]string{"GRANTRY_ADDR": unusedAddr(t), "GRANTRY_DATA_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		args []string
		want []string // in the usage printed
	}{
		{[]string{"-h"}, []string{"grantry serve", "grantry version"}},
		{[]string{"--help"}, []string{"grantry serve"}},
		{[]string{"help"}, []string{"grantry serve"}},
		{[]string{"serve", "-h"}, []string{"usage: grantry serve", "-addr", "-request-timeout"}},
		{[]string{"serve", "--help"}, []string{"usage: grantry serve", "-addr"}},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--help"}, []string{"usage: grantry serve"}},
		{[]string{"org", "-h"}, []string{"grantry org create NAME", "grantry org list"}},
		{[]string{"org", "create", "--help"}, []string{"grantry org create NAME", "-url"}},
		{[]string{"org", "list", "-h"}, []string{"grantry org list"}},
		{[]string{"apikey", "--help"}, []string{"grantry apikey create ORG_ID", "grantry apikey revoke KEY_ID"}},
		{[]string{"apikey", "create", "org-1", "--help"}, []string{"grantry apikey create", "-scope"}},
		{[]string{"apikey", "revoke", "-h"}, []string{"grantry apikey revoke"}},
		{[]string{"scim-token", "--help"}, []string{"grantry scim-token rotate ORG_ID INTEGRATION_ID", "grantry scim-token revoke"}},
		{[]string{"scim-token", "rotate", "-h"}, []string{"grantry scim-token rotate"}},
		{[]string{"scim-token", "revoke", "--help"}, []string{"grantry scim-token revoke"}},
		{[]string{"secrets", "--help"}, []string{"usage: grantry secrets rotate"}},
		{[]string{"secrets", "rotate", "-h"}, []string{"usage: grantry secrets rotate", "-data-dir"}},
		{[]string{"healthcheck", "--help"}, []string{"usage: grantry healthcheck"}},
		{[]string{"healthcheck", "-h"}, []string{"usage: grantry healthcheck"}},
		{[]string{"policy", "-h"}, []string{"usage: grantry policy test DIR"}},
		{[]string{"policy", "test", "--help"}, []string{"usage: grantry policy test DIR"}},
		{[]string{"policy", "test", "somewhere", "-h"}, []string{"usage: grantry policy test DIR"}},
		{[]string{"version", "--help"}, []string{"usage: grantry version"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tc.args, getenv, &stdout, &stderr); err != nil {
				t.Fatalf("run = %v, want success", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("standard output lacks %q:\n%s", want, stdout.String())
				}
			}
			if stderr.Len() > 0 {
				t.Errorf("standard error = %q, want nothing", stderr.String())
			}
		})
	}
}

// TestBadFlagsFail: an unknown flag or argument is an error that says how to get the usage,
// and prints no usage to standard output.
func TestBadFlagsFail(t *testing.T) {
	getenv := func(string) string { return "" }
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--nope"}, `run "grantry serve -h"`},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"healthcheck", "--nope"}, `run "grantry healthcheck -h"`},
		{[]string{"policy", "test", "--nope", "dir"}, `run "grantry policy test -h"`},
		{[]string{"apikey", "revoke", "--scope", "check", "k"}, `run "grantry apikey revoke -h"`},
		{[]string{"version", "extra"}, "usage: grantry version"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout bytes.Buffer
			err := run(context.Background(), tc.args, getenv, &stdout, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("standard output = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^grantry \S+ \(revision \S+; ` + regexp.QuoteMeta(runtime.Version()) + ` \S+/\S+\)\n$`)
	if !want.MatchString(stdout.String()) {
		t.Errorf("grantry version printed %q, want a line matching %s", stdout.String(), want)
	}
}

// TestServeExposesItsBuild: /metrics names the build that serves, as grantry version does, and
// the start-up line writes its durations as durations.
func TestServeExposesItsBuild(t *testing.T) {
	url, stderr, stop := startServer(t, map[string]string{"GRANTRY_DATA_DIR": t.TempDir()})
	b := buildOf()
	want := `grantry_build_info{goversion="` + b.goVersion + `",revision="` + b.revision + `",version="` + b.version + `"} 1`
	if metrics := string(mustSend(t, "GET", url+"/metrics", "", nil)); !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkLoggedDurations(t, stderr.String())
	if !strings.Contains(stderr.String(), `"request_timeout":"5s","shutdown_timeout":"15s"`) {
		t.Errorf("the starting line lacks its timeouts as durations:\n%s", stderr)
	}
}

// durationKeys are the attributes of Grantry's log lines that hold a duration.
var durationKeys = map[string]bool{"took": true, "request_timeout": true, "shutdown_timeout": true, "drain_timeout": true}

// checkLoggedDurations fails for every duration in the JSON log lines of log that is not
// written as a Go duration ("1.5s"), which a reader can take in without counting digits.
func checkLoggedDurations(tb testing.TB, log string) {
	tb.Helper()
	var walk func(line string, v any)
	walk = func(line string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, v := range m {
			if durationKeys[k] {
				s, ok := v.(string)
				if _, err := time.ParseDuration(s); !ok || err != nil {
					tb.Errorf("%q is %v, not a duration, in %s", k, v, line)
				}
			}
			walk(line, v)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var v any
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			walk(sc.Text(), v)
		}
	}
}
