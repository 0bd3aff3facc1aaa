package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// The systems the load generator can drive, and what it asks each.
const (
	targetGrantry = "grantry" // POST /provisions/can_user_access, answer true or false
	targetOPA     = "opa"     // POST /v1/data/grantry/bench/allow, answer {"result": true or false}
	targetCeiling = "ceiling" // the same request as Grantry's; the answer is always true, not checked
	targetWrites  = "writes"  // Grantry: add_to_user then remove_from_user of a not-granted pair
	// targetForwardAuth asks Grantry's forward-auth about an OpenAI chat completion for a
	// model, the user in benchUserHeader: 200 when granted, 403 when not.
	targetForwardAuth = "forward-auth"
	// targetExtAuthz asks Grantry's Envoy ext_authz server (gRPC) the same as forward-auth,
	// as Envoy does: OK when granted, a denied response with 403 when not.
	targetExtAuthz = "ext-authz"
	// targetOPALight asks OPA's server at its lightest (light.rego):
	// POST /v1/data/grantry/light/allow, answer {"result": true or false}.
	targetOPALight = "opa-light"
	// targetABAC asks Grantry's can_user_access, as targetGrantry does, and expects the
	// answers of the ABAC policy (abac.rego, workload.abacAllows).
	targetABAC = "abac"
	// targetReplicas asks Grantry's can_user_access, as targetGrantry does, leaving out the
	// pairs that the replicas' prober changes meanwhile.
	targetReplicas = "replicas"
)

// probeCount is how many pairs the replicas' prober changes, one after another, again and again.
const probeCount = 100

// benchUserHeader is the header forward-auth reads users from in the benchmark
// (GRANTRY_GATEWAY_USER_HEADER of the Grantry it starts).
const benchUserHeader = "X-Bench-User"

// loadResult is what one load run measured. Durations are nanoseconds in JSON.
type loadResult struct {
	Target   string        `json:"target"`
	Requests int64         `json:"requests"` // answered within the measured window
	Elapsed  time.Duration `json:"elapsed"`
	P50      time.Duration `json:"p50"`
	P99      time.Duration `json:"p99"`
	// ServerCPU is the server process's CPU time (user + system, every thread) over the window;
	// LoadCPU the load generator's own, to show whether it, not the server, was the limit.
	ServerCPU time.Duration `json:"server_cpu"`
	LoadCPU   time.Duration `json:"load_cpu"`
	// OtherCPU is the CPU time other processes used over the window, with the time the
	// hypervisor took away (see machineCPU). On a quiet machine it is a few percent of one CPU;
	// much more means the figures were disturbed.
	OtherCPU time.Duration `json:"other_cpu"`
	// Mismatches are answers that differ from the one the workload knows to be right; Errors
	// are requests that failed or did not answer 200.
	Mismatches int64  `json:"mismatches"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// rps is the requests answered a second.
func (r loadResult) rps() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// cpuPerRequest is the server's CPU time per answered request.
func (r loadResult) cpuPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Requests)
}

// loadCmd is `grantry-bench load`: drive one server with conns keep-alive connections for a
// fixed time and print a loadResult as JSON. It is its own process so that the harness can pin
// it to a CPU apart from the server's.
func loadCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	p := defaultParams()
	p.register(fs)
	target := fs.String("target", targetGrantry, "grantry, abac, replicas, forward-auth, ext-authz, nginx, nginx-grantry, writes, opa, opa-light or ceiling")
	addrs := fs.String("addr", "", "host:port of the server (required); several, comma-separated, share the connections in turn")
	keyPath := fs.String("key-file", "", "file holding the API key to send as a bearer token")
	conns := fs.Int("conns", 32, "keep-alive connections, each with one request in flight")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", time.Second, "time spent on the warm-up sequence before measuring")
	pids := fs.String("pid", "", "server process ids, comma-separated, whose CPU time is measured together (none: not measured)")
	run := fs.Int("run", 0, "which repetition this is, 0-based: picks where the check sequence starts")
	runs := fs.Int("runs", 3, "how many repetitions there are")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addrs == "" || *conns < 1 || *duration <= 0 || *runs < 1 || *run < 0 {
		return errors.New("load: need -addr, and positive -conns, -duration and -runs")
	}
	var pidList []int
	for f := range strings.SplitSeq(*pids, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("load: -pid %q is not a list of process ids", *pids)
		}
		pidList = append(pidList, n)
	}
	var key string
	if *keyPath != "" {
		raw, err := os.ReadFile(*keyPath)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		key = strings.TrimSpace(string(raw))
	}
	w, err := newWorkload(p)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	t, err := newTarget(*target, w)
	if err != nil {
		return err
	}
	g := &generator{target: t, addrs: strings.Split(*addrs, ","), key: key, conns: *conns, pids: pidList}
	res, err := g.measure(ctx, *warmup, *duration, *run, *runs)
	if err != nil {
		return fmt.Errorf("load %s: %w", *target, err)
	}
	return json.NewEncoder(stdout).Encode(res)
}

// exchange is one request and the answer expected to it.
type exchange struct {
	path string
	body []byte
	want []byte // nil: any body will do
	// header holds header lines of this request alone ("Name: value\r\n"); status is the
	// status it must answer, 0 meaning 200; opposite, when not 0, is the status that gives the
	// opposite answer (a gateway's 403 for its 200), which is counted wrong rather than failed.
	header   []byte
	status   int
	opposite int
	// check, when not nil, is an ext_authz Check call to make instead of a POST; its status is
	// the HTTP status of the answer Envoy would give (200 for OK).
	check *authv3.CheckRequest
}

// String names the exchange in errors.
func (x exchange) String() string {
	if x.check != nil {
		return "ext_authz Check"
	}
	return "POST " + x.path
}

// target turns a pair of the workload into the requests that ask one system about it.
type target struct {
	name string
	seq  []pair // the measured sequence
	warm []pair // the warm-up sequence
	ask  func(p pair, dst []exchange) []exchange
	// keyless says the client sends no API key: the gateway in front (nginx) sets its own.
	keyless bool
}

func newTarget(name string, w *workload) (*target, error) {
	users := make([]string, w.Users)
	for u := range users {
		users[u] = string(quote(userID(u)))
	}
	resources := make([]string, w.Resources)
	for r, id := range w.ResourceIDs {
		resources[r] = string(quote(id))
	}
	body := func(p pair) []byte {
		return []byte(`{"user_id":` + users[p.User] + `,"svc_id":` + resources[p.Resource] + `}`)
	}
	answers := map[bool][]byte{true: []byte("true"), false: []byte("false")}
	t := &target{name: name, seq: w.Checks, warm: w.Warmup}
	switch name {
	case targetGrantry, targetReplicas:
		if name == targetReplicas {
			probes := w.probePairs(probeCount)
			t.seq, t.warm = withoutPairs(w.Checks, probes), withoutPairs(w.Warmup, probes)
		}
		t.ask = func(p pair, dst []exchange) []exchange {
			return append(dst, exchange{path: "/provisions/can_user_access", body: body(p), want: answers[p.Granted]})
		}
	case targetCeiling:
		t.ask = func(p pair, dst []exchange) []exchange {
			return append(dst, exchange{path: "/provisions/can_user_access", body: body(p), want: nil})
		}
	case targetABAC:
		t.ask = func(p pair, dst []exchange) []exchange {
			return append(dst, exchange{path: "/provisions/can_user_access", body: body(p), want: answers[w.abacAllows(p)]})
		}
	case targetOPA, targetOPALight:
		opaAnswers := map[bool][]byte{true: []byte(`{"result":true}`), false: []byte(`{"result":false}`)}
		path := map[string]string{targetOPA: opaQueryPath, targetOPALight: opaLightQueryPath}[name]
		t.ask = func(p pair, dst []exchange) []exchange {
			b := append(append([]byte(`{"input":`), body(p)...), '}')
			return append(dst, exchange{path: path, body: b, want: opaAnswers[p.Granted]})
		}
	case targetWrites:
		// Each pair is granted, then revoked: the store ends as it began, and a later run
		// grants anew rather than repeating a grant that changes nothing.
		t.seq, t.warm = w.Writes, w.Writes[len(w.Writes)/2:]
		t.ask = func(p pair, dst []exchange) []exchange {
			b := body(p)
			return append(dst,
				exchange{path: "/provisions/add_to_user", body: b, want: []byte(`{"user_id":` + users[p.User] + `}`)},
				exchange{path: "/provisions/remove_from_user", body: b, want: nil})
		}
	case targetForwardAuth:
		// Only models can be asked about through a gateway: the check sequences' pairs of models.
		t.seq, t.warm = modelPairs(w.Checks), modelPairs(w.Warmup)
		t.ask = func(p pair, dst []exchange) []exchange {
			h := []byte(benchUserHeader + ": " + userID(int(p.User)) + "\r\n")
			status, opposite := gatewayStatus(p)
			return append(dst, exchange{path: "/gateway/auth", body: chatBody(p), header: h, status: status, opposite: opposite})
		}
	case targetExtAuthz:
		t.seq, t.warm = modelPairs(w.Checks), modelPairs(w.Warmup)
		t.ask = func(p pair, dst []exchange) []exchange {
			status, opposite := gatewayStatus(p)
			return append(dst, exchange{check: checkRequest(userID(int(p.User)), chatBody(p)), status: status, opposite: opposite})
		}
	case targetNginx, targetNginxGrantry:
		// The forward-auth row's chat completions, sent as a client sends them to the gateway;
		// the user in benchUserHeader stands for what the gateway's own authentication sets.
		t.seq, t.warm, t.keyless = modelPairs(w.Checks), modelPairs(w.Warmup), true
		t.ask = func(p pair, dst []exchange) []exchange {
			x := exchange{path: nginxChatPath, body: chatBody(p), header: []byte(benchUserHeader + ": " + userID(int(p.User)) + "\r\n"), want: upstreamAnswer}
			if name == targetNginxGrantry {
				// Granted: the provider's answer; not granted: Grantry's 403, whatever its body.
				x.status, x.opposite = gatewayStatus(p)
				if !p.Granted {
					x.want = nil
				}
			}
			return append(dst, x)
		}
	default:
		return nil, fmt.Errorf("unknown target %q (want grantry, abac, replicas, forward-auth, ext-authz, nginx, nginx-grantry, writes, opa, opa-light or ceiling)", name)
	}
	return t, nil
}

// chatBody is an OpenAI chat completion's body for p's model, which a gateway asks about.
func chatBody(p pair) []byte {
	return []byte(`{"model":"` + resourceName(int(p.Resource)) + `","messages":[{"role":"user","content":"Hello"}]}`)
}

// gatewayStatus is the status a gateway's check of p must answer, 200 when granted, else 403,
// and the one that gives the opposite answer.
func gatewayStatus(p pair) (status, opposite int) {
	if p.Granted {
		return http.StatusOK, http.StatusForbidden
	}
	return http.StatusForbidden, http.StatusOK
}

// generator drives one server, or replicas that share the connections, from one process.
type generator struct {
	target *target
	addrs  []string
	key    string
	conns  int
	pids   []int
}

// caller is one connection of the load generator, with one exchange in flight at a time.
type caller interface {
	connect() error
	// do makes the exchange and returns the status and body of its answer; the body is valid
	// until the next call.
	do(x exchange) (status int, body []byte, err error)
	close()
}

// callers are the generator's connections: client i to addrs[i % len(addrs)].
func (g *generator) callers() []caller {
	out := make([]caller, g.conns)
	if g.target.name == targetExtAuthz {
		for i, c := range newGRPCCallers(g.addrs, g.key, g.conns) {
			out[i] = c
		}
		return out
	}
	key := g.key
	if g.target.keyless {
		key = ""
	}
	for i := range out {
		out[i] = newClient(g.addrs[i%len(g.addrs)], key, g.target.name == targetForwardAuth)
	}
	return out
}

// measure warms the server up, then measures one window of the given duration. Run r of runs
// starts at r/runs of the way through the sequence, so that repetitions ask different questions
// and a server that remembers answers is not handed the previous run's again.
func (g *generator) measure(ctx context.Context, warmup, duration time.Duration, run, runs int) (loadResult, error) {
	clients := g.callers()
	for _, c := range clients {
		defer c.close()
	}
	if warmup > 0 {
		if _, err := g.round(ctx, clients, g.target.warm, 0, warmup); err != nil {
			return loadResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	seq := g.target.seq
	return g.round(ctx, clients, seq, run*len(seq)/runs, duration)
}

// round runs every client for d, each asking the next pair of seq (from offset, cycling) as soon
// as its previous exchange is answered. Only answers that arrive within d are counted; CPU times
// are read when the clients are released and when d is up.
func (g *generator) round(ctx context.Context, clients []caller, seq []pair, offset int, d time.Duration) (loadResult, error) {
	res := loadResult{Target: g.target.name}
	var (
		next    atomic.Int64
		stop    atomic.Bool
		mu      sync.Mutex
		lat     [][]time.Duration
		wg      sync.WaitGroup
		started = make(chan struct{})
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	// Connect first, so that connection set-up is not measured.
	for _, c := range clients {
		if err := c.connect(); err != nil {
			return res, err
		}
	}
	var deadline time.Time
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 1<<14)
			var mismatches int64
			var xs []exchange
			<-started
			for !stop.Load() && ctx.Err() == nil {
				i := int(next.Add(1)-1) + offset
				xs = g.target.ask(seq[i%len(seq)], xs[:0])
				// The exchanges of one pair always run to the end, so that a grant is always
				// followed by its revoke; only those answered in time are counted.
				for _, x := range xs {
					begin := time.Now()
					status, body, err := c.do(x)
					end := time.Now()
					if end.After(deadline) {
						continue
					}
					switch {
					case err != nil:
						fail(err)
					case x.opposite != 0 && status == x.opposite:
						mismatches++
						mine = append(mine, end.Sub(begin))
					case status != max(x.status, 200):
						fail(fmt.Errorf("%s answered %d: %.200s", x, status, body))
					default:
						if x.want != nil && !bytes.Equal(bytes.TrimSpace(body), x.want) {
							mismatches++
						}
						mine = append(mine, end.Sub(begin))
					}
				}
			}
			mu.Lock()
			lat = append(lat, mine)
			res.Mismatches += mismatches
			mu.Unlock()
		}()
	}

	before, err := g.cpu()
	if err != nil {
		return res, err
	}
	deadline = time.Now().Add(d)
	close(started)
	time.Sleep(time.Until(deadline))
	after, err := g.cpu()
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return res, err
	}
	res.ServerCPU, res.LoadCPU = after[0]-before[0], after[1]-before[1]
	// The three readings are not taken at one instant, and a process's system time may hold some
	// of the softirq time the machine's total leaves out, so a quiet machine can come out a
	// little below zero.
	res.OtherCPU = max(0, after[2]-before[2]-res.ServerCPU-res.LoadCPU)
	res.Elapsed = d

	all := slices.Concat(lat...)
	res.Requests = int64(len(all))
	slices.Sort(all)
	res.P50, res.P99 = percentile(all, 50), percentile(all, 99)
	return res, ctx.Err()
}

// cpu returns the CPU time used so far by the servers together (0 without pids), by this
// process, and by the whole machine.
func (g *generator) cpu() ([3]time.Duration, error) {
	var t [3]time.Duration
	var err error
	for _, pid := range g.pids {
		used, err := cpuTime(pid)
		if err != nil {
			return t, err
		}
		t[0] += used
	}
	if t[1], err = cpuTime(os.Getpid()); err != nil {
		return t, err
	}
	t[2], err = machineCPU()
	return t, err
}

// percentile returns the p-th percentile of sorted by the nearest-rank method.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// client is one keep-alive HTTP/1.1 connection that sends prepared POSTs and reads their answers.
// It is a few dozen lines rather than net/http's client because the load generator must cost
// far less than the servers it measures: no header maps, no per-request goroutines.
type client struct {
	addr   string
	header []byte // the header lines every request carries, after the request line
	conn   net.Conn
	r      *bufio.Reader
	out    []byte
	body   []byte
}

func newClient(addr, key string, gateway bool) *client {
	h := "Host: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
	switch {
	case key != "" && gateway:
		h += "X-Grantry-Key: " + key + "\r\n"
	case key != "":
		h += "Authorization: Bearer " + key + "\r\n"
	}
	return &client{addr: addr, header: []byte(h)}
}

func (c *client) connect() error {
	if c.conn != nil {
		return nil
	}
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", c.addr, err)
	}
	c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	return nil
}

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do POSTs x.body to x.path with x.header.
func (c *client) do(x exchange) (int, []byte, error) { return c.post(x.path, x.header, x.body) }

// post sends one request and returns the status and body of its answer. The body is valid until
// the next call. After an error the connection is dropped; the next call opens another.
func (c *client) post(path string, header, body []byte) (int, []byte, error) {
	if err := c.connect(); err != nil {
		return 0, nil, err
	}
	c.out = append(c.out[:0], "POST "...)
	c.out = append(c.out, path...)
	c.out = append(c.out, " HTTP/1.1\r\n"...)
	c.out = append(c.out, c.header...)
	c.out = append(c.out, header...)
	c.out = append(c.out, "Content-Length: "...)
	c.out = strconv.AppendInt(c.out, int64(len(body)), 10)
	c.out = append(c.out, "\r\n\r\n"...)
	c.out = append(c.out, body...)
	if _, err := c.conn.Write(c.out); err != nil {
		c.close()
		return 0, nil, fmt.Errorf("send: %w", err)
	}
	status, b, keepAlive, err := readResponse(c.r, c.body[:0])
	if err != nil {
		c.close()
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	c.body = b
	if !keepAlive {
		c.close()
	}
	return status, b, nil
}

// readResponse reads one HTTP/1.1 response from r, appending its body to buf. It understands
// Content-Length and chunked bodies, which is all a server may send to a keep-alive request.
func readResponse(r *bufio.Reader, buf []byte) (status int, body []byte, keepAlive bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	keepAlive = line[7] == '1'
	length, chunked := -1, false
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, false, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keepAlive = false
			}
		}
	}
	switch {
	case chunked:
		body, err = readChunked(r, buf)
	case length >= 0:
		body = slices.Grow(buf, length)[:len(buf)+length]
		_, err = io.ReadFull(r, body[len(buf):])
	default:
		return 0, nil, false, errors.New("answer has neither Content-Length nor chunked encoding")
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("read body: %w", err)
	}
	return status, body, keepAlive, nil
}

func readChunked(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		size, err := strconv.ParseUint(string(bytes.TrimSpace(sizeText)), 16, 31)
		if err != nil {
			return nil, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			// Trailers, if any, end with an empty line.
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return buf, nil
				}
			}
		}
		n := len(buf)
		buf = slices.Grow(buf, int(size))[:n+int(size)]
		if _, err := io.ReadFull(r, buf[n:]); err != nil {
			return nil, err
		}
		if _, err := r.Discard(2); err != nil { // the CRLF after the chunk
			return nil, err
		}
	}
}

// modelPairs are the pairs of pairs whose resource is a model (resourceKind).
func modelPairs(pairs []pair) []pair {
	var out []pair
	for _, p := range pairs {
		if resourceKind(int(p.Resource)) == "model" {
			out = append(out, p)
		}
	}
	return out
}
