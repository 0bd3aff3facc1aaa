package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// childEnv, set in a process's environment, makes TestChildProcess run `grantry serve` in it as
// main does, so that tests can signal and kill a real server process without building one.
const childEnv = "GRANTRY_TEST_CHILD_PROCESS"

// TestChildProcess is the server process of the tests below; run alone it does nothing.
func TestChildProcess(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the server process of the crash and signal tests")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, []string{"serve"}, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "grantry:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// child is a `grantry serve` process.
type child struct {
	cmd     *exec.Cmd
	url     string
	exited  chan struct{} // closed when the process has ended
	exitErr error         // how it ended, once exited is closed
}

var childListeningRE = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// startChild starts `grantry serve` in a process of its own with env (GRANTRY_ADDR is a free
// port) and waits until it listens.
func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GRANTRY_ADDR=127.0.0.1:0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := childListeningRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.exited
	})
	select {
	case a := <-addr:
		c.url = "http://" + a
		return c
	case <-c.exited:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("the server process ended before listening: %v\n%s", c.exitErr, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the server process did not start listening within 30 s")
	}
	return nil
}

// wait returns how the process ended, or fails the test if it does not within d.
func (c *child) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.exitErr
	case <-time.After(d):
		t.Fatalf("the server process still runs %s later", d)
		return nil
	}
}

// setUp registers models and imports users through the API and returns their ids.
func setUp(t *testing.T, url, key string, models, users int) (modelIDs, userIDs []string) {
	t.Helper()
	for i := range models {
		modelIDs = append(modelIDs, httpPostField(t, url+"/llm_integration/custom_model", key, fmt.Sprintf(`{"model_name":"m%d"}`, i), "model", "id"))
	}
	integ := httpPostField(t, url+"/auth_integration/create", key, `{"name":"hr"}`, "auth_integration", "id")
	var list []string
	for i := range users {
		userIDs = append(userIDs, fmt.Sprintf("u%d", i))
		list = append(list, fmt.Sprintf(`{"id":"u%d","email":"u%d@x"}`, i, i))
	}
	httpPostField(t, url+"/users/import", key, `{"auth_integration_id":"`+integ+`","users":[`+strings.Join(list, ",")+`]}`, "", "")
	return modelIDs, userIDs
}

// grantsByUser lists every user's resource_list through GET /users/list.
func grantsByUser(t *testing.T, url, key string) map[string]map[string]bool {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/users/list", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Users []struct {
			ID           string `json:"id"`
			ResourceList []struct {
				ID string `json:"id"`
			} `json:"resource_list"`
		} `json:"users"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /users/list = %d, %v", resp.StatusCode, err)
	}
	out := map[string]map[string]bool{}
	for _, u := range body.Users {
		out[u.ID] = map[string]bool{}
		for _, r := range u.ResourceList {
			out[u.ID][r.ID] = true
		}
	}
	return out
}

// TestCrashKeepsAcknowledgedGrants kills the server with SIGKILL in the middle of a burst of
// grants on the embedded store, starts it again on the same file, and finds every grant that
// was answered 200 before the kill.
func TestCrashKeepsAcknowledgedGrants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	env := map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "boot-key"}
	c := startChild(t, env)
	models, users := setUp(t, c.url, "boot-key", 20, 30)

	type grant struct{ user, model string }
	work := make(chan grant)
	go func() {
		defer close(work)
		for _, u := range users {
			for _, m := range models {
				select {
				case work <- grant{u, m}:
				case <-c.exited:
					return
				}
			}
		}
	}()
	var (
		mu       sync.Mutex
		acked    []grant
		failed   atomic.Int64
		wg       sync.WaitGroup
		killOnce sync.Once
	)
	const killAfter = 150 // acknowledged grants before the kill; 600 are sent in all
	client := &http.Client{Timeout: 10 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				req, _ := http.NewRequest("POST", c.url+"/provisions/add_to_user", strings.NewReader(`{"user_id":"`+g.user+`","svc_id":"`+g.model+`"}`))
				req.Header.Set("Authorization", "Bearer boot-key")
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					continue
				}
				mu.Lock()
				acked = append(acked, g)
				n := len(acked)
				mu.Unlock()
				if n >= killAfter {
					killOnce.Do(func() { c.cmd.Process.Signal(syscall.SIGKILL) })
				}
			}
		}()
	}
	wg.Wait()
	if err := c.wait(t, 10*time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the server process ended with %v, want killed", err)
	}
	if failed.Load() == 0 {
		t.Fatalf("every grant was answered before the kill (%d acknowledged): the kill did not land mid-burst", len(acked))
	}

	c2 := startChild(t, env)
	have := grantsByUser(t, c2.url, "boot-key")
	for _, g := range acked {
		if !have[g.user][g.model] {
			t.Errorf("grant of %s to %s was acknowledged before the crash and is gone after it", g.model, g.user)
		}
	}
	t.Logf("%d grants acknowledged before the kill, %d not; all acknowledged ones survived", len(acked), failed.Load())
	c2.cmd.Process.Signal(syscall.SIGTERM)
	if err := c2.wait(t, 20*time.Second); err != nil {
		t.Errorf("after SIGTERM the server process ended with %v, want exit status 0", err)
	}
}

// TestSIGTERMDrainsInFlightRequest sends SIGTERM to a server process while a request is half
// sent: the process stops accepting connections, still answers that request with 200, and then
// exits with status 0.
func TestSIGTERMDrainsInFlightRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	c := startChild(t, map[string]string{"GRANTRY_DATA_DIR": t.TempDir(), "GRANTRY_BOOTSTRAP_API_KEY": "boot-key"})
	models, users := setUp(t, c.url, "boot-key", 1, 1)

	addr := strings.TrimPrefix(c.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // a server that never answers fails the test
	body := `{"user_id":"` + users[0] + `","svc_id":"` + models[0] + `"}`
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /provisions/add_to_user HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer boot-key\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, len(body))
	// The server says 100 Continue when the handler starts to read the body: the request is
	// then in flight, however long a loaded machine took to get there.
	answers := bufio.NewReader(conn)
	if interim, err := http.ReadResponse(answers, nil); err != nil || interim.StatusCode != http.StatusContinue {
		t.Fatalf("before the body: %v, %v; want 100 Continue", interim, err)
	}
	io.WriteString(conn, body[:half])

	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener to close", func() bool {
		nc, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case <-c.exited:
		t.Fatalf("the process exited (%v) with a request in flight", c.exitErr)
	default:
	}

	if _, err := io.WriteString(conn, body[half:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(answers, nil)
	if err != nil {
		t.Fatalf("reading the answer to the in-flight request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the in-flight request answered %d, want 200", resp.StatusCode)
	}
	if err := c.wait(t, 20*time.Second); err != nil {
		t.Errorf("after SIGTERM the process ended with %v, want exit status 0", err)
	}
}
