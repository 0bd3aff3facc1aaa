package main

import (
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
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The systems compared.
const (
	systemCeiling = "ceiling"
	systemOPA     = "opa"
	systemGrantry = "grantry"
	// Grantry logging as OPA's server does here: no decision log (GRANTRY_DECISION_LOG=false)
	// and nothing below ERROR, so no access log (GRANTRY_LOG_LEVEL=error), to show what its
	// logs cost a check.
	systemGrantryLogsOff = "grantry-logs-off"
	// OPA's server at its lightest: a one-line policy over a compact data document (light.rego).
	systemOPALight = "opa-lightest"
	// Grantry with a policy folder (GRANTRY_POLICY_DIR) that adds rules on users' attributes to
	// the shipped ones (abac.rego).
	systemGrantryABAC = "grantry-abac"
	// Grantry on the MongoDB store (GRANTRY_MONGO_URI), and two Grantry servers sharing it.
	systemGrantryMongo    = "grantry-mongo"
	systemGrantryReplicas = "grantry-replicas"
)

// isGrantry reports whether system is a Grantry server.
func isGrantry(system string) bool {
	switch system {
	case systemGrantry, systemGrantryLogsOff, systemGrantryABAC, systemGrantryMongo, systemGrantryReplicas:
		return true
	}
	return false
}

// grantryABACDir is GRANTRY_DATA_DIR of the grantry-abac server: a copy of grantry/grantry.db,
// since two servers cannot open one bbolt file at once.
const grantryABACDir = "grantry-abac"

// grantrySettings are the settings that make a Grantry server the given system, on the data
// seeded in dir, or on db for the MongoDB rows.
func grantrySettings(system, dir string, db mongoDB) []string {
	switch system {
	case systemGrantryMongo, systemGrantryReplicas:
		// Replicas must share a master key for third-party secrets: without one, each would
		// write a development key of its own into the work folder.
		env := []string{"GRANTRY_MONGO_URI=" + db.uri, "GRANTRY_MONGO_DB=" + db.name, "GRANTRY_SECRET_KEY=" + db.secretKey}
		if db.ferret {
			// FerretDB on SQLite takes the decision log's inserts, a batch of thousands several
			// times a second, at the expense of everything else it serves: the change feed's
			// polls then come too late for the servers to trust their caches, and every check
			// reads the store. A MongoDB takes them in its stride.
			env = append(env, "GRANTRY_DECISION_LOG=false")
		}
		return env
	case systemGrantryABAC:
		return []string{"GRANTRY_DATA_DIR=" + filepath.Join(dir, grantryABACDir), "GRANTRY_POLICY_DIR=" + filepath.Join(dir, abacPolicyDir)}
	case systemGrantryLogsOff:
		return []string{"GRANTRY_DATA_DIR=" + filepath.Join(dir, grantryDir), "GRANTRY_DECISION_LOG=false", "GRANTRY_LOG_LEVEL=error"}
	}
	return []string{"GRANTRY_DATA_DIR=" + filepath.Join(dir, grantryDir)}
}

// placement says where the server and the load generator may run: on one CPU each (taskset's
// CPU list), or anywhere when empty.
type placement struct {
	name      string
	serverCPU string
	loadCPU   string
}

var (
	pinned   = placement{name: "pinned", serverCPU: "0", loadCPU: "1"}
	unpinned = placement{name: "unpinned"}
)

// harness starts servers and load generators as processes of their own and collects what the
// load generators measured.
type harness struct {
	self     string // this binary, which serves the ceiling and generates load
	grantry  string
	opa      string
	taskset  string // empty when processes cannot be pinned
	conns    int
	duration time.Duration
	warmup   time.Duration
	runs     int
	env      []string  // the environment servers start from
	progress io.Writer // a line per run, as it finishes
	mongo    mongoDB   // the database of the MongoDB rows
	// replicasDB is the replicas' row's database: mongo's, or on FerretDB one of its own.
	replicasDB mongoDB
}

// mongoFor returns the database system runs on, if it runs on MongoDB.
func (h *harness) mongoFor(system string) mongoDB {
	if system == systemGrantryReplicas && h.replicasDB.name != "" {
		return h.replicasDB
	}
	return h.mongo
}

// harnessFlags are the flags shared by run and scale.
type harnessFlags struct {
	grantry, dir, pin string
	results           string // folder of the results files; empty: none written
	keep              bool
	conns, runs       int
	duration, warmup  time.Duration
}

// register adds the flags to fs; BENCH_DURATION, read through getenv, is -duration's default.
func (f *harnessFlags) register(fs *flag.FlagSet, getenv func(string) string) error {
	duration := 10 * time.Second
	if v := getenv("BENCH_DURATION"); v != "" {
		d, err := parseDuration(v)
		if err != nil {
			return fmt.Errorf("BENCH_DURATION: %w", err)
		}
		duration = d
	}
	fs.StringVar(&f.grantry, "grantry", "bin/grantry", "the grantry binary")
	fs.StringVar(&f.dir, "dir", "", "work folder for seeded data and server logs (default: a new temporary folder, removed at the end)")
	fs.BoolVar(&f.keep, "keep", false, "keep the work folder")
	fs.StringVar(&f.results, "results", "bench/results", "folder to write the results into, as a JSON file named after the date and commit; empty: none")
	fs.StringVar(&f.pin, "pin", "auto", "auto: pin with taskset when it exists and there are 2 CPUs; off: never")
	fs.IntVar(&f.conns, "conns", 32, "keep-alive connections of the load generator")
	fs.IntVar(&f.runs, "runs", 3, "measured runs per system; the table shows their median")
	fs.DurationVar(&f.duration, "duration", duration, "measured time of each run (BENCH_DURATION)")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "warm-up before each run, not measured")
	return nil
}

// parseDuration accepts a Go duration ("10s", "1m") or a plain number of seconds ("10").
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		v = fmt.Sprintf("%gs", n)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", v)
	}
	return d, nil
}

// newHarness checks the flags, finds the grantry binary and decides whether to pin.
func (f *harnessFlags) newHarness(progress io.Writer) (*harness, error) {
	if f.conns < 1 || f.runs < 1 || f.duration <= 0 || f.warmup < 0 {
		return nil, errors.New("-conns, -runs and -duration must be positive")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h := &harness{
		self: self, conns: f.conns, runs: f.runs, duration: f.duration, warmup: f.warmup,
		env: serverEnv(os.Environ()), progress: progress,
	}
	if h.grantry, err = binary(f.grantry); err != nil {
		return nil, err
	}
	switch f.pin {
	case "auto":
		// runtime.NumCPU counts the CPUs this process may run on, which is what pinning needs.
		if path, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
			h.taskset = path
		}
	case "off":
	default:
		return nil, fmt.Errorf("-pin must be auto or off, not %q", f.pin)
	}
	return h, nil
}

// flagSet is the flag set of a command that starts servers, name, writing its usage to stderr,
// with the harness's flags registered in f; the command adds its own, and setUp parses it.
func (f *harnessFlags) flagSet(name string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs, f.register(fs, getenv)
}

// setUp is what every command that starts servers does once its flags are registered on fs:
// parse args, then newHarness, then workDir.
func (f *harnessFlags) setUp(fs *flag.FlagSet, args []string, progress io.Writer) (h *harness, dir string, cleanup func(), err error) {
	if err = fs.Parse(args); err != nil {
		return nil, "", nil, err
	}
	if h, err = f.newHarness(progress); err != nil {
		return nil, "", nil, err
	}
	if dir, cleanup, err = f.workDir(); err != nil {
		return nil, "", nil, err
	}
	return h, dir, cleanup, nil
}

// workDir returns the work folder, -dir or a new temporary one, and the function that removes it
// at the end (which does nothing for -dir or with -keep).
func (f *harnessFlags) workDir() (string, func(), error) {
	if f.dir != "" {
		return f.dir, func() {}, os.MkdirAll(f.dir, 0o700)
	}
	dir, err := os.MkdirTemp("", "grantry-bench-")
	if err != nil {
		return "", nil, err
	}
	if f.keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// binary returns the absolute path of an executable file, or says plainly that it is missing.
func binary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable (build it first; `make bench` does)", path)
	}
	return abs, nil
}

// placements are the ways runs are made: pinned when possible, and always unpinned.
func (h *harness) placements() []placement {
	if h.taskset == "" {
		return []placement{unpinned}
	}
	return []placement{pinned, unpinned}
}

// serverEnv is the environment of every server: the caller's, without settings that would change
// what is measured — any GRANTRY_* (a MongoDB URI in the shell must not send the benchmark
// elsewhere) and GOMAXPROCS (the pinning decides how many threads run Go code).
func serverEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GRANTRY_") || strings.HasPrefix(kv, "GOMAXPROCS=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// server is a running server process.
type server struct {
	system   string
	addr     string
	grpcAddr string // Grantry's ext_authz listener
	cmd      *exec.Cmd
	exited   chan error
	log      *os.File
}

// start starts one system's server on data seeded in dir and waits until it answers. Its
// output goes to dir/logName.log.
func (h *harness) start(ctx context.Context, system string, pl placement, dir, logName string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var argv []string
	env := h.env
	var health, grpcAddr string
	switch {
	case system == systemCeiling:
		argv, health = []string{h.self, "ceiling", "-addr", addr}, "/healthz"
	case system == systemOPA || system == systemOPALight:
		if h.opa == "" {
			return nil, errors.New("no OPA binary")
		}
		// OPA at its best for this load: its data kept as AST values, as its performance guide
		// advises for reads (--optimize-store-for-read-speed), and without its two log lines per
		// request (--log-level error), which together save much of its CPU per check. Grantry
		// keeps its defaults, access log and decision log included, so the comparison leans
		// towards OPA; systemGrantryLogsOff logs as OPA does. --skip-version-check keeps OPA off
		// the network.
		argv = []string{h.opa, "run", "--server", "--skip-version-check", "--optimize-store-for-read-speed", "--log-level", "error", "--addr", addr}
		if system == systemOPA {
			od := filepath.Join(dir, opaDir)
			argv = append(argv, filepath.Join(od, "authz.rego"), filepath.Join(od, "wrapper.rego"), filepath.Join(od, opaDataFile))
		} else {
			od := filepath.Join(dir, opaLightDir)
			argv = append(argv, filepath.Join(od, "light.rego"), filepath.Join(od, opaDataFile))
		}
		health = "/health"
	case isGrantry(system):
		// Every Grantry takes its gateways' settings as a deployment behind a gateway would:
		// the user from benchUserHeader, and Envoy's ext_authz over gRPC on a port of its own.
		if grpcAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		argv, health = []string{h.grantry, "serve"}, "/readyz"
		env = append(env[:len(env):len(env)], "GRANTRY_ADDR="+addr, "GRANTRY_GATEWAY_USER_HEADER="+benchUserHeader,
			"GRANTRY_EXTAUTHZ_ADDR="+grpcAddr)
		env = append(env, grantrySettings(system, dir, h.mongoFor(system))...)
	default:
		return nil, fmt.Errorf("unknown system %q", system)
	}
	if pl.serverCPU != "" {
		// taskset execs the server, so the pid is the server's; the Go runtime of a server
		// pinned this way starts with GOMAXPROCS=1.
		argv = append([]string{h.taskset, "-c", pl.serverCPU}, argv...)
	}
	started := time.Now()
	s, err := spawn(ctx, system, argv, env, dir, logName, addr, grpcAddr, health)
	if err != nil {
		return nil, err
	}
	if isGrantry(system) {
		// Grantry answers while it reads users and groups into memory; what is measured is the
		// server after that.
		answering := time.Since(started)
		if err := s.waitUntil(ctx, "/metrics", "\ngrantry_read_in 0\n"); err != nil {
			s.stop()
			return nil, fmt.Errorf("%s did not read its users in (its log: %s): %w", system, s.log.Name(), err)
		}
		fmt.Fprintf(h.progress, "  %s answered %.1fs after start; its users were read in %.1fs after start\n",
			logName, answering.Seconds(), time.Since(started).Seconds())
	}
	return s, nil
}

// spawn runs argv as system's server at addr, its output in dir/logName.log, and waits until
// GET health answers 200.
func spawn(ctx context.Context, system string, argv, env []string, dir, logName, addr, grpcAddr, health string) (*server, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, logName+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// In the work folder, so that whatever a server writes beside its data (Grantry's
	// development secret key, for one) goes there too.
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, logFile, logFile, dir
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", system, err)
	}
	s := &server{system: system, addr: addr, grpcAddr: grpcAddr, cmd: cmd, exited: make(chan error, 1), log: logFile}
	go func() { s.exited <- cmd.Wait() }()
	if err := s.waitHealthy(ctx, health); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s did not come up (its log: %s): %w", system, logFile.Name(), err)
	}
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) waitHealthy(ctx context.Context, path string) error {
	return s.waitUntil(ctx, path, "")
}

// waitUntil waits until GET path answers 200 with a body containing want, for at most 2 minutes.
func (s *server) waitUntil(ctx context.Context, path, want string) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := client.Get("http://" + s.addr + path)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return nil
			}
		}
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s did not answer 200 with %q after 2 minutes", path, want)
		}
	}
}

// stop asks the server to shut down, and kills it if it has not within half a minute.
func (s *server) stop() {
	defer s.log.Close()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// load runs one load-generator process against servers, which share its connections, and
// returns what it measured.
func (h *harness) load(ctx context.Context, target string, servers []*server, pl placement, dir string, p params, run int) (loadResult, error) {
	var addrs []string
	var pids []int
	for _, s := range servers {
		addr := s.addr
		if target == targetExtAuthz {
			addr = s.grpcAddr
		}
		addrs, pids = append(addrs, addr), append(pids, s.pid())
	}
	return h.loadAt(ctx, target, addrs, pids, pl, dir, p, run)
}

// loadAt runs one load-generator process against addrs, measuring the CPU time of the
// processes pids together, and returns what it measured.
func (h *harness) loadAt(ctx context.Context, target string, addrs []string, pids []int, pl placement, dir string, p params, run int) (loadResult, error) {
	pidList := make([]string, len(pids))
	for i, pid := range pids {
		pidList[i] = strconv.Itoa(pid)
	}
	argv := []string{h.self, "load", "-target", target, "-addr", strings.Join(addrs, ",")}
	argv = append(argv, keyFileArgs(dir, target)...)
	argv = append(argv, "-conns", strconv.Itoa(h.conns), "-duration", h.duration.String(), "-warmup", h.warmup.String(),
		"-pid", strings.Join(pidList, ","), "-run", strconv.Itoa(run), "-runs", strconv.Itoa(h.runs))
	argv = append(argv, p.args()...)
	if pl.loadCPU != "" {
		argv = append([]string{h.taskset, "-c", pl.loadCPU}, argv...)
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return loadResult{}, fmt.Errorf("load %s: %w: %s", target, err, strings.TrimSpace(errOut.String()))
	}
	var res loadResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return loadResult{}, fmt.Errorf("load %s printed %q: %w", target, out.String(), err)
	}
	return res, nil
}

const (
	// quietCPU is the share of one CPU below which an idle placement counts as quiet: its
	// idle servers' timers and a change feed's polls stay well under it.
	quietCPU = 0.15
	// settleWindow is what a share of CPU is measured over while waiting for quiet, before
	// every run; settleLimit bounds the wait, after which the run starts anyway.
	settleWindow = 500 * time.Millisecond
	settleLimit  = 3 * time.Minute
)

// settle waits, for at most limit, until the machine's busy CPU time (read by busy) has stayed
// under quietCPU for two windows in a row. Started servers and FerretDB keep working for a
// while after the seeding and read-in they finished (FerretDB for half a minute and more), and
// a server after its run (a decision log's last batches); that work would fall on the next runs
// as other work, unevenly across the rows. A machine busy with work of its own is measured anyway
// after limit, and the report's other-CPU column says so.
func settle(ctx context.Context, busy func() (time.Duration, error), window, limit time.Duration, progress io.Writer) {
	start := time.Now()
	prev, err := busy()
	if err != nil {
		return
	}
	var share float64
	for calm := 0; calm < 2; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(window):
		}
		now, err := busy()
		if err != nil {
			return
		}
		share, prev = float64(now-prev)/float64(window), now
		if calm++; share >= quietCPU {
			calm = 0
		}
		if calm < 2 && time.Since(start) >= limit {
			fmt.Fprintf(progress, "  the machine was still busy (%.0f%% of a CPU) after %s; measuring anyway\n", share*100, limit)
			return
		}
	}
	if waited := time.Since(start); waited > 3*window {
		fmt.Fprintf(progress, "  waited %.0fs for the machine to settle\n", waited.Seconds())
	}
}

// keyFileArgs gives the load the API key in dir. A Grantry target needs it, and its load fails
// without one; the other servers are sent it too, so that every HTTP server gets the same
// headers, unless no Grantry on the embedded store was seeded (-systems opa, say), which leaves
// none to send.
func keyFileArgs(dir, target string) []string {
	path := filepath.Join(dir, keyFile)
	switch target {
	case targetOPA, targetOPALight, targetCeiling:
		if _, err := os.Stat(path); err != nil {
			return nil
		}
	}
	return []string{"-key-file", path}
}

// series is the runs of one target on one server process, and that process's memory after them.
type series struct {
	system    string // ceiling, opa, grantry, …: the server
	target    string // what was asked: a check, or writes
	placement string
	users     int // of the workload the server held
	runs      []loadResult
	mem       memory
	// visibility is what the replicas' prober measured meanwhile; nil for other systems.
	visibility *visibility
}

// measured is a system, the targets measured on one server of it, and the workload that
// server serves: p, seeded in dir.
type measured struct {
	system  string
	targets []string
	dir     string
	p       params
}

// label names m's server in the progress lines: its system, and its users when they are not
// make bench's (bench-large measures two servers of one system).
func (m measured) label() string {
	if m.p.Users == defaultParams().Users {
		return m.system
	}
	return m.system + " (" + thousands(m.p.Users) + " users)"
}

// step is one run of the load: the run-th of target on the sys-th system's server.
type step struct {
	sys    int
	target string
	run    int
}

// interleave orders the runs of systems: each system's first target in turn, run by run (every
// system's first run, then every one's second, and so on), then each system's other targets,
// run after run. The speed of a shared machine drifts over minutes; runs in turn give
// every system its share of each spell, so that the ratios of their medians compare like with
// like. The other targets (Grantry's writes, which change its store) come after every check.
func interleave(systems []measured, runs int) []step {
	var steps []step
	for run := range runs {
		for i, m := range systems {
			if len(m.targets) > 0 {
				steps = append(steps, step{i, m.targets[0], run})
			}
		}
	}
	for i, m := range systems {
		for _, target := range m.targets[min(1, len(m.targets)):] {
			for run := range runs {
				steps = append(steps, step{i, target, run})
			}
		}
	}
	return steps
}

// measure starts system on p seeded in dir, measures each target runs times on it, and stops it.
func (h *harness) measure(ctx context.Context, system string, targets []string, pl placement, dir string, p params) ([]series, error) {
	return h.measureAll(ctx, []measured{{system, targets, dir, p}}, pl)
}

// measureAll starts a server of each of systems, measures their targets runs times in the
// order of interleave, reads each server's memory after its runs, and stops them. The series
// are in the order of systems, and of each one's targets.
func (h *harness) measureAll(ctx context.Context, systems []measured, pl placement) ([]series, error) {
	servers := make([]*server, len(systems))
	defer func() {
		for _, s := range servers {
			if s != nil {
				s.stop()
			}
		}
	}()
	for i, m := range systems {
		fmt.Fprintf(h.progress, "%s, %s:\n", m.label(), pl.name)
		s, err := h.start(ctx, m.system, pl, m.dir, m.system)
		if err != nil {
			return nil, err
		}
		servers[i] = s
	}
	var out []series
	type of struct {
		sys    int
		target string
	}
	index := map[of]int{} // its series in out
	for i, m := range systems {
		for _, target := range m.targets {
			index[of{i, target}] = len(out)
			out = append(out, series{system: m.system, target: target, placement: pl.name, users: m.p.Users})
		}
	}
	for _, st := range interleave(systems, h.runs) {
		m := systems[st.sys]
		h.quiet(ctx)
		res, err := h.load(ctx, st.target, servers[st.sys:st.sys+1], pl, m.dir, m.p, st.run)
		if err != nil {
			return nil, err
		}
		h.logRun(pl, m.label(), st.target, st.run, res, "")
		sr := &out[index[of{st.sys, st.target}]]
		sr.runs = append(sr.runs, res)
	}
	for i, m := range systems {
		mem, err := memoryOf(servers[i].pid())
		if err != nil {
			return nil, err
		}
		for _, target := range m.targets {
			out[index[of{i, target}]].mem = mem
		}
	}
	return out, nil
}

// logRun writes the progress line of one run, as it finishes.
func (h *harness) logRun(pl placement, label, target string, run int, res loadResult, more string) {
	fmt.Fprintf(h.progress, "  %-8s %-16s %-8s run %d/%d: %9.0f req/s  p99 %-9s server CPU %4s  other CPU %4s  %d wrong  %d errors%s\n",
		pl.name, label, target, run+1, h.runs, res.rps(), ms(res.P99), pct(res.ServerCPU.Seconds()/res.Elapsed.Seconds()),
		pct(res.OtherCPU.Seconds()/res.Elapsed.Seconds()), res.Mismatches, res.Errors, more)
}

// quiet is what every run starts with: what the last run wrote (a decision log's batches) is
// written back now, not by the kernel's flusher threads during this run, and then the wait for
// a quiet machine.
func (h *harness) quiet(ctx context.Context) {
	syscall.Sync()
	settle(ctx, machineCPU, settleWindow, settleLimit, h.progress)
}
