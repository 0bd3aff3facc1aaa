package main

import (
	"fmt"
	"slices"
	"strings"
)

// The rows `grantry-bench run -systems` can pick, in the order of the table. A row of
// Grantry's gateways or writes is measured on the grantry row's server.
const (
	rowCeiling     = systemCeiling
	rowOPA         = systemOPA
	rowOPALight    = systemOPALight
	rowGrantry     = systemGrantry
	rowForwardAuth = "forward-auth"
	rowExtAuthz    = "ext-authz"
	rowWrites      = "writes"
	rowLogsOff     = systemGrantryLogsOff
	rowABAC        = systemGrantryABAC
	rowMongo       = systemGrantryMongo
	rowNginx       = systemNginx
	rowReplicas    = systemGrantryReplicas
)

var allRows = []string{rowCeiling, rowOPA, rowOPALight, rowGrantry, rowForwardAuth, rowExtAuthz, rowWrites,
	rowLogsOff, rowABAC, rowMongo, rowNginx, rowReplicas}

// selection is the rows to run.
type selection map[string]bool

// parseSystems reads -systems: "all", or rows separated by commas.
func parseSystems(v string) (selection, error) {
	sel := selection{}
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case name == "all":
			for _, r := range allRows {
				sel[r] = true
			}
		case slices.Contains(allRows, name):
			sel[name] = true
		default:
			return nil, fmt.Errorf("-systems: unknown row %q (want all, or some of %s)", name, strings.Join(allRows, ","))
		}
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("-systems: no row given (want all, or some of %s)", strings.Join(allRows, ","))
	}
	return sel, nil
}

// grantryTargets are the targets measured on the grantry row's server, first of all its
// can_user_access, then the gateways, then (when writes) its writes, which change its store.
func (s selection) grantryTargets(writes bool) []string {
	var out []string
	for _, t := range []struct {
		row, target string
	}{{rowGrantry, targetGrantry}, {rowForwardAuth, targetForwardAuth}, {rowExtAuthz, targetExtAuthz}} {
		if s[t.row] {
			out = append(out, t.target)
		}
	}
	if writes && s[rowWrites] {
		out = append(out, targetWrites)
	}
	return out
}

// embeddedStore reports whether any selected row runs on the embedded store seeded in grantry/.
func (s selection) embeddedStore() bool {
	return s[rowGrantry] || s[rowForwardAuth] || s[rowExtAuthz] || s[rowWrites] || s[rowLogsOff] || s[rowABAC] || s[rowNginx]
}

// mongoStore reports whether any selected row runs on MongoDB.
func (s selection) mongoStore() bool { return s[rowMongo] || s[rowReplicas] }
