package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Each command's usage: what -h and --help print to standard output, and what an incomplete
// command is told.
const (
	serveUsage = `usage: grantry serve [flags]

Start the service. Every flag is also a GRANTRY_* variable, and the flag wins; secrets
(GRANTRY_BOOTSTRAP_API_KEY, GRANTRY_ADMIN_TOKEN, GRANTRY_SECRET_KEY, GRANTRY_SECRET_KEY_PREVIOUS)
are read from the environment only.`
	orgUsage = `usage:
  grantry org create NAME [--url URL]    create an organization and its first API key
  grantry org list [--url URL]           list organizations

Calls the admin API of the service at GRANTRY_URL with the token in GRANTRY_ADMIN_TOKEN.`
	apikeyUsage = `usage:
  grantry apikey create ORG_ID [--scope admin|manage|check] [--url URL]
                                         add an API key to an organization (default scope: admin)
  grantry apikey revoke KEY_ID [--url URL]
                                         revoke an API key

Calls the admin API of the service at GRANTRY_URL with the token in GRANTRY_ADMIN_TOKEN.`
	scimTokenUsage = `usage:
  grantry scim-token rotate ORG_ID INTEGRATION_ID [--url URL]
                                         give a SCIM integration a new token (shown once); the old one is refused
  grantry scim-token revoke ORG_ID INTEGRATION_ID [--url URL]
                                         leave a SCIM integration without a token until a rotation

Calls the admin API of the service at GRANTRY_URL with the token in GRANTRY_ADMIN_TOKEN.`
	secretsUsage = `usage: grantry secrets rotate [flags]

Re-seal every stored third-party secret under GRANTRY_SECRET_KEY, opening those sealed under
an older key with GRANTRY_SECRET_KEY_PREVIOUS. It opens the store from the same settings and
flags as serve; stop the service first on the embedded store.`
	healthcheckUsage = `usage: grantry healthcheck

Exit 0 if the service at GRANTRY_ADDR answers GET /healthz with 200, else 1: the container's
HEALTHCHECK, for an image without curl.`
	policyUsage = `usage: grantry policy test DIR

Run the Rego tests (test_* rules in *_test.rego files) of the policy folder DIR as Grantry
would load it; fail if it does not compile, lacks allow or allow_all, has no tests, or any
test fails.`
	versionUsage = `usage: grantry version

Print Grantry's version, the revision it was built from, and the Go version.`
)

// newFlags returns the flag set of the command name. It prints nothing itself: parse prints
// the usage on -h, and run's caller prints any error once.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs, flags before, between and after the positional arguments, which
// it returns. On -h, -help or --help it prints usage and fs's flags to stdout and returns
// flag.ErrHelp, which run turns into success, as Go's own commands do.
func parse(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) ([]string, error) {
	rest, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, usage, stdout)
		return nil, flag.ErrHelp
	case err != nil:
		return nil, fmt.Errorf("%w\nrun \"grantry %s -h\" for usage", err, fs.Name())
	}
	return rest, nil
}

// printUsage writes usage and, if fs has any, its flags.
func printUsage(fs *flag.FlagSet, usage string, w io.Writer) {
	fmt.Fprintln(w, usage)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if !hasFlags {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// isHelp reports whether arg asks for help as the flag package understands it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// parseInterspersed parses args with fs, flags before, between and after the positional
// arguments, and returns the positional ones: `grantry apikey create ORG_ID --scope check`
// reads as naturally as with the flag first, where the flag package alone stops at ORG_ID.
// Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
