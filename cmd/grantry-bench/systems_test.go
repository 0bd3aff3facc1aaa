package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSystems(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "all", want: allRows},
		{in: "opa, grantry-abac", want: []string{rowOPA, rowABAC}},
		{in: "ext-authz,ext-authz,", want: []string{rowExtAuthz}},
		{in: "", wantErr: "no row"},
		{in: "grantry,mongo", wantErr: `unknown row "mongo"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			sel, err := parseSystems(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSystems(%q) = %v, %v; want an error saying %q", tc.in, sel, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range allRows {
				if sel[r] {
					got = append(got, r)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelectionServers: the grantry row's server answers the gateways and the writes, in that
// order, its writes last since they change its store; the stores are seeded only for rows that
// need them.
func TestSelectionServers(t *testing.T) {
	all, _ := parseSystems("all")
	if got, want := all.grantryTargets(true), []string{targetGrantry, targetForwardAuth, targetExtAuthz, targetWrites}; !slices.Equal(got, want) {
		t.Errorf("grantryTargets(writes) = %v, want %v", got, want)
	}
	if got, want := all.grantryTargets(false), []string{targetGrantry, targetForwardAuth, targetExtAuthz}; !slices.Equal(got, want) {
		t.Errorf("grantryTargets(no writes) = %v, want %v", got, want)
	}
	tests := []struct {
		rows            string
		targets         []string
		embedded, mongo bool
	}{
		{"ext-authz", []string{targetExtAuthz}, true, false},
		{"opa,opa-lightest,ceiling", nil, false, false},
		{"grantry-abac", nil, true, false},
		{"nginx", nil, true, false},
		{"grantry-replicas", nil, false, true},
		{"grantry-mongo,writes", []string{targetWrites}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.rows, func(t *testing.T) {
			sel, err := parseSystems(tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.grantryTargets(true); !slices.Equal(got, tc.targets) {
				t.Errorf("grantryTargets = %v, want %v", got, tc.targets)
			}
			if sel.embeddedStore() != tc.embedded || sel.mongoStore() != tc.mongo {
				t.Errorf("embedded store %v, MongoDB %v; want %v, %v", sel.embeddedStore(), sel.mongoStore(), tc.embedded, tc.mongo)
			}
		})
	}
}

// TestGrantrySettings: each Grantry row runs on its own data and policy, and only the MongoDB
// rows on MongoDB, with one master key for both replicas.
func TestGrantrySettings(t *testing.T) {
	db := mongoDB{uri: "mongodb://u:p@db:27017", name: "grantry_bench_1", secretKey: "k"}
	ferret := db
	ferret.ferret = true
	tests := []struct {
		system string
		db     mongoDB
		want   []string
	}{
		{systemGrantry, db, []string{"GRANTRY_DATA_DIR=/w/grantry"}},
		{systemGrantryLogsOff, db, []string{"GRANTRY_DATA_DIR=/w/grantry", "GRANTRY_DECISION_LOG=false", "GRANTRY_LOG_LEVEL=error"}},
		{systemGrantryABAC, db, []string{"GRANTRY_DATA_DIR=/w/grantry-abac", "GRANTRY_POLICY_DIR=/w/abac-policy"}},
		{systemGrantryMongo, db, []string{"GRANTRY_MONGO_URI=mongodb://u:p@db:27017", "GRANTRY_MONGO_DB=grantry_bench_1", "GRANTRY_SECRET_KEY=k"}},
		{systemGrantryReplicas, ferret, []string{"GRANTRY_MONGO_URI=mongodb://u:p@db:27017", "GRANTRY_MONGO_DB=grantry_bench_1", "GRANTRY_SECRET_KEY=k", "GRANTRY_DECISION_LOG=false"}},
	}
	for _, tc := range tests {
		t.Run(tc.system, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, grantrySettings(tc.system, "/w", tc.db)); diff != "" {
				t.Errorf("grantrySettings (-want +got):\n%s", diff)
			}
		})
	}
	if d := db.describe(); strings.Contains(d, "u:p") || strings.Contains(d, "db:27017") {
		t.Errorf("describe() = %q shows the URI", d)
	}
}

// TestReplicaParams: the replicas' row on FerretDB holds make bench's first users, with the same
// grants.
func TestReplicaParams(t *testing.T) {
	p := defaultParams()
	if want := (params{Seed: p.Seed, Users: smallMongoUsers, Resources: p.Resources, Grants: p.Grants, Checks: p.Checks}); replicaParams(p) != want {
		t.Errorf("replicaParams = %+v, want %+v", replicaParams(p), want)
	}
	full, part := mustWorkload(t, params{Seed: 2, Users: 200, Resources: 100, Grants: 5, Checks: 10}), mustWorkload(t, replicaParams(params{Seed: 2, Users: 200, Resources: 100, Grants: 5, Checks: 10}))
	if !slices.Equal(full.ResourceIDs, part.ResourceIDs) || !slices.Equal(full.grants[:len(part.grants)], part.grants) || !slices.Equal(full.research[:smallMongoUsers], part.research) {
		t.Error("the replicas' users are not the first of the workload, with their grants and departments")
	}
	tiny := smallParams()
	tiny.Users = smallMongoUsers - 1
	if got := replicaParams(tiny); got != tiny {
		t.Errorf("replicaParams of %d users = %+v, want it unchanged", tiny.Users, got)
	}
}
