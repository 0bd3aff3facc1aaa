package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/internal/provider"
	"github.com/grantry/grantry/internal/seal"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// fakeProviders is one loopback server that imitates OpenAI (under /openai/v1), Anthropic
// (/anthropic), Pinecone (/pinecone) and Qdrant (/qdrant). What it answers depends on how the
// key it is sent begins: "good-" (a list), "empty-" (an empty list), "401-", "403-", "500-",
// "slow-" (no answer until the client gives up), "lag-" (a list after lag), "drop-" (the connection is closed),
// "notjson-" and "shape-" (JSON of another shape). A key sent in the wrong header gets 401.
// Refusals quote the key back, as real providers do, so leaks would show.
type fakeProviders struct {
	srv *httptest.Server

	mu      sync.Mutex
	indexes []string // what the vector databases list
	calls   int
	lag     time.Duration // how long "lag-" keys wait for their answer
}

func newFakeProviders(tb testing.TB) *fakeProviders {
	tb.Helper()
	fp := &fakeProviders{indexes: []string{"docs", "faq"}, lag: 300 * time.Millisecond}
	fp.srv = httptest.NewServer(http.HandlerFunc(fp.serve))
	tb.Cleanup(fp.srv.Close)
	return fp
}

func (fp *fakeProviders) setIndexes(names ...string) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.indexes = names
}

func (fp *fakeProviders) callCount() int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.calls
}

func (fp *fakeProviders) serve(w http.ResponseWriter, r *http.Request) {
	fp.mu.Lock()
	fp.calls++
	names := append([]string(nil), fp.indexes...)
	lag := fp.lag
	fp.mu.Unlock()

	var key string
	var list func([]string) string
	switch r.URL.Path {
	case "/openai/v1/models":
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		list = func(ns []string) string { return jsonList(`{"data":[%s]}`, `{"id":%q}`, ns) }
	case "/anthropic/v1/models":
		if r.Header.Get("anthropic-version") != "" {
			key = r.Header.Get("x-api-key")
		}
		list = func(ns []string) string { return jsonList(`{"data":[%s],"has_more":false}`, `{"id":%q}`, ns) }
	case "/pinecone/indexes":
		key = r.Header.Get("Api-Key")
		list = func(ns []string) string {
			return jsonList(`{"indexes":[%s]}`, `{"name":%[1]q,"host":"%[1]s-x1.svc.pinecone.io"}`, ns)
		}
	case "/qdrant/collections":
		key = r.Header.Get("api-key")
		list = func(ns []string) string {
			return jsonList(`{"result":{"collections":[%s]},"status":"ok"}`, `{"name":%q}`, ns)
		}
	default:
		http.NotFound(w, r)
		return
	}
	behaviour, _, _ := strings.Cut(key, "-")
	switch behaviour {
	case "good":
		fmt.Fprint(w, list(names))
	case "empty":
		fmt.Fprint(w, list(nil))
	case "lag":
		time.Sleep(lag)
		fmt.Fprint(w, list(names))
	case "403":
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"error":"key %s may not list"}`, key)
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"error":"internal error handling %s"}`, key)
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute): // longer than any test's provider timeout
		}
	case "drop":
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	case "notjson":
		fmt.Fprintf(w, "<html>hello %s</html>", key)
	case "shape":
		fmt.Fprint(w, `{"object":"list","items":[]}`)
	default:
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"Incorrect API key provided: %s"}`, key)
	}
}

func jsonList(outer, item string, names []string) string {
	items := make([]string, len(names))
	for i, n := range names {
		items[i] = fmt.Sprintf(item, n)
	}
	return fmt.Sprintf(outer, strings.Join(items, ","))
}

// secretKey returns a third-party key that makes the fake behave as behaviour says, with a
// random part so that finding it anywhere can only mean it leaked.
func secretKey(behaviour string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return behaviour + "-sk-" + hex.EncodeToString(b)
}

// integrationFixture is a fixture whose server integrates with the fake providers, seals with a
// known master key, logs into a buffer, and keeps its data in a bolt file at a known path.
type integrationFixture struct {
	*fixture
	fakes  *fakeProviders
	sealer *seal.Sealer
	log    *syncBuffer
	path   string
	store  storage.Store
	keys   []string // every third-party key sent
	bodies [][]byte // every response body
}

// syncBuffer is a log destination that the server and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func newIntegrationFixture(t *testing.T, opts ...fixtureOption) *integrationFixture {
	t.Helper()
	// Long enough for a loaded test machine; only the "slow" cases wait it out.
	return newIntegrationFixtureTimeout(t, time.Second, opts...)
}

// newIntegrationFixtureTimeout is newIntegrationFixture with each call to a provider bounded by
// providerTimeout.
func newIntegrationFixtureTimeout(t *testing.T, providerTimeout time.Duration, opts ...fixtureOption) *integrationFixture {
	t.Helper()
	fp := newFakeProviders(t)
	sealer, err := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "grantry.db")
	store, err := bolt.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	logs := &syncBuffer{}
	timeout := provider.WithTimeout(providerTimeout)
	f := newFixture(t, func(cfg *fixtureConfig) {
		cfg.Engine.Store = store
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.Engine.Logger = cfg.Logger
		cfg.Integrations = api.Integrations{
			ModelProviders: []api.ModelProvider{
				provider.NewOpenAI(fp.srv.URL+"/openai/v1", timeout),
				provider.NewAnthropic(fp.srv.URL+"/anthropic", timeout),
			},
			VectorDBs: []api.VectorDB{
				provider.NewPinecone(fp.srv.URL+"/pinecone", timeout),
				provider.NewQdrant(fp.srv.URL+"/qdrant", timeout),
			},
			DefaultModelProvider: "openai",
			DefaultVectorDB:      "pinecone",
			Sealer:               sealer,
		}
		for _, o := range opts {
			o(cfg)
		}
	})
	f.store = store
	return &integrationFixture{fixture: f, fakes: fp, sealer: sealer, log: logs, path: path, store: store}
}

// integrate posts a third-party key to path, as the body field the route expects, and keeps
// the key and the answer for the leak checks.
func (f *integrationFixture) integrate(path, apiKey, thirdPartyKey string, extra map[string]string) response {
	f.tb.Helper()
	body := map[string]string{"provider_key": thirdPartyKey}
	if strings.HasPrefix(path, "/data_integration/") {
		body = map[string]string{"api_key": thirdPartyKey}
	}
	for k, v := range extra {
		body[k] = v
	}
	f.keys = append(f.keys, thirdPartyKey)
	r := f.do("POST", path, apiKey, body)
	f.bodies = append(f.bodies, r.Body)
	return r
}

// mustIntegrate is integrate for a request that must succeed.
func (f *integrationFixture) mustIntegrate(path, apiKey, thirdPartyKey string, extra map[string]string) response {
	f.tb.Helper()
	r := f.integrate(path, apiKey, thirdPartyKey, extra)
	if r.Status != http.StatusOK {
		f.tb.Fatalf("POST %s = %d %s, want 200", path, r.Status, r.Body)
	}
	return r
}

// openSecret returns the third-party key sealed into the organization's resource id.
func (f *integrationFixture) openSecret(orgID, id string) string {
	f.tb.Helper()
	r, err := f.store.GetResource(context.Background(), orgID, id)
	if err != nil {
		f.tb.Fatal(err)
	}
	plain, err := f.sealer.Open(r.Secret, orgID, id)
	if err != nil {
		f.tb.Fatalf("the secret of %s does not open: %v", id, err)
	}
	return string(plain)
}

// checkNoLeaks fails if any third-party key sent so far appears in a response, the log, or the
// bytes of the data file.
func (f *integrationFixture) checkNoLeaks() {
	f.tb.Helper()
	file, err := os.ReadFile(f.path)
	if err != nil {
		f.tb.Fatal(err)
	}
	logs := f.log.Bytes()
	if len(logs) == 0 {
		f.tb.Fatal("the server logged nothing: the log check would prove nothing")
	}
	for _, key := range f.keys {
		secret := key[strings.Index(key, "-sk-"):] // the random part, whatever the behaviour prefix
		for _, b := range f.bodies {
			if bytes.Contains(b, []byte(secret)) {
				f.tb.Errorf("a response shows the key %s: %s", key, b)
			}
		}
		if bytes.Contains(logs, []byte(secret)) {
			f.tb.Errorf("the log shows the key %s", key)
		}
		if bytes.Contains(file, []byte(secret)) {
			f.tb.Errorf("the data file holds the key %s in clear", key)
		}
	}
}

type indexBody struct {
	Index string `json:"index"`
	ID    string `json:"id"`
}

func TestIntegrateModelProvider(t *testing.T) {
	tests := []struct {
		path, provider string
	}{
		{"/llm_integration/hostedllm", "openai"},
		{"/llm_integration/openai", "openai"},
		{"/llm_integration/anthropic", "anthropic"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := newIntegrationFixture(t)
			orgID, key := f.org("acme")
			m := decode[struct{ Model modelBody }](t, f.mustIntegrate(tt.path, key, secretKey("good"), nil)).Model
			want := modelBody{ID: m.ID, ModelName: tt.provider, IntegrationType: tt.provider, SvcID: m.ID}
			if !uuidRE.MatchString(m.ID) || m != want {
				t.Fatalf("model = %+v, want %+v", m, want)
			}
			if got := f.openSecret(orgID, m.ID); got != f.keys[0] {
				t.Errorf("the stored secret opens to %q, want the key sent", got)
			}

			// Integrating again, with a new key, keeps the model and seals the new key into it.
			f.clock.Advance(time.Second)
			again := decode[struct{ Model modelBody }](t, f.mustIntegrate(tt.path, key, secretKey("good"), nil)).Model
			if again != want {
				t.Errorf("integrating again = %+v, want the same model %+v", again, want)
			}
			if got := f.openSecret(orgID, m.ID); got != f.keys[1] {
				t.Errorf("after integrating again the secret opens to %q, want the new key", got)
			}
			list := decode[struct {
				Models []modelBody `json:"models"`
				Model  *modelBody  `json:"model"`
			}](t, f.must("GET", "/llm_integration/list/", key, nil))
			if len(list.Models) != 1 || list.Models[0] != want || list.Model == nil || *list.Model != want {
				t.Errorf("list = %+v, want the one model", list)
			}
			f.checkNoLeaks()
		})
	}
}

func TestHostedModelIsGrantable(t *testing.T) {
	f := newIntegrationFixture(t)
	_, key := f.org("acme")
	m := decode[struct{ Model modelBody }](t, f.mustIntegrate("/llm_integration/hostedllm", key, secretKey("good"), nil)).Model
	custom := f.model(key, "llama")
	user := f.user(key, "ada@example.com")
	if f.check(key, user, m.SvcID) {
		t.Fatal("access before any grant")
	}
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": m.SvcID})
	if !f.check(key, user, m.SvcID) || f.check(key, user, custom) {
		t.Error("a grant of the hosted model does not allow exactly it")
	}
	f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": m.SvcID})
	if f.check(key, user, m.SvcID) {
		t.Error("access to a removed model")
	}
	// Removed, it is registered anew, under a new id.
	again := decode[struct{ Model modelBody }](t, f.mustIntegrate("/llm_integration/hostedllm", key, secretKey("good"), nil)).Model
	if again.ID == m.ID {
		t.Error("a removed model came back with its old id")
	}
}

func TestIntegrateVectorDB(t *testing.T) {
	tests := []struct {
		path, provider string
		host           func(fp *fakeProviders, index string) string
	}{
		{"/data_integration/vectordb/integrate", "pinecone", func(_ *fakeProviders, index string) string { return index + "-x1.svc.pinecone.io" }},
		{"/data_integration/pinecone/integrate", "pinecone", func(_ *fakeProviders, index string) string { return index + "-x1.svc.pinecone.io" }},
		{"/data_integration/qdrant/integrate", "qdrant", func(fp *fakeProviders, _ string) string { return strings.TrimPrefix(fp.srv.URL, "http://") }},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := newIntegrationFixture(t)
			orgID, key := f.org("acme")
			env := map[string]string{"environment": "us-east-1"}
			first := decode[struct{ Indexes []indexBody }](t, f.mustIntegrate(tt.path, key, secretKey("good"), env)).Indexes
			if len(first) != 2 || first[0].Index != "docs" || first[1].Index != "faq" || !uuidRE.MatchString(first[0].ID) || first[0].ID == first[1].ID {
				t.Fatalf("indexes = %+v, want docs and faq with their own ids", first)
			}
			for _, idx := range first {
				if got := f.openSecret(orgID, idx.ID); got != f.keys[0] {
					t.Errorf("the secret of %s opens to %q, want the key sent", idx.Index, got)
				}
			}

			// Again, with another key and one index more: the known ones keep their ids.
			f.fakes.setIndexes("faq", "docs", "news")
			f.clock.Advance(time.Second)
			second := decode[struct{ Indexes []indexBody }](t, f.mustIntegrate(tt.path, key, secretKey("good"), env)).Indexes
			if len(second) != 3 || second[0] != first[1] || second[1] != first[0] || second[2].Index != "news" ||
				second[2].ID == first[0].ID || second[2].ID == first[1].ID {
				t.Fatalf("integrating again = %+v, want faq and docs with their ids, then news", second)
			}
			for _, idx := range second {
				if got := f.openSecret(orgID, idx.ID); got != f.keys[1] {
					t.Errorf("after integrating again the secret of %s opens to %q, want the new key", idx.Index, got)
				}
			}

			var want []datasetBody
			for _, idx := range []indexBody{first[0], first[1], second[2]} {
				meta := fmt.Sprintf(`{"environment":"us-east-1","host":%q,"index":%q}`, tt.host(f.fakes, idx.Index), idx.Index)
				want = append(want, datasetBody{ID: idx.ID, Source: tt.provider, Metadata: meta, SvcID: idx.ID})
			}
			list := decode[struct{ Indexes []datasetBody }](t, f.must("GET", "/data_integration/list", key, nil)).Indexes
			if diff := cmp.Diff(want, list); diff != "" {
				t.Errorf("datasets (-want +got):\n%s", diff)
			}
			f.checkNoLeaks()
		})
	}
}

type datasetBody struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Metadata string `json:"metadata"`
	SvcID    string `json:"svc_id"`
}

func TestIndexesAreGrantable(t *testing.T) {
	f := newIntegrationFixture(t)
	_, key := f.org("acme")
	indexes := decode[struct{ Indexes []indexBody }](t, f.mustIntegrate("/data_integration/vectordb/integrate", key, secretKey("good"), nil)).Indexes
	docs, faq := indexes[0].ID, indexes[1].ID
	user := f.user(key, "ada@example.com")
	f.must("POST", "/provisions/add_to_user", key, map[string]string{"user_id": user, "svc_id": docs})
	if !f.check(key, user, docs) || f.check(key, user, faq) {
		t.Error("a grant of one index does not allow exactly it")
	}
	list := decode[struct{ Indexes []datasetBody }](t, f.must("GET", "/data_integration/list/?user_id="+user, key, nil)).Indexes
	if len(list) != 1 || list[0].ID != docs {
		t.Errorf("the user's datasets = %+v, want docs alone", list)
	}
	// A grant survives integrating the account again.
	f.mustIntegrate("/data_integration/vectordb/integrate", key, secretKey("good"), nil)
	if !f.check(key, user, docs) {
		t.Error("integrating the account again lost the grant")
	}
}

func TestIntegrationsAreScopedToTheOrganization(t *testing.T) {
	f := newIntegrationFixture(t)
	_, keyA := f.org("a")
	_, keyB := f.org("b")
	a := decode[struct{ Indexes []indexBody }](t, f.mustIntegrate("/data_integration/vectordb/integrate", keyA, secretKey("good"), nil)).Indexes
	b := decode[struct{ Indexes []indexBody }](t, f.mustIntegrate("/data_integration/vectordb/integrate", keyB, secretKey("good"), nil)).Indexes
	ma := decode[struct{ Model modelBody }](t, f.mustIntegrate("/llm_integration/hostedllm", keyA, secretKey("good"), nil)).Model
	mb := decode[struct{ Model modelBody }](t, f.mustIntegrate("/llm_integration/hostedllm", keyB, secretKey("good"), nil)).Model
	if a[0].ID == b[0].ID || ma.ID == mb.ID {
		t.Error("two organizations integrating the same account share a resource")
	}
	if r := f.do("POST", "/data_integration/remove", keyB, map[string]string{"svc_id": a[0].ID}); r.Status != http.StatusNotFound {
		t.Errorf("removing another organization's index = %d, want 404", r.Status)
	}
}

func TestIntegrationFailures(t *testing.T) {
	paths := []string{
		"/llm_integration/hostedllm", "/llm_integration/anthropic",
		"/data_integration/vectordb/integrate", "/data_integration/qdrant/integrate",
	}
	failures := []struct {
		behaviour string
		status    int
		detail    string // with %s for the provider's name
	}{
		{"401", http.StatusBadRequest, "The provider rejected the key: %s did not accept it."},
		{"403", http.StatusBadRequest, "The provider rejected the key: %s did not accept it."},
		{"500", http.StatusBadGateway, "The provider %s could not be reached or did not answer as expected; try again later."},
		{"slow", http.StatusBadGateway, "The provider %s could not be reached or did not answer as expected; try again later."},
		{"drop", http.StatusBadGateway, "The provider %s could not be reached or did not answer as expected; try again later."},
		{"notjson", http.StatusBadGateway, "The provider %s could not be reached or did not answer as expected; try again later."},
		{"shape", http.StatusBadGateway, "The provider %s could not be reached or did not answer as expected; try again later."},
	}
	f := newIntegrationFixture(t)
	orgID, key := f.org("acme")
	for _, path := range paths {
		name := map[string]string{
			"/llm_integration/hostedllm": "openai", "/llm_integration/anthropic": "anthropic",
			"/data_integration/vectordb/integrate": "pinecone", "/data_integration/qdrant/integrate": "qdrant",
		}[path]
		for _, fail := range failures {
			t.Run(path+"/"+fail.behaviour, func(t *testing.T) {
				calls := f.fakes.callCount()
				r := f.integrate(path, key, secretKey(fail.behaviour), map[string]string{"environment": "prod"})
				if r.Status != fail.status {
					t.Fatalf("status = %d %s, want %d", r.Status, r.Body, fail.status)
				}
				jsonEqual(t, r.Body, fmt.Sprintf(`{"detail":%q}`, fmt.Sprintf(fail.detail, name)))
				if f.fakes.callCount() != calls+1 {
					t.Errorf("the provider was asked %d times, want once", f.fakes.callCount()-calls)
				}
				// Nothing is stored on any failure.
				rs, err := f.store.ListResources(context.Background(), orgID, "")
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) != 0 {
					t.Errorf("stored after a failure: %+v", rs)
				}
			})
		}
	}
	// A 502 is logged with its cause, which names the provider and never the key.
	if !bytes.Contains(f.log.Bytes(), []byte("answered 500")) {
		t.Errorf("the log does not say why a 502 happened:\n%s", f.log.Bytes())
	}
	f.checkNoLeaks()
}

func TestIntegrateEmptyAccount(t *testing.T) {
	f := newIntegrationFixture(t)
	orgID, key := f.org("acme")
	for _, path := range []string{"/data_integration/vectordb/integrate", "/data_integration/qdrant/integrate"} {
		r := f.integrate(path, key, secretKey("empty"), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s = %d %s", path, r.Status, r.Body)
		}
		jsonEqual(t, r.Body, `{"indexes":[]}`)
	}
	// A key accepted with no models listed is still a good key.
	if r := f.integrate("/llm_integration/openai", key, secretKey("empty"), nil); r.Status != http.StatusOK {
		t.Errorf("openai with an empty model list = %d %s", r.Status, r.Body)
	}
	rs, _ := f.store.ListResources(context.Background(), orgID, storage.KindDataset)
	if len(rs) != 0 {
		t.Errorf("datasets stored for an empty account: %+v", rs)
	}
}

func TestUnknownProvider(t *testing.T) {
	f := newIntegrationFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		path, detail string
	}{
		{"/llm_integration/cohere", "Unknown model provider; the known ones are openai, anthropic, hostedllm (an alias of openai)."},
		{"/llm_integration/OpenAI", "Unknown model provider; the known ones are openai, anthropic, hostedllm (an alias of openai)."},
		{"/llm_integration/pinecone", "Unknown model provider; the known ones are openai, anthropic, hostedllm (an alias of openai)."},
		{"/data_integration/weaviate/integrate", "Unknown vector database; the known ones are pinecone, qdrant, vectordb (an alias of pinecone)."},
		{"/data_integration/custom/integrate", "Unknown vector database; the known ones are pinecone, qdrant, vectordb (an alias of pinecone)."},
		{"/data_integration/openai/integrate", "Unknown vector database; the known ones are pinecone, qdrant, vectordb (an alias of pinecone)."},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			calls := f.fakes.callCount()
			r := f.integrate(tt.path, key, secretKey("good"), nil)
			if r.Status != http.StatusNotFound {
				t.Fatalf("status = %d %s, want 404", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, fmt.Sprintf(`{"detail":%q}`, tt.detail))
			if f.fakes.callCount() != calls {
				t.Error("a provider was called for an unknown provider")
			}
		})
	}
}

func TestNoProvidersConfigured(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	r := f.do("POST", "/llm_integration/hostedllm", key, map[string]string{"provider_key": "k"})
	if r.Status != http.StatusNotFound {
		t.Fatalf("status = %d %s", r.Status, r.Body)
	}
	jsonEqual(t, r.Body, `{"detail":"Unknown model provider: none are configured."}`)
}

func TestIntegrationRouting(t *testing.T) {
	f := newIntegrationFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		allow                     string
	}{
		{"no key", "POST", "/llm_integration/openai", "", "{", http.StatusUnauthorized, ""},
		{"no key, vector database", "POST", "/data_integration/pinecone/integrate", "", "{", http.StatusUnauthorized, ""},
		{"no key, unknown provider", "POST", "/llm_integration/nope", "", "{", http.StatusUnauthorized, ""},
		{"GET a provider", "GET", "/llm_integration/openai", key, nil, http.StatusMethodNotAllowed, "POST"},
		{"GET an integrate path", "GET", "/data_integration/pinecone/integrate", key, nil, http.StatusMethodNotAllowed, "POST"},
		{"POST the model list", "POST", "/llm_integration/list", key, nil, http.StatusMethodNotAllowed, "GET"},
		{"POST the model list with a slash", "POST", "/llm_integration/list/", key, nil, http.StatusMethodNotAllowed, "GET"},
		{"POST the dataset list", "POST", "/data_integration/list", key, nil, http.StatusMethodNotAllowed, "GET"},
		{"no integrate suffix", "POST", "/data_integration/pinecone", key, "{}", http.StatusNotFound, ""},
		{"custom model still routed", "POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "m"}, http.StatusOK, ""},
		{"custom dataset still routed", "POST", "/data_integration/custom", key, map[string]string{"dataset_name": "d"}, http.StatusOK, ""},
		{"model list still routed", "GET", "/llm_integration/list", key, nil, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.method, tt.path, tt.token, tt.body)
			if r.Status != tt.status || r.Header.Get("Allow") != tt.allow {
				t.Errorf("%s %s = %d (Allow %q), want %d (Allow %q): %s", tt.method, tt.path, r.Status, r.Header.Get("Allow"), tt.status, tt.allow, r.Body)
			}
		})
	}
}

func TestIntegrationValidation(t *testing.T) {
	f := newIntegrationFixture(t)
	_, key := f.org("acme")
	tests := []struct {
		name, path string
		body       any
		want       string
	}{
		{"model: no key", "/llm_integration/hostedllm", map[string]any{}, `{"detail":[{"loc":["body","provider_key"],"msg":"Field required","type":"missing"}]}`},
		{"model: empty key", "/llm_integration/hostedllm", map[string]any{"provider_key": ""}, `{"detail":[{"loc":["body","provider_key"],"msg":"String should have at least 1 character","type":"string_too_short"}]}`},
		{"model: key not a string", "/llm_integration/openai", map[string]any{"provider_key": 42}, `{"detail":[{"loc":["body","provider_key"],"msg":"Input should be a valid string","type":"string_type"}]}`},
		{"model: key too long", "/llm_integration/openai", map[string]any{"provider_key": strings.Repeat("k", 4097)}, `{"detail":[{"loc":["body","provider_key"],"msg":"String should have at most 4096 characters","type":"string_too_long"}]}`},
		{"vector database: nothing right", "/data_integration/vectordb/integrate", map[string]any{"environment": 1}, `{"detail":[
			{"loc":["body","api_key"],"msg":"Field required","type":"missing"},
			{"loc":["body","environment"],"msg":"Input should be a valid string","type":"string_type"}]}`},
		{"vector database: environment too long", "/data_integration/qdrant/integrate", map[string]any{"api_key": "k", "environment": strings.Repeat("e", 257)}, `{"detail":[{"loc":["body","environment"],"msg":"String should have at most 256 characters","type":"string_too_long"}]}`},
		{"not JSON", "/data_integration/qdrant/integrate", "{", `{"detail":[{"loc":["body",1],"msg":"JSON decode error","type":"json_invalid"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := f.fakes.callCount()
			r := f.do("POST", tt.path, key, tt.body)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("status = %d %s, want 422", r.Status, r.Body)
			}
			jsonEqual(t, r.Body, tt.want)
			if f.fakes.callCount() != calls {
				t.Error("an invalid request reached the provider")
			}
		})
	}
}

// TestConcurrentIntegrations integrates one account from many requests at once: every request
// succeeds with the same ids, and each index is registered once.
func TestConcurrentIntegrations(t *testing.T) {
	f := newIntegrationFixture(t)
	orgID, key := f.org("acme")
	const n = 8
	results := make([][]indexBody, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := f.do("POST", "/data_integration/vectordb/integrate", key, map[string]string{"api_key": secretKey("good")})
			if r.Status != http.StatusOK {
				t.Errorf("request %d = %d %s", i, r.Status, r.Body)
				return
			}
			var body struct{ Indexes []indexBody }
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Error(err)
			}
			results[i] = body.Indexes
		})
	}
	wg.Wait()
	for i := range results {
		if diff := cmp.Diff(results[0], results[i]); diff != "" {
			t.Errorf("request %d got other ids (-first +this):\n%s", i, diff)
		}
	}
	rs, err := f.store.ListResources(context.Background(), orgID, storage.KindDataset)
	if err != nil || len(rs) != 2 {
		t.Errorf("datasets = %d (%v), want 2", len(rs), err)
	}
}

// TestIntegrationOutlivesRequestTimeout checks that a provider may take longer than the request
// timeout, which budgets store work: the integration still succeeds, within its own timeout.
func TestIntegrationOutlivesRequestTimeout(t *testing.T) {
	// The request timeout leaves room for a loaded machine to reach the key lookup, the lag
	// outlasts it, and the provider timeout outlasts the lag.
	const requestTimeout = 250 * time.Millisecond
	f := newIntegrationFixtureTimeout(t, 2*time.Second, func(cfg *fixtureConfig) { cfg.RequestTimeout = requestTimeout })
	f.fakes.mu.Lock()
	f.fakes.lag = 2 * requestTimeout
	f.fakes.mu.Unlock()
	// The organization is made through the store: its commits may take longer than the request
	// timeout on a loaded machine, and only the integrations are under test.
	key := "boot-key-for-timeout-test"
	if _, err := api.Bootstrap(context.Background(), f.store, key, time.Now()); err != nil {
		t.Fatal(err)
	}
	org, err := f.store.OrgByName(context.Background(), api.DefaultOrg)
	if err != nil {
		t.Fatal(err)
	}
	orgID := org.ID
	for _, path := range []string{"/llm_integration/hostedllm", "/data_integration/vectordb/integrate"} {
		f.mustIntegrate(path, key, secretKey("lag"), nil)
	}
	rs, err := f.store.ListResources(context.Background(), orgID, "")
	if err != nil || len(rs) != 3 {
		t.Errorf("stored %d resources (%v), want the model and two indexes", len(rs), err)
	}
	// The provider's own timeout still holds.
	if r := f.integrate("/llm_integration/hostedllm", key, secretKey("slow"), nil); r.Status != http.StatusBadGateway {
		t.Errorf("a provider that never answers = %d %s, want 502", r.Status, r.Body)
	}
}

// TestIntegrationStopsWhenClientLeaves checks that the provider call is abandoned when the
// client goes away, even though integrations are not bound by the request timeout.
func TestIntegrationStopsWhenClientLeaves(t *testing.T) {
	// Only the client's leaving can end the request before the provider timeout.
	const providerTimeout = time.Minute
	f := newIntegrationFixtureTimeout(t, providerTimeout, func(cfg *fixtureConfig) { cfg.RequestTimeout = time.Minute })
	_, key := f.org("acme")
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "POST", "/llm_integration/hostedllm", strings.NewReader(`{"provider_key":"slow-sk-1"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.srv.ServeHTTP(httptest.NewRecorder(), req)
	}()
	for f.fakes.callCount() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(providerTimeout / 2):
		t.Fatalf("the request went on for %s after the client left", providerTimeout/2)
	}
}
