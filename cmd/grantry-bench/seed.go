package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/grantry/grantry/internal/apikey"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// wrapperRego is the policy that lets OPA's own server answer Grantry's question: it maps the
// request {user_id, svc_id} onto the input of grantry.authz, read from the data document, and
// asks grantry.authz.allow.
//
//go:embed wrapper.rego
var wrapperRego string

// lightRego is OPA at its lightest: one rule over a data document of each user's resource ids
// (writeGrants), for the opa-lightest row.
//
//go:embed light.rego
var lightRego string

// The files of a seeded folder.
const (
	grantryDir   = "grantry"   // GRANTRY_DATA_DIR of the Grantry server: grantry.db
	keyFile      = "api-key"   // the bench organization's API key, mode 0600
	opaDir       = "opa"       // authz.rego, wrapper.rego, data.json
	opaDataFile  = "data.json" // the data document OPA serves, the same facts as grantry.db
	opaQueryPath = "/v1/data/grantry/bench/allow"
	// opaLightDir holds light.rego and data.json, {"grants": {"<user id>": ["<resource id>", …]}}.
	opaLightDir       = "opa-light"
	opaLightQueryPath = "/v1/data/grantry/light/allow"
)

// seedEpoch is when every seeded record was made, so that seeding twice writes the same data.
var seedEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seedCmd is `grantry-bench seed`: write a workload's data for Grantry and for OPA into a folder.
func seedCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	p := defaultParams()
	p.register(fs)
	dir := fs.String("dir", "", "folder to write (required; must not hold a seeded store yet)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("seed: -dir is required")
	}
	w, err := newWorkload(p)
	if err != nil {
		return err
	}
	if err := seedGrantry(ctx, *dir, w); err != nil {
		return err
	}
	if err := seedOPA(*dir, w); err != nil {
		return err
	}
	if err := seedOPALight(*dir, w); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seeded %s: %d users × %d grants, %d resources; API key in %s\n",
		*dir, p.Users, p.Grants, p.Resources, filepath.Join(*dir, keyFile))
	return nil
}

// seedGrantry writes the workload into a new embedded store under dir/grantry, directly through
// the storage API (seedStore), and the API key to dir/api-key.
func seedGrantry(ctx context.Context, dir string, w *workload) (err error) {
	path := filepath.Join(dir, grantryDir, "grantry.db")
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("seed: %s exists; seed into a new folder", path)
	}
	s, err := bolt.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer func() { err = errors.Join(err, s.Close(context.Background())) }()
	return seedStore(ctx, s, s.NewLoader(bolt.DefaultLoadBatch), w, filepath.Join(dir, keyFile))
}

// orgStore is what seeding writes through a store's normal methods.
type orgStore interface {
	CreateOrg(ctx context.Context, org storage.Org) error
	CreateAPIKey(ctx context.Context, key storage.APIKey) error
}

// seedStore writes the workload into a store: the organization and its API key by the normal
// methods, the bulk of resources, users (with their attributes) and grants through l. The API
// key goes to keyPath.
func seedStore(ctx context.Context, s orgStore, l storage.Loader, w *workload, keyPath string) error {
	if err := s.CreateOrg(ctx, storage.Org{ID: w.OrgID, Name: "bench", CreatedAt: seedEpoch}); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	key := apikey.Generate()
	err := s.CreateAPIKey(ctx, storage.APIKey{
		ID: "bench", OrgID: w.OrgID, Prefix: apikey.Display(key), Hash: apikey.Hash(key), CreatedAt: seedEpoch,
	})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := os.WriteFile(keyPath, []byte(key), 0o600); err != nil {
		return fmt.Errorf("seed: %w", err)
	}

	integration := storage.AuthIntegration{
		OrgID: w.OrgID, ID: "00000000-0000-4000-8000-000000000001", Name: "bench-directory", Type: "import", CreatedAt: seedEpoch,
	}
	if err := l.AddIntegration(ctx, integration); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	for r, id := range w.ResourceIDs {
		res := storage.Resource{
			OrgID: w.OrgID, ID: id, Kind: storage.Kind(resourceKind(r)), Source: storage.SourceCustom,
			Name: resourceName(r), CreatedAt: seedEpoch.Add(time.Duration(r) * time.Millisecond),
		}
		if res.Kind == storage.KindDataset {
			res.Metadata = map[string]string{"dataset_name": res.Name}
		}
		if err := l.AddResource(ctx, res); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	for u := range w.Users {
		id := userID(u)
		err := l.AddUser(ctx, storage.User{
			OrgID: w.OrgID, ID: id, Email: userEmail(u), First: "Bench", Last: id, Active: true,
			IntegrationID: integration.ID, IntegrationName: integration.Name, ImportedAt: seedEpoch, ModifiedAt: seedEpoch,
			Attributes: storage.ImportedAttributes(map[string]string{"department": w.department(u)}),
		})
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		for _, r := range w.userGrants(u) {
			g := storage.Grant{OrgID: w.OrgID, UserID: id, ResourceID: w.ResourceIDs[r], CreatedAt: seedEpoch}
			if err := l.AddGrant(ctx, g); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
		}
	}
	if err := l.Flush(ctx); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// seedOPA writes what OPA's server is started with into dir/opa: Grantry's embedded policy as it
// is (authz.rego), the wrapper that maps a request onto its input (wrapper.rego), and the same
// facts as the store, as the data document data.facts (data.json).
func seedOPA(dir string, w *workload) error {
	out := filepath.Join(dir, opaDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	for _, m := range policy.Embedded() {
		if m.IsTest() {
			continue
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(m.Name)), []byte(m.Source), 0o644); err != nil {
			return fmt.Errorf("seed OPA: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "wrapper.rego"), []byte(wrapperRego), 0o644); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	f, err := os.Create(filepath.Join(out, opaDataFile))
	if err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	if err := writeFacts(f, w); err != nil {
		f.Close()
		return fmt.Errorf("seed OPA: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	return nil
}

// seedOPALight writes what OPA's server at its lightest is started with into dir/opa-light:
// light.rego, and each user's resource ids as the data document data.grants (data.json).
func seedOPALight(dir string, w *workload) error {
	out := filepath.Join(dir, opaLightDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "light.rego"), []byte(lightRego), 0o644); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	f, err := os.Create(filepath.Join(out, opaDataFile))
	if err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	if err := writeGrants(f, w); err != nil {
		f.Close()
		return fmt.Errorf("seed OPA: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("seed OPA: %w", err)
	}
	return nil
}

// writeGrants writes the compact data document of light.rego: {"grants": {"<user id>":
// ["<resource id>", …]}}.
func writeGrants(out io.Writer, w *workload) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	ids := make([][]byte, len(w.ResourceIDs))
	for r, id := range w.ResourceIDs {
		ids[r] = quote(id)
	}
	bw.WriteString(`{"grants":{`)
	for u := range w.Users {
		if u > 0 {
			bw.WriteByte(',')
		}
		bw.Write(quote(userID(u)))
		bw.WriteString(`:[`)
		for i, r := range w.userGrants(u) {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.Write(ids[r])
		}
		bw.WriteByte(']')
	}
	bw.WriteString("}}\n")
	return bw.Flush()
}

// writeFacts writes the data document, in the shape grantry.authz reads its input:
//
//	{"facts": {"resources": {"<id>": {"kind", "name"}},
//	           "users": {"<id>": {"id", "active", "resource_list": {"<id>": {"name"}}}}}}
//
// It streams, because a million users do not fit comfortably in one value.
func writeFacts(out io.Writer, w *workload) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	ids := make([][]byte, len(w.ResourceIDs))
	names := make([][]byte, len(w.ResourceIDs))
	for r, id := range w.ResourceIDs {
		ids[r], names[r] = quote(id), quote(resourceName(r))
	}
	bw.WriteString(`{"facts":{"resources":{`)
	for r := range ids {
		if r > 0 {
			bw.WriteByte(',')
		}
		fmt.Fprintf(bw, `%s:{"kind":%s,"name":%s}`, ids[r], quote(resourceKind(r)), names[r])
	}
	bw.WriteString(`},"users":{`)
	for u := range w.Users {
		if u > 0 {
			bw.WriteByte(',')
		}
		id := quote(userID(u))
		fmt.Fprintf(bw, `%s:{"id":%s,"active":true,"resource_list":{`, id, id)
		for i, r := range w.userGrants(u) {
			if i > 0 {
				bw.WriteByte(',')
			}
			fmt.Fprintf(bw, `%s:{"name":%s}`, ids[r], names[r])
		}
		bw.WriteString(`}}`)
	}
	bw.WriteString("}}}\n")
	return bw.Flush()
}

// quote is s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
