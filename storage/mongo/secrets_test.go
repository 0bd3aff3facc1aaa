package mongo

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/grantry/grantry/internal/seal"
	"github.com/grantry/grantry/storage"
)

// TestSealedSecretsInRawDocuments stores provider keys sealed as the service seals them,
// replaces one (an integration again) and swaps one (a rotation), and reads the raw documents
// back: no key appears in them in clear, nor in base64 or hex, and each sealed secret still
// opens to its key.
func TestSealedSecretsInRawDocuments(t *testing.T) {
	s, db := openStore(t, ferretURI, dbName(t.Name(), 0))
	ctx := t.Context()
	oldMaster, newMaster := bytes.Repeat([]byte{1}, seal.KeySize), bytes.Repeat([]byte{2}, seal.KeySize)
	byOld, _ := seal.New(oldMaster)
	rotating, _ := seal.New(newMaster, oldMaster)
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	keys := map[string]string{
		"model": "sk-proj-RAWDOC-1c2d3e4f5a6b7c8d",
		"index": "pcsk_RAWDOC_9e8d7c6b5a4f3e2d",
		"new":   "sk-proj-RAWDOC-replaced-0a0b0c0d",
	}
	sealed := func(sealer *seal.Sealer, key, id string) []byte {
		b, err := sealer.Seal([]byte(key), "org-1", id)
		must(t, err)
		return b
	}

	must(t, s.CreateResource(ctx, storage.Resource{OrgID: "org-1", ID: "res-model", Kind: storage.KindModel, Source: "openai",
		Name: "openai", Secret: sealed(byOld, keys["model"], "res-model"), CreatedAt: now}))
	indexSecret := sealed(byOld, keys["index"], "res-index")
	must(t, s.CreateResource(ctx, storage.Resource{OrgID: "org-1", ID: "res-index", Kind: storage.KindDataset, Source: "pinecone",
		Name: "docs", Metadata: map[string]string{"index": "docs"}, Secret: indexSecret, CreatedAt: now}))
	must(t, s.ReplaceSecret(ctx, "org-1", "res-model", sealed(byOld, keys["new"], "res-model"), nil))
	must(t, s.SwapSecret(ctx, "org-1", "res-index", indexSecret, sealed(rotating, keys["index"], "res-index")))

	cur, err := db.Collection(colResources).Find(ctx, bson.D{})
	must(t, err)
	var docs []bson.Raw
	must(t, cur.All(ctx, &docs))
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	for _, raw := range docs {
		for _, key := range keys {
			for _, form := range []string{key, base64.StdEncoding.EncodeToString([]byte(key)), hex.EncodeToString([]byte(key))} {
				if bytes.Contains(raw, []byte(form)) {
					t.Errorf("a raw document holds a key (%q): %v", form, raw)
				}
			}
		}
	}
	for id, want := range map[string]string{"res-model": keys["new"], "res-index": keys["index"]} {
		r, err := s.GetResource(ctx, "org-1", id)
		must(t, err)
		plain, err := rotating.Open(r.Secret, "org-1", id)
		if err != nil || string(plain) != want {
			t.Errorf("%s opens to %q, %v; want %q", id, plain, err, want)
		}
	}
}
