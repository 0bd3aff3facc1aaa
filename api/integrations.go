package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/provider"
	"github.com/grantry/grantry/internal/uid"
	"github.com/grantry/grantry/storage"
)

// ModelProvider checks keys of a hosted model provider; *provider.OpenAI and
// *provider.Anthropic are ones. CheckKey's errors wrap provider.ErrRejected or
// provider.ErrUnavailable.
type ModelProvider interface {
	Name() string
	CheckKey(ctx context.Context, key string) error
}

// VectorDB lists the indexes of a vector database account; *provider.Pinecone and
// *provider.Qdrant are ones. ListIndexes's errors wrap provider.ErrRejected or
// provider.ErrUnavailable.
type VectorDB interface {
	Name() string
	ListIndexes(ctx context.Context, key string) ([]provider.Index, error)
}

// Sealer encrypts a third-party secret before it is stored, bound to what it belongs to;
// *seal.Sealer is one.
type Sealer interface {
	Seal(plaintext []byte, bind ...string) ([]byte, error)
}

// Integrations are the third parties whose accounts an organization may integrate, and the
// sealer of their keys. Without any, every provider route answers 404.
type Integrations struct {
	ModelProviders []ModelProvider
	VectorDBs      []VectorDB
	// DefaultModelProvider is the Name of the model provider that the path /llm_integration/hostedllm
	// stands for; DefaultVectorDB the one /data_integration/vectordb/integrate stands for.
	DefaultModelProvider string
	DefaultVectorDB      string
	Sealer               Sealer
}

// The spec's provider-neutral path segments, aliases of the defaults.
const (
	aliasModelProvider = "hostedllm"
	aliasVectorDB      = "vectordb"
)

// integrations is Integrations indexed by the names the routes accept, aliases included.
type integrations struct {
	models          map[string]ModelProvider
	vectorDBs       map[string]VectorDB
	unknownModel    *Error
	unknownVectorDB *Error
	sealer          Sealer
}

func newIntegrations(cfg Integrations) integrations {
	in := integrations{models: map[string]ModelProvider{}, vectorDBs: map[string]VectorDB{}, sealer: cfg.Sealer}
	var modelNames, dbNames []string
	for _, p := range cfg.ModelProviders {
		in.models[p.Name()] = p
		modelNames = append(modelNames, p.Name())
	}
	for _, p := range cfg.VectorDBs {
		in.vectorDBs[p.Name()] = p
		dbNames = append(dbNames, p.Name())
	}
	if p, ok := in.models[cfg.DefaultModelProvider]; ok {
		in.models[aliasModelProvider] = p
		modelNames = append(modelNames, aliasModelProvider+" (an alias of "+p.Name()+")")
	}
	if p, ok := in.vectorDBs[cfg.DefaultVectorDB]; ok {
		in.vectorDBs[aliasVectorDB] = p
		dbNames = append(dbNames, aliasVectorDB+" (an alias of "+p.Name()+")")
	}
	in.unknownModel = unknownProvider("model provider", modelNames)
	in.unknownVectorDB = unknownProvider("vector database", dbNames)
	return in
}

// unknownProvider is the 404 for a provider path segment that names none of known. It does not
// repeat the segment: a key pasted into the wrong place must not come back.
func unknownProvider(what string, known []string) *Error {
	if len(known) == 0 {
		return &Error{Status: http.StatusNotFound, Detail: fmt.Sprintf("Unknown %s: none are configured.", what)}
	}
	return &Error{Status: http.StatusNotFound, Detail: fmt.Sprintf("Unknown %s; the known ones are %s.", what, strings.Join(known, ", "))}
}

// providerError turns a provider's failure into the client's answer: 400 if it refused the
// key, 502 if it could not say. Neither repeats anything the provider sent.
func providerError(name string, err error) error {
	if errors.Is(err, provider.ErrRejected) {
		return &Error{Status: http.StatusBadRequest, Detail: "The provider rejected the key: " + name + " did not accept it.", Err: err}
	}
	return &Error{Status: http.StatusBadGateway, Detail: "The provider " + name + " could not be reached or did not answer as expected; try again later.", Err: err}
}

// A third-party key is at most 4096 characters: real ones are under 200, and the bound only keeps
// absurd values from reaching a provider's headers.
type modelIntegrationRequest struct {
	ProviderKey string `json:"provider_key" validate:"required,max=4096"`
}

// integrateModel registers a hosted model provider account: the key is checked with the
// provider first, then sealed into the organization's one model of that provider, created on
// the first integration and given the new key on every later one.
func (s *Server) integrateModel(c *gin.Context) {
	p, ok := s.integrations.models[c.Param("provider")]
	if !ok {
		s.writeError(c, s.integrations.unknownModel)
		return
	}
	var req modelIntegrationRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, cancel := s.integrationContext(c.Request.Context())
	defer cancel()
	if err := p.CheckKey(ctx, req.ProviderKey); err != nil {
		s.writeError(c, providerError(p.Name(), err))
		return
	}
	r, err := s.saveIntegration(ctx, orgID(c), storage.Resource{Kind: storage.KindModel, Source: p.Name(), Name: p.Name()}, req.ProviderKey)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"model": modelOf(r)})
}

type vectorDBIntegrationRequest struct {
	APIKey      string `json:"api_key" validate:"required,max=4096"`
	Environment string `json:"environment" validate:"max=256"`
}

type indexJSON struct {
	Index string `json:"index"`
	ID    string `json:"id"`
}

// integrateVectorDB registers a vector database account: its indexes are listed with the key
// first, then each becomes (or, if already registered, stays) a dataset holding the sealed key.
func (s *Server) integrateVectorDB(c *gin.Context) {
	p, ok := s.integrations.vectorDBs[c.Param("provider")]
	if !ok {
		s.writeError(c, s.integrations.unknownVectorDB)
		return
	}
	var req vectorDBIntegrationRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, cancel := s.integrationContext(c.Request.Context())
	defer cancel()
	indexes, err := p.ListIndexes(ctx, req.APIKey)
	if err != nil {
		s.writeError(c, providerError(p.Name(), err))
		return
	}
	out := make([]indexJSON, 0, len(indexes))
	seen := make(map[string]bool, len(indexes))
	for _, idx := range indexes {
		if seen[idx.Name] {
			continue
		}
		seen[idx.Name] = true
		r, err := s.saveIntegration(ctx, orgID(c), storage.Resource{
			Kind: storage.KindDataset, Source: p.Name(), Name: idx.Name, Metadata: indexMetadata(idx, req.Environment),
		}, req.APIKey)
		if err != nil {
			s.writeError(c, err)
			return
		}
		out = append(out, indexJSON{Index: r.Name, ID: r.ID})
	}
	c.JSON(http.StatusOK, gin.H{"indexes": out})
}

// indexMetadata is what a dataset of a vector database shows of its index: nothing secret.
func indexMetadata(idx provider.Index, environment string) map[string]string {
	m := map[string]string{"index": idx.Name}
	if environment != "" {
		m["environment"] = environment
	}
	if idx.Host != "" {
		m["host"] = idx.Host
	}
	return m
}

// saveIntegration stores r of the organization with key sealed into it. If the organization
// already has a resource of r's kind, source and name, that one keeps its id and gets the new
// key and metadata; otherwise r is created. The sealed key is bound to the resource's id, so it
// is sealed once the id is known.
func (s *Server) saveIntegration(ctx context.Context, orgID string, r storage.Resource, key string) (storage.Resource, error) {
	// A second round is needed only when another request created or removed the same resource
	// between the lookup and the write; a third would mean that happened twice.
	for range 3 {
		existing, err := s.store.ResourceByName(ctx, orgID, r.Kind, r.Source, r.Name)
		switch {
		case err == nil:
			sealed, err := s.seal(key, orgID, existing.ID)
			if err != nil {
				return storage.Resource{}, err
			}
			err = s.store.ReplaceSecret(ctx, orgID, existing.ID, sealed, r.Metadata)
			if errors.Is(err, storage.ErrNotFound) {
				continue // removed meanwhile: register it anew
			}
			if err != nil {
				return storage.Resource{}, fmt.Errorf("re-integrate %s %q of %s: %w", r.Kind, r.Name, r.Source, err)
			}
			existing.Metadata, existing.Secret = r.Metadata, sealed
			return existing, nil
		case !errors.Is(err, storage.ErrNotFound):
			return storage.Resource{}, fmt.Errorf("integrate %s %q of %s: %w", r.Kind, r.Name, r.Source, err)
		}
		created := r
		created.OrgID, created.ID, created.CreatedAt = orgID, uid.New(), s.clock()
		if created.Secret, err = s.seal(key, orgID, created.ID); err != nil {
			return storage.Resource{}, err
		}
		err = s.store.CreateResource(ctx, created)
		if errors.Is(err, storage.ErrConflict) {
			continue // registered meanwhile by another request: give that one the key
		}
		if err != nil {
			return storage.Resource{}, fmt.Errorf("integrate %s %q of %s: %w", r.Kind, r.Name, r.Source, err)
		}
		return created, nil
	}
	return storage.Resource{}, fmt.Errorf("integrate %s %q of %s: it kept changing under concurrent requests: %w", r.Kind, r.Name, r.Source, storage.ErrConflict)
}

// integrationContext is the context of an integrate request's work once its body is read. The
// request timeout budgets store work, while a provider may take up to its own timeout (10 s),
// so these requests get both: ctx without its deadline, but still cancelled if the client goes
// away, and with a deadline of the provider timeout plus the request timeout.
func (s *Server) integrationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.requestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	detached, cancel := context.WithTimeout(context.WithoutCancel(ctx), provider.DefaultTimeout+s.requestTimeout)
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel() // the client went away; the request timeout alone is not a reason
		}
	})
	return detached, func() { stop(); cancel() }
}

// seal encrypts a third-party key for the resource id of the organization.
func (s *Server) seal(key, orgID, id string) ([]byte, error) {
	if s.integrations.sealer == nil {
		return nil, errors.New("seal provider key: no sealer configured")
	}
	sealed, err := s.integrations.sealer.Seal([]byte(key), orgID, id)
	if err != nil {
		return nil, fmt.Errorf("seal provider key: %w", err)
	}
	return sealed, nil
}

// wrongMethod answers 405 for a path that is served only with allow. It stands where a path
// parameter would otherwise take a sibling's static name (POST /llm_integration/list is not a
// provider named "list").
func (s *Server) wrongMethod(allow string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Allow", allow)
		s.writeError(c, errMethodNotAllowed)
	}
}
