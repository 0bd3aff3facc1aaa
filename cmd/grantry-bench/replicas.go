package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// visibilityTimeout is how long the prober waits for replica B to show a change made on A
// before it counts the change as not visible and goes on.
const visibilityTimeout = 10 * time.Second

// probeEvery is the pause between the prober's questions to B: the resolution of what it
// measures, at a rate that adds little to B's load.
const probeEvery = time.Millisecond

// probePause is the pause after each change the prober has seen on B. Every change makes both
// replicas drop what they held of the user it changed, who is read from the store again: a
// change a second is a busy organization's.
const probePause = time.Second

// visibility is what the replicas' prober measured: for each change made on replica A (a
// grant, then its revoke), the time from A's 200 to replica B's first answer that shows it.
type visibility struct {
	times      []time.Duration
	notVisible int // changes B did not show within visibilityTimeout
	errors     int // grants, revokes or questions that failed
	firstError string
}

func (v *visibility) add(o visibility) {
	v.times = append(v.times, o.times...)
	v.notVisible += o.notVisible
	v.errors += o.errors
	if v.firstError == "" {
		v.firstError = o.firstError
	}
}

func (v *visibility) fail(err error) {
	v.errors++
	if v.firstError == "" {
		v.firstError = err.Error()
	}
}

// percentiles returns the p50 and p99 of the times, nearest-rank.
func (v visibility) percentiles() (p50, p99 time.Duration) {
	sorted := slices.Sorted(slices.Values(v.times))
	return percentile(sorted, 50), percentile(sorted, 99)
}

// prober changes pairs that the load never asks about on replica A, and asks replica B about
// them until B answers as A now would.
type prober struct {
	a, b  *client
	pairs []pair // not granted, and left out of the replicas' load (workload.probePairs)
	next  int
	w     *workload
	pause time.Duration // after each change seen on B (probePause)
}

func newProber(aAddr, bAddr, key string, w *workload, pairs []pair) *prober {
	return &prober{a: newClient(aAddr, key, false), b: newClient(bAddr, key, false), pairs: pairs, w: w, pause: probePause}
}

func (pr *prober) close() {
	pr.a.close()
	pr.b.close()
}

// run grants and then revokes pair after pair until stop is closed, and returns what it
// measured. A grant is always followed by its revoke, so that the store ends as it began.
func (pr *prober) run(ctx context.Context, stop <-chan struct{}) visibility {
	var v visibility
	for {
		select {
		case <-stop:
			return v
		case <-ctx.Done():
			return v
		default:
		}
		pr.probe(ctx, &v)
	}
}

// probe grants the next pair on A and then revokes it, watching B after each.
func (pr *prober) probe(ctx context.Context, v *visibility) {
	p := pr.pairs[pr.next%len(pr.pairs)]
	pr.next++
	body := []byte(`{"user_id":` + string(quote(userID(int(p.User)))) + `,"svc_id":` + string(quote(pr.w.ResourceIDs[p.Resource])) + `}`)
	pr.change(ctx, v, "/provisions/add_to_user", body, "true")
	pr.change(ctx, v, "/provisions/remove_from_user", body, "false")
}

// change POSTs body to path on A and, once A has answered 200, asks B about the pair until it
// answers want, recording how long that took.
func (pr *prober) change(ctx context.Context, v *visibility, path string, body []byte, want string) {
	status, answer, err := pr.a.post(path, nil, body)
	switch {
	case err != nil:
		v.fail(err)
		return
	case status != 200:
		v.fail(fmt.Errorf("POST %s on replica A answered %d: %.200s", path, status, answer))
		return
	}
	changed := time.Now()
	for ctx.Err() == nil {
		status, answer, err := pr.b.post("/provisions/can_user_access", nil, body)
		switch {
		case err != nil:
			v.fail(err)
			return
		case status != 200:
			v.fail(fmt.Errorf("POST /provisions/can_user_access on replica B answered %d: %.200s", status, answer))
			return
		case string(bytes.TrimSpace(answer)) == want:
			v.times = append(v.times, time.Since(changed))
			time.Sleep(pr.pause)
			return
		case time.Since(changed) > visibilityTimeout:
			v.notVisible++
			return
		}
		time.Sleep(probeEvery)
	}
}

// replicaConns bounds the load generator's connections for the replicas' row.
const replicaConns = 8

// measureReplicas starts two Grantry servers on the MongoDB rows' database, A and B, and
// measures the checks of m.p's workload with the load generator's connections split between
// them, runs times, while a prober grants and revokes on A and watches B. The series' memory
// is both servers' together.
func (h *harness) measureReplicas(ctx context.Context, m measured, pl placement) (series, error) {
	fmt.Fprintf(h.progress, "%s, %s:\n", m.label(), pl.name)
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range []string{"a", "b"} {
		s, err := h.start(ctx, m.system, pl, m.dir, m.system+"-"+name)
		if err != nil {
			return series{}, err
		}
		servers = append(servers, s)
	}
	w, err := newWorkload(m.p)
	if err != nil {
		return series{}, err
	}
	key, err := os.ReadFile(filepath.Join(m.dir, keyFile))
	if err != nil {
		return series{}, err
	}
	pairs := w.probePairs(probeCount)
	if len(pairs) == 0 {
		return series{}, fmt.Errorf("%s: the workload leaves no pair for the prober", m.system)
	}
	pr := newProber(servers[0].addr, servers[1].addr, strings.TrimSpace(string(key)), w, pairs)
	defer pr.close()

	out := series{system: m.system, target: m.targets[0], placement: pl.name, users: m.p.Users, visibility: &visibility{}}
	// The replicas share the machine with their store (FerretDB runs in this process): a load
	// that keeps both CPUs busy starves the store's answers to the change feed's polls, and a
	// replica whose feed is late must read the store for every check. The row measures what
	// another replica's write takes to show under a moderate load.
	loadOf := *h
	loadOf.conns = min(h.conns, replicaConns)
	for run := range h.runs {
		h.quiet(ctx) // before the prober starts, whose requests are not noise
		stop, probed := make(chan struct{}), make(chan visibility, 1)
		go func() { probed <- pr.run(ctx, stop) }()
		res, err := loadOf.load(ctx, out.target, servers, pl, m.dir, m.p, run)
		close(stop)
		v := <-probed
		if err != nil {
			return series{}, err
		}
		out.runs = append(out.runs, res)
		out.visibility.add(v)
		p50, p99 := v.percentiles()
		h.logRun(pl, m.label(), out.target, run, res, fmt.Sprintf("; %d changes seen on B after p50 %s, p99 %s, %d not seen",
			len(v.times), ms(p50), ms(p99), v.notVisible))
	}
	for _, s := range servers {
		mem, err := memoryOf(s.pid())
		if err != nil {
			return series{}, err
		}
		out.mem = out.mem.plus(mem)
	}
	return out, nil
}
