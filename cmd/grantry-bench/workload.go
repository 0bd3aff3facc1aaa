package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// params describe a workload. The same params always make the same workload, byte for byte, so
// that the seeding process and every load-generator process agree on it without sharing a file.
type params struct {
	Seed      uint64
	Users     int
	Resources int
	Grants    int // per user
	Checks    int // length of the check sequence the load generator cycles through
}

// defaultParams is make bench's workload: 10,000 users, 1,000 resources, 50 grants each.
func defaultParams() params {
	return params{Seed: 1, Users: 10_000, Resources: 1_000, Grants: 50, Checks: 1 << 20}
}

// register adds the workload's flags to fs.
func (p *params) register(fs *flag.FlagSet) {
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the workload's random choices")
	fs.IntVar(&p.Users, "users", p.Users, "users")
	fs.IntVar(&p.Resources, "resources", p.Resources, "resources")
	fs.IntVar(&p.Grants, "grants", p.Grants, "distinct random grants per user")
	fs.IntVar(&p.Checks, "checks", p.Checks, "length of the pre-generated check sequence")
}

// args are the flags that give a subprocess these same params.
func (p params) args() []string {
	return []string{
		fmt.Sprintf("-seed=%d", p.Seed), fmt.Sprintf("-users=%d", p.Users), fmt.Sprintf("-resources=%d", p.Resources),
		fmt.Sprintf("-grants=%d", p.Grants), fmt.Sprintf("-checks=%d", p.Checks),
	}
}

func (p params) validate() error {
	switch {
	case p.Users < 1 || p.Resources < 1 || p.Checks < 1:
		return fmt.Errorf("users, resources and checks must be positive")
	case p.Grants < 1 || p.Grants >= p.Resources:
		// A user who holds every resource leaves no not-granted pair to ask about.
		return fmt.Errorf("grants per user must be at least 1 and fewer than resources (%d)", p.Resources)
	case p.Resources > 1<<31 || p.Users > 1<<31:
		return fmt.Errorf("too many users or resources")
	}
	return nil
}

// pair is one question: may user (an index into the users) use resource (an index into the
// resources)? Granted is the answer the workload knows to be right.
type pair struct {
	User     uint32
	Resource uint32
	Granted  bool
}

// workload is the data set every system is loaded with, and the questions every system is asked.
type workload struct {
	params
	OrgID       string
	ResourceIDs []string
	// grants holds each user's resource indexes, sorted: user u's are grants[u*Grants:(u+1)*Grants].
	grants []uint32
	// Checks is the measured sequence: about half granted pairs, half not granted.
	Checks []pair
	// Warmup is a sequence of the same kind, drawn apart from Checks, that warms a server before
	// it is measured without showing it the measured pairs first.
	Warmup []pair
	// Writes are not-granted pairs for the grant/revoke benchmark.
	Writes []pair
	// research marks the users whose department is research; the others are in sales. It is
	// what the ABAC policy reads of a user (input.user.attributes.department).
	research []bool
}

// The streams of random numbers, one per purpose, so that changing how many checks are drawn
// leaves the data set as it was.
const (
	streamData = iota + 1
	streamChecks
	streamWarmup
	streamWrites
	streamAttributes
	streamProbes
)

// researchShare is the share of users whose department is research, out of ten.
const researchShare = 9

// newWorkload draws the workload of p.
func newWorkload(p params) (*workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	w := &workload{params: p}
	rng := rand.New(rand.NewPCG(p.Seed, streamData))
	w.OrgID = uuid(rng)
	w.ResourceIDs = make([]string, p.Resources)
	for i := range w.ResourceIDs {
		w.ResourceIDs[i] = uuid(rng)
	}
	w.grants = make([]uint32, p.Users*p.Grants)
	// chosen[r] == u+1 marks resource r as already drawn for user u, so a user's draws cost
	// O(Grants) without clearing anything between users.
	chosen := make([]uint32, p.Resources)
	for u := range p.Users {
		mine := w.userGrants(u)
		for i := range mine {
			r := uint32(rng.IntN(p.Resources))
			for chosen[r] == uint32(u)+1 {
				r = uint32(rng.IntN(p.Resources))
			}
			chosen[r] = uint32(u) + 1
			mine[i] = r
		}
		slices.Sort(mine)
	}
	w.Checks = w.drawChecks(rand.New(rand.NewPCG(p.Seed, streamChecks)), p.Checks)
	w.Warmup = w.drawChecks(rand.New(rand.NewPCG(p.Seed, streamWarmup)), min(p.Checks, 1<<16))
	writes := rand.New(rand.NewPCG(p.Seed, streamWrites))
	w.Writes = make([]pair, min(p.Checks, 1<<16))
	for i := range w.Writes {
		w.Writes[i] = w.notGranted(writes, writes.IntN(p.Users))
	}
	attrs := rand.New(rand.NewPCG(p.Seed, streamAttributes))
	w.research = make([]bool, p.Users)
	for u := range w.research {
		w.research[u] = attrs.IntN(10) < researchShare
	}
	return w, nil
}

// drawChecks draws n questions, each a granted or a not-granted pair with even odds.
func (w *workload) drawChecks(rng *rand.Rand, n int) []pair {
	checks := make([]pair, n)
	for i := range checks {
		u := rng.IntN(w.Users)
		if rng.IntN(2) == 0 {
			mine := w.userGrants(u)
			checks[i] = pair{User: uint32(u), Resource: mine[rng.IntN(len(mine))], Granted: true}
		} else {
			checks[i] = w.notGranted(rng, u)
		}
	}
	return checks
}

func (w *workload) notGranted(rng *rand.Rand, u int) pair {
	for {
		r := uint32(rng.IntN(w.Resources))
		if !w.granted(u, r) {
			return pair{User: uint32(u), Resource: r}
		}
	}
}

// userGrants returns the resource indexes granted to user u, sorted.
func (w *workload) userGrants(u int) []uint32 {
	return w.grants[u*w.Grants : (u+1)*w.Grants]
}

func (w *workload) granted(u int, r uint32) bool {
	_, found := slices.BinarySearch(w.userGrants(u), r)
	return found
}

// userID is the id of user u. Ids sort in user order, which keeps the store's grant keys in
// order as they are loaded.
func userID(u int) string { return fmt.Sprintf("user-%07d", u) }

// resourceName is the name of resource r; its kind cycles through model, function, dataset.
func resourceName(r int) string { return fmt.Sprintf("%s-%05d", resourceKind(r), r) }

func resourceKind(r int) string { return [...]string{"model", "function", "dataset"}[r%3] }

// uuid draws a version 4 UUID in its canonical lowercase form, the form Grantry stores.
func uuid(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// department is user u's department, as seeded into the user's attributes.
func (w *workload) department(u int) string {
	if w.research[u] {
		return "research"
	}
	return "sales"
}

// userEmail is user u's email, as seeded: every one is of the domain the ABAC policy asks for.
func userEmail(u int) string { return userID(u) + "@" + benchDomain }

// benchDomain is the domain of every seeded user's email.
const benchDomain = "bench.example"

// abacAllows is the answer the ABAC policy (abac.rego) gives to p: the shipped policy's (the
// pair is granted), and the resource is not a dataset unless the user is in research; every
// seeded email is of benchDomain.
func (w *workload) abacAllows(p pair) bool {
	return p.Granted && (resourceKind(int(p.Resource)) != "dataset" || w.research[p.User]) &&
		strings.HasSuffix(userEmail(int(p.User)), "@"+benchDomain)
}

// probePairs draws n distinct not-granted pairs (fewer if the workload has fewer) for the
// replicas' prober to grant and revoke while the load runs; the replicas' load leaves them out
// of its sequences (withoutPairs), so that it never sees an answer the prober changed.
func (w *workload) probePairs(n int) []pair {
	type key struct{ u, r uint32 }
	seen := map[key]bool{}
	rng := rand.New(rand.NewPCG(w.Seed, streamProbes))
	var out []pair
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		p := w.notGranted(rng, rng.IntN(w.Users))
		if k := (key{p.User, p.Resource}); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// withoutPairs is seq without the questions about any of pairs.
func withoutPairs(seq, pairs []pair) []pair {
	type key struct{ u, r uint32 }
	drop := make(map[key]bool, len(pairs))
	for _, p := range pairs {
		drop[key{p.User, p.Resource}] = true
	}
	return slices.DeleteFunc(slices.Clone(seq), func(p pair) bool { return drop[key{p.User, p.Resource}] })
}
