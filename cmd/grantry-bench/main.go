// Command grantry-bench measures Grantry's access check side by side with OPA's own server
// answering the same policy over the same data (and at its lightest, over the least data), and
// with a bare net/http handler (the ceiling); and in the configurations Grantry runs in
// production: its gateways' forward-auth and Envoy ext_authz, what its authorization step adds
// behind a real nginx, a policy folder of its own, the MongoDB store, and two replicas sharing
// it. `make bench` runs it; `make bench-large` runs its scale test.
//
//	grantry-bench run   -grantry BIN -opa BIN     seed, start each server, load it, print the table
//	grantry-bench scale -grantry BIN              Grantry with 1,000,000 users × 20 grants vs 10,000 × 50
//	grantry-bench seed  -dir DIR                  write the workload for Grantry (bbolt) and both OPAs (JSON)
//	grantry-bench profile -grantry BIN            Grantry's CPU profile under make bench's load (make pgo)
//	grantry-bench load  -target T -addr HOST:PORT drive one server and print what was measured (JSON)
//	grantry-bench ceiling -addr HOST:PORT         serve the ceiling handler
//
// Every workload is drawn from a fixed seed, so every server — and every run — gets the same data
// and the same sequence of questions; see workload.go.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  grantry-bench run -grantry BIN -opa BIN [flags]   the side-by-side benchmark (make bench)
  grantry-bench scale -grantry BIN [flags]          the million-user scale test (make bench-large)
  grantry-bench seed -dir DIR [flags]               write a workload for Grantry and for both OPAs
  grantry-bench profile -grantry BIN [flags]        Grantry's CPU profile under that load (make pgo)
  grantry-bench load -target T -addr HOST:PORT      load one server; prints JSON
  grantry-bench ceiling -addr HOST:PORT             serve the bare net/http ceiling
Run "grantry-bench COMMAND -h" for the flags.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "grantry-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], getenv, stdout, stderr)
	case "scale":
		return scaleCmd(ctx, args[1:], getenv, stdout, stderr)
	case "seed":
		return seedCmd(ctx, args[1:], stdout)
	case "profile":
		return profileCmd(ctx, args[1:], getenv, stderr)
	case "load":
		return loadCmd(ctx, args[1:], stdout)
	case "ceiling":
		return ceilingCmd(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}
