package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/grantry/grantry/policy"
)

// abacRego and abacTestRego are the grantry-abac row's policy and its tests; writeABACPolicy
// writes them, with the shipped policy under another package, into the folder that Grantry is
// started with as GRANTRY_POLICY_DIR.
//
//go:embed abac.rego
var abacRego string

//go:embed abac_test.rego
var abacTestRego string

// abacPolicyDir is the folder of the ABAC policy in the work folder.
const abacPolicyDir = "abac-policy"

// abacModules are the files of the ABAC policy folder: the shipped policy as package
// grantry.shipped (shipped.rego), which abac.rego asks, abac.rego and abac_test.rego. The
// shipped policy is taken from the binary, so the row always runs the rules Grantry ships.
func abacModules() ([]policy.Module, error) {
	const pkg = "\npackage grantry.authz\n"
	for _, m := range policy.Embedded() {
		if m.IsTest() {
			continue
		}
		if strings.Count(m.Source, pkg) != 1 {
			return nil, fmt.Errorf("ABAC policy: the shipped %s does not declare package grantry.authz once", m.Name)
		}
		return []policy.Module{
			{Name: "shipped.rego", Source: strings.Replace(m.Source, pkg, "\npackage grantry.shipped\n", 1)},
			{Name: "abac.rego", Source: abacRego},
			{Name: "abac_test.rego", Source: abacTestRego},
		}, nil
	}
	return nil, fmt.Errorf("ABAC policy: no shipped policy embedded")
}

// writeABACPolicy writes the ABAC policy folder into dir/abac-policy and returns its path.
func writeABACPolicy(dir string) (string, error) {
	mods, err := abacModules()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, abacPolicyDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("ABAC policy: %w", err)
	}
	for _, m := range mods {
		if err := os.WriteFile(filepath.Join(out, m.Name), []byte(m.Source), 0o644); err != nil {
			return "", fmt.Errorf("ABAC policy: %w", err)
		}
	}
	return out, nil
}
