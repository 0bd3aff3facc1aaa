package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// build is what a binary knows of how it was built, from the information Go stamps into it.
type build struct {
	version   string // the module's version: a tag, a pseudo-version, or "(devel)"
	revision  string // the VCS revision, "unknown" when the build was not stamped
	modified  bool   // the working tree had changes not committed
	goVersion string
}

// buildOf reads the build information of the running binary. A binary built outside a
// repository, or with -buildvcs=false, carries no revision.
func buildOf() build {
	b := build{version: "(devel)", revision: "unknown", goVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

func (b build) String() string {
	rev := b.revision
	if b.modified {
		rev += ", modified"
	}
	return fmt.Sprintf("grantry %s (revision %s; %s %s/%s)", b.version, rev, b.goVersion, runtime.GOOS, runtime.GOARCH)
}

// version runs `grantry version`.
func version(args []string, stdout io.Writer) error {
	rest, err := parse(newFlags("version"), args, versionUsage, stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errors.New(versionUsage)
	}
	_, err = fmt.Fprintln(stdout, buildOf())
	return err
}
