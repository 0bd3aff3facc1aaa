package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// startFerretDB runs an in-process FerretDB on SQLite files in a temporary directory, as the
// MongoDB store's own tests do, and returns its host:port.
func startFerretDB(t *testing.T) string {
	t.Helper()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		// WARN and below print whole wire replies.
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Handler: "sqlite",
		// A directory of files: "?mode=memory" deadlocks on the first update. The tests do not
		// crash the database, so it need not wait for the disk at each commit.
		SQLiteURL: "file:" + t.TempDir() + "/?_pragma=synchronous(off)",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	u, err := url.Parse(f.MongoDBURI())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// proxyMode is what a faultProxy does with traffic.
type proxyMode int

const (
	// forward passes bytes both ways.
	forward proxyMode = iota
	// refuse closes every connection, open or new, at once: a database that is down.
	refuse
	// blackhole keeps connections open but lets nothing through: a database, or a network,
	// that has stopped answering.
	blackhole
)

// faultProxy is a TCP proxy between Grantry and its database that tests cut and restore.
type faultProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  proxyMode
	conns map[net.Conn]bool // both ends of every connection open now
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.closeAll()
	})
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns[client] = true
		p.mu.Unlock()
		switch mode {
		case refuse:
			p.drop(client)
		case blackhole:
			go io.Copy(io.Discard, client) // read and drop what the client sends
		case forward:
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				p.drop(client)
				continue
			}
			p.mu.Lock()
			p.conns[server] = true
			p.mu.Unlock()
			go p.pipe(client, server)
			go p.pipe(server, client)
		}
	}
}

// pipe copies from src to dst while the proxy forwards, and swallows what src sends while it
// is a black hole.
func (p *faultProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if mode == forward {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
		}
		if err != nil {
			p.drop(src)
			p.drop(dst)
			return
		}
	}
}

func (p *faultProxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *faultProxy) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// set changes the mode. Refusing closes every open connection; forwarding again after a black
// hole closes them too, since bytes were lost in them, as a network that heals leaves its old
// connections to time out.
func (p *faultProxy) set(m proxyMode) {
	p.mu.Lock()
	old := p.mode
	p.mode = m
	p.mu.Unlock()
	if m == refuse || old == blackhole {
		p.closeAll()
	}
}

// TestStoreOutage puts a TCP proxy between Grantry and a MongoDB-compatible database, cuts it
// both ways (refused, and silent), and restores it: requests in the gap answer 503 with
// Retry-After and {"detail"} within the request deadline, later ones succeed without a
// restart, and every grant acknowledged before the cut is still there.
func TestStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs FerretDB")
	}
	proxy := newFaultProxy(t, startFerretDB(t))
	env := func(requestTimeout string) map[string]string {
		return map[string]string{
			// Several connections, so that a cut meets operations waiting for one (a cleared
			// pool); the concurrent requests below only read, which FerretDB handles on many.
			// Server selection waits a minute rather than the driver's seconds, so that only
			// the request deadline can end a request soon.
			"GRANTRY_MONGO_URI":         "mongodb://" + proxy.addr() + "/?maxPoolSize=8&serverSelectionTimeoutMS=60000",
			"GRANTRY_MONGO_DB":          "outage",
			"GRANTRY_DATA_DIR":          t.TempDir(), // development secrets
			"GRANTRY_BOOTSTRAP_API_KEY": "boot-key",
			"GRANTRY_REQUEST_TIMEOUT":   requestTimeout,
		}
	}
	// The set-up's writes go through a server with the default request timeout (FerretDB's
	// updates are slow, and slower on a loaded machine); the outage meets one whose deadline is
	// short, so that the test does not wait long for each request it cuts off.
	setUpBase, _, stopSetUp := startServer(t, env("30s"))
	models, users := setUp(t, setUpBase, "boot-key", 2, 2)
	var acked [][2]string
	for _, u := range users {
		for _, m := range models {
			httpPostField(t, setUpBase+"/provisions/add_to_user", "boot-key", `{"user_id":"`+u+`","svc_id":"`+m+`"}`, "", "")
			acked = append(acked, [2]string{u, m})
		}
	}
	if err := stopSetUp(); err != nil {
		t.Fatalf("stopping the set-up's server: %v", err)
	}
	const timeout = time.Second
	base, _, stop := startServer(t, env(timeout.String()))
	check := `{"user_id":"` + users[0] + `","svc_id":"` + models[0] + `"}`
	requests := []struct{ method, path, body string }{
		{"POST", "/provisions/can_user_access", check},
		{"POST", "/provisions/add_to_user", check},
		{"GET", "/users/list", ""},
		{"GET", "/readyz", ""},
	}
	// answered polls a request until it gets an answer other than 503 (the database may take a
	// while to answer again, and a request a moment to get through), and returns it.
	answered := func(what, method, path, body string) (status int, answer string) {
		t.Helper()
		waitUntil(t, time.Minute, what, func() bool {
			status, _, answer = do(t, method, base+path, body)
			return status != http.StatusServiceUnavailable
		})
		return status, answer
	}
	answered("a check before the outage", "POST", "/provisions/can_user_access", check) // cached

	for _, cut := range []struct {
		name string
		mode proxyMode
	}{{"database refuses", refuse}, {"database silent", blackhole}} {
		t.Run(cut.name, func(t *testing.T) {
			// Requests in flight when the database goes away, and many at once after, meet
			// the driver's other failures (a cleared pool, a broken connection): 503 too.
			var wg sync.WaitGroup
			statuses := make(chan int, 64)
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i) * 10 * time.Millisecond)
					status, _, _, err := tryDo("POST", base+"/provisions/can_user_access", check)
					if err != nil {
						t.Errorf("a check while the database went away: %v", err)
					}
					statuses <- status
				}()
			}
			time.Sleep(100 * time.Millisecond)
			proxy.set(cut.mode)
			wg.Wait()
			close(statuses)
			for status := range statuses {
				if status != http.StatusOK && status != http.StatusServiceUnavailable {
					t.Errorf("a check while the database went away = %d, want 200 or 503", status)
				}
			}
			// A warm check may still be answered from the cache while the change feed last
			// vouched for it (half a second at most, on a machine that runs the feed when it
			// should); after that, every request reads the store and must fail fast.
			waitUntil(t, time.Minute, "the cache to stop answering", func() bool {
				status, _, _ := do(t, "POST", base+"/provisions/can_user_access", check)
				return status == http.StatusServiceUnavailable
			})
			for _, rq := range requests {
				start := time.Now()
				status, header, body := do(t, rq.method, base+rq.path, rq.body)
				took := time.Since(start)
				t.Logf("%s %s: %d in %s", rq.method, rq.path, status, took.Round(time.Millisecond))
				if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
					t.Errorf("%s %s during the outage = %d (Retry-After %q) %s, want 503 with Retry-After", rq.method, rq.path, status, header.Get("Retry-After"), body)
				}
				if !strings.HasPrefix(body, `{"detail":"`) || strings.Contains(body, proxy.addr()) {
					t.Errorf("%s %s during the outage: body %s, want a {\"detail\"} sentence with nothing internal", rq.method, rq.path, body)
				}
				// The deadline plus room for a loaded machine; a request the deadline did not
				// end would wait for the minute of server selection, or for a silent socket.
				if took > timeout+20*time.Second {
					t.Errorf("%s %s took %s during the outage, past the %s request deadline", rq.method, rq.path, took, timeout)
				}
			}

			proxy.set(forward)
			answered("a check after the database returned", "POST", "/provisions/can_user_access", check)
			for _, g := range acked {
				status, body := answered("a check after the database returned", "POST", "/provisions/can_user_access", `{"user_id":"`+g[0]+`","svc_id":"`+g[1]+`"}`)
				if status != http.StatusOK || body != "true" {
					t.Errorf("grant of %s to %s, acknowledged before the outage: check = %d %s, want 200 true", g[1], g[0], status, body)
				}
			}
			if status, body := answered("readiness after recovery", "GET", "/readyz", ""); status != http.StatusOK {
				t.Errorf("readyz after recovery = %d %s", status, body)
			}
		})
	}
	if err := stop(); err != nil {
		t.Errorf("shutdown after the outages: %v", err)
	}
}

// do sends one request with the bootstrap key and returns status, header and body.
func do(t *testing.T, method, target, body string) (int, http.Header, string) {
	t.Helper()
	status, header, data, err := tryDo(method, target, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return status, header, data
}

// tryDo is do for goroutines other than the test's: it returns the error.
func tryDo(method, target, body string) (int, http.Header, string, error) {
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer boot-key")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, strings.TrimSpace(string(data)), err
}

// waitUntil polls cond every 50 ms until it holds, for at most d.
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	tb.Fatalf("timed out after %s waiting for %s", d, what)
}
