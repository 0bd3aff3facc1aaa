package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantry/grantry/internal/seal"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// fakeAccounts serves OpenAI's model list and Pinecone's index list on loopback, accepting only
// the keys in good.
func fakeAccounts(t *testing.T, good ...string) *httptest.Server {
	t.Helper()
	ok := func(key string) bool {
		for _, g := range good {
			if key == g {
				return true
			}
		}
		return false
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models" && ok(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")):
			fmt.Fprint(w, `{"data":[{"id":"gpt-4o"}]}`)
		case r.URL.Path == "/indexes" && ok(r.Header.Get("Api-Key")):
			fmt.Fprint(w, `{"indexes":[{"name":"docs","host":"docs-1.svc.pinecone.io"},{"name":"faq","host":"faq-1.svc.pinecone.io"}]}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid key"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func masterKey(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, seal.KeySize))
}

// storedSecrets opens the embedded store in dir and returns every resource with a secret.
func storedSecrets(t *testing.T, dir string) []storage.Resource {
	t.Helper()
	s, err := bolt.Open(context.Background(), filepath.Join(dir, "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	rs, err := s.ResourcesWithSecrets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// rotationEvents counts the audit trail's records of re-sealed secrets in the organization.
func rotationEvents(t *testing.T, dir, orgID string) int {
	t.Helper()
	s, err := bolt.Open(context.Background(), filepath.Join(dir, "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	events, err := s.ListEvents(context.Background(), orgID, storage.EventFilter{Action: audit.ActionResourceSecretRotated, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(events)
}

// rotateCmd runs `grantry secrets rotate` on dir with the given master keys.
func rotateCmd(dir, current, previous string) (stdout, stderr string, err error) {
	env := map[string]string{"GRANTRY_DATA_DIR": dir, "GRANTRY_SECRET_KEY": current, "GRANTRY_SECRET_KEY_PREVIOUS": previous}
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"secrets", "rotate"}, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestSecretsRotate(t *testing.T) {
	const modelKey, indexKey = "sk-model-3f9a1c77d2e04b6b", "pc-index-8d21e6f0a94c4c1e"
	fake := fakeAccounts(t, modelKey, indexKey)
	dir := t.TempDir()
	keyA, keyB, keyC := masterKey(0xA), masterKey(0xB), masterKey(0xC)

	url, serverLog, stop := startServer(t, map[string]string{
		"GRANTRY_DATA_DIR": dir, "GRANTRY_SECRET_KEY": keyA, "GRANTRY_BOOTSTRAP_API_KEY": "boot-key",
		"GRANTRY_OPENAI_BASE_URL": fake.URL + "/v1", "GRANTRY_PINECONE_BASE_URL": fake.URL,
	})
	var bodies [][]byte
	for _, call := range []struct {
		path string
		body map[string]string
	}{
		{"/llm_integration/hostedllm", map[string]string{"provider_key": modelKey}},
		{"/data_integration/vectordb/integrate", map[string]string{"api_key": indexKey, "environment": "us-east-1"}},
		{"/llm_integration/hostedllm", map[string]string{"provider_key": "sk-refused-11111111"}},
	} {
		status, body := send(t, "POST", url+call.path, "boot-key", call.body)
		if status != http.StatusOK && !strings.Contains(call.body["provider_key"], "refused") {
			t.Fatalf("POST %s = %d %s", call.path, status, body)
		}
		bodies = append(bodies, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	wantPlain := map[string]string{} // resource id → its key in clear
	for _, r := range storedSecrets(t, dir) {
		wantPlain[r.ID] = map[storage.Kind]string{storage.KindModel: modelKey, storage.KindDataset: indexKey}[r.Kind]
	}
	if len(wantPlain) != 3 {
		t.Fatalf("%d resources with secrets, want the model and two indexes", len(wantPlain))
	}

	// A rotation without the key that sealed them opens nothing and changes nothing.
	out, errOut, err := rotateCmd(dir, keyC, "")
	if err == nil || !strings.Contains(err.Error(), "3 secrets could not be opened") || strings.Count(errOut, "not configured") != 3 {
		t.Fatalf("rotate with an unrelated key = %v\n%s%s", err, out, errOut)
	}
	onlyA, _ := seal.New(bytes.Repeat([]byte{0xA}, seal.KeySize))
	for _, r := range storedSecrets(t, dir) {
		if _, err := onlyA.Open(r.Secret, r.OrgID, r.ID); err != nil {
			t.Errorf("a failed rotation changed the secret of %s: %v", r.ID, err)
		}
	}

	out, errOut, err = rotateCmd(dir, keyB, keyA)
	if err != nil || !strings.Contains(out, "Re-sealed 3 secrets under the current master key; 0 already were") {
		t.Fatalf("rotate = %v\n%s%s", err, out, errOut)
	}

	// The previous key is no longer needed: the new one alone opens every secret, and the old
	// one opens none.
	onlyB, _ := seal.New(bytes.Repeat([]byte{0xB}, seal.KeySize))
	for _, r := range storedSecrets(t, dir) {
		plain, err := onlyB.Open(r.Secret, r.OrgID, r.ID)
		if err != nil || string(plain) != wantPlain[r.ID] {
			t.Errorf("after rotation the new key alone opens %s to %q, %v; want its key", r.ID, plain, err)
		}
		if _, err := onlyA.Open(r.Secret, r.OrgID, r.ID); !errors.Is(err, seal.ErrUnknownKey) {
			t.Errorf("after rotation the old key still opens %s: %v", r.ID, err)
		}
	}
	rotated := storedSecrets(t, dir)
	if n := rotationEvents(t, dir, rotated[0].OrgID); n != 3 {
		t.Errorf("the audit trail records %d rotations, want 3", n)
	}
	out2, errOut2, err := rotateCmd(dir, keyB, "")
	if err != nil || !strings.Contains(out2, "Re-sealed 0 secrets under the current master key; 3 already were") {
		t.Errorf("rotate again with the new key alone = %v\n%s%s", err, out2, errOut2)
	}

	// And the service runs with the new key alone, integrating again into the same resources.
	url, serverLog2, stop := startServer(t, map[string]string{
		"GRANTRY_DATA_DIR": dir, "GRANTRY_SECRET_KEY": keyB, "GRANTRY_BOOTSTRAP_API_KEY": "boot-key",
		"GRANTRY_OPENAI_BASE_URL": fake.URL + "/v1", "GRANTRY_PINECONE_BASE_URL": fake.URL,
	})
	if status, body := send(t, "POST", url+"/llm_integration/openai", "boot-key", map[string]string{"provider_key": modelKey}); status != http.StatusOK {
		t.Errorf("integrate after rotation = %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(storedSecrets(t, dir)); n != 3 {
		t.Errorf("%d resources with secrets after integrating again, want 3", n)
	}

	file, err := os.ReadFile(filepath.Join(dir, "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	everything := [][]byte{file, []byte(serverLog.String()), []byte(serverLog2.String()), []byte(out + errOut + out2 + errOut2)}
	everything = append(everything, bodies...)
	for _, secret := range []string{modelKey, indexKey, "sk-refused-11111111", keyA, keyB, keyC} {
		for i, b := range everything {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("output %d shows the secret %s", i, secret)
			}
		}
	}
}

func TestDevelopmentMasterKey(t *testing.T) {
	const modelKey = "sk-dev-2b7c9e1f5a3d4e6f"
	fake := fakeAccounts(t, modelKey)
	dir := t.TempDir()
	env := map[string]string{
		"GRANTRY_DATA_DIR": dir, "GRANTRY_BOOTSTRAP_API_KEY": "boot-key", "GRANTRY_OPENAI_BASE_URL": fake.URL + "/v1",
	}
	url, log, stop := startServer(t, env)
	if !strings.Contains(log.String(), "generated into this file") || !strings.Contains(log.String(), "production and multi-replica deployments must set GRANTRY_SECRET_KEY") {
		t.Errorf("no warning about the generated key:\n%s", log)
	}
	path := filepath.Join(dir, "secret.key")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %o, want 600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	if status, body := send(t, "POST", url+"/llm_integration/hostedllm", "boot-key", map[string]string{"provider_key": modelKey}); status != http.StatusOK {
		t.Fatalf("integrate = %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	_, log2, stop2 := startServer(t, env)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if !bytes.Equal(first, again) {
		t.Error("the second start made another key: secrets sealed under the first would be lost")
	}
	if !strings.Contains(log2.String(), "GRANTRY_SECRET_KEY is not set") || strings.Contains(log2.String(), "generated into this file") {
		t.Errorf("second start: want the warning, not the generation message:\n%s", log2)
	}
	// The file holds the key in the form GRANTRY_SECRET_KEY takes, so production can adopt it
	// as the previous key of a rotation.
	key, err := seal.ParseKey(string(first))
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := seal.New(key)
	rs := storedSecrets(t, dir)
	if len(rs) != 1 {
		t.Fatalf("%d secrets stored, want 1", len(rs))
	}
	if plain, err := sealer.Open(rs[0].Secret, rs[0].OrgID, rs[0].ID); err != nil || string(plain) != modelKey {
		t.Errorf("the key file's key opens the secret to %q, %v", plain, err)
	}
	if strings.Contains(log.String()+log2.String(), strings.TrimSpace(string(first))) {
		t.Error("the log shows the development master key")
	}
	out, errOut, err := rotateCmd(dir, masterKey(0xD), strings.TrimSpace(string(first)))
	if err != nil || !strings.Contains(out, "Re-sealed 1 secrets") {
		t.Errorf("rotating from the development key = %v\n%s%s", err, out, errOut)
	}
}

// swapRacer is a store on which, the first time a secret is swapped, another writer replaces
// it first, as an integration running during a rotation would.
type swapRacer struct {
	*bolt.Store
	replaceWith func(r storage.Resource) []byte
	raced       bool
}

func (s *swapRacer) SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error {
	if !s.raced {
		s.raced = true
		r, err := s.GetResource(ctx, orgID, id)
		if err != nil {
			return err
		}
		if err := s.ReplaceSecret(ctx, orgID, id, s.replaceWith(r), r.Metadata); err != nil {
			return err
		}
	}
	return s.Store.SwapSecret(ctx, orgID, id, old, next)
}

func TestRotateRace(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, seal.KeySize), bytes.Repeat([]byte{2}, seal.KeySize)
	byOld, _ := seal.New(oldKey)
	rotating, _ := seal.New(newKey, oldKey)
	tests := []struct {
		name string
		// sealer seals what the other writer stores meanwhile.
		sealer *seal.Sealer
		want   rotation
	}{
		{"the other writer seals under the new key", rotating, rotation{current: 1}},
		{"the other writer still seals under the old key", byOld, rotation{resealed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := bolttest.Open(t)
			sealed, _ := byOld.Seal([]byte("first-key"), "org", "res")
			if err := store.CreateResource(ctx, storage.Resource{OrgID: "org", ID: "res", Kind: storage.KindModel, Source: "openai", Name: "openai", Secret: sealed}); err != nil {
				t.Fatal(err)
			}
			racer := &swapRacer{Store: store, replaceWith: func(r storage.Resource) []byte {
				b, _ := tt.sealer.Seal([]byte("second-key"), r.OrgID, r.ID)
				return b
			}}
			got, err := rotate(ctx, racer, rotating)
			if err != nil || got.resealed != tt.want.resealed || got.current != tt.want.current || len(got.failed) != 0 {
				t.Fatalf("rotate = %+v, %v; want %+v", got, err, tt.want)
			}
			r, err := store.GetResource(ctx, "org", "res")
			if err != nil {
				t.Fatal(err)
			}
			onlyNew, _ := seal.New(newKey)
			if plain, err := onlyNew.Open(r.Secret, "org", "res"); err != nil || string(plain) != "second-key" {
				t.Errorf("after the race the secret opens to %q, %v; want the key written meanwhile, under the new master key", plain, err)
			}
		})
	}
}

func TestSecretsUsage(t *testing.T) {
	for _, args := range [][]string{{"secrets"}, {"secrets", "shred"}} {
		err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "secrets rotate") {
			t.Errorf("run(%v) = %v, want the usage", args, err)
		}
	}
}
