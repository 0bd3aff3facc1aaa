// Command grantry is the Grantry authorization service and its admin command line.
//
//	grantry serve                      start the service (settings: GRANTRY_* variables, flags)
//	grantry org create NAME            create an organization and its first API key
//	grantry org list                   list organizations
//	grantry apikey create ORG_ID       add an API key to an organization (--scope admin|manage|check)
//	grantry apikey revoke KEY_ID       revoke an API key
//	grantry secrets rotate             re-seal stored third-party secrets under GRANTRY_SECRET_KEY
//	grantry healthcheck                exit 0 if the service at GRANTRY_ADDR answers /healthz
//	grantry policy test DIR            run the Rego tests of a policy folder; fail if any fails
//	grantry version                    print the version, the revision and the Go version
//
// Every command prints its usage with -h or --help.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// atExit, when set (cpuprofile_pgo.go, in a build for `make pgo` only), runs as the program ends.
var atExit = func() {}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	atExit()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grantry:", err)
		os.Exit(1)
	}
}
