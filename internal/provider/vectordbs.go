package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Pinecone lists the indexes of a Pinecone project: GET {base}/indexes with "Api-Key: <key>",
// answered by {"indexes":[{"name":...,"host":...},...]}.
type Pinecone struct{ c client }

// NewPinecone returns a client of the Pinecone control plane at baseURL
// (https://api.pinecone.io).
func NewPinecone(baseURL string, opts ...Option) *Pinecone {
	return &Pinecone{newClient(NamePinecone, baseURL, func(h http.Header, key string) {
		h.Set("Api-Key", key)
	}, opts)}
}

// Name returns "pinecone".
func (p *Pinecone) Name() string { return NamePinecone }

// ListIndexes returns the project's indexes in the order Pinecone lists them. A refused key is
// an error wrapping ErrRejected; anything else that goes wrong, one wrapping ErrUnavailable.
func (p *Pinecone) ListIndexes(ctx context.Context, key string) ([]Index, error) {
	var answer struct {
		Indexes *[]struct {
			Name string `json:"name"`
			Host string `json:"host"`
		} `json:"indexes"`
	}
	if err := p.c.get(ctx, "/indexes", key, &answer); err != nil {
		return nil, err
	}
	if err := required(p.c.name, "indexes", answer.Indexes != nil); err != nil {
		return nil, err
	}
	out := make([]Index, 0, len(*answer.Indexes))
	for i, idx := range *answer.Indexes {
		if idx.Name == "" {
			return nil, fmt.Errorf("%s: %w: index %d has no name", p.c.name, ErrUnavailable, i)
		}
		out = append(out, Index{Name: idx.Name, Host: idx.Host})
	}
	return out, nil
}

// Qdrant lists the collections of a Qdrant deployment: GET {base}/collections with
// "api-key: <key>", answered by {"result":{"collections":[{"name":...},...]},...}.
type Qdrant struct {
	c    client
	host string
}

// NewQdrant returns a client of the Qdrant deployment at baseURL (http://localhost:6333, or a
// Qdrant Cloud cluster's URL).
func NewQdrant(baseURL string, opts ...Option) *Qdrant {
	q := &Qdrant{c: newClient(NameQdrant, baseURL, func(h http.Header, key string) {
		h.Set("api-key", key)
	}, opts)}
	if u, err := url.Parse(baseURL); err == nil {
		q.host = u.Host
	}
	return q
}

// Name returns "qdrant".
func (p *Qdrant) Name() string { return NameQdrant }

// ListIndexes returns the deployment's collections in the order Qdrant lists them, each with
// the deployment's host (Qdrant serves every collection from it). A refused key is an error
// wrapping ErrRejected; anything else that goes wrong, one wrapping ErrUnavailable.
func (p *Qdrant) ListIndexes(ctx context.Context, key string) ([]Index, error) {
	var answer struct {
		Result *struct {
			Collections *[]struct {
				Name string `json:"name"`
			} `json:"collections"`
		} `json:"result"`
	}
	if err := p.c.get(ctx, "/collections", key, &answer); err != nil {
		return nil, err
	}
	if err := required(p.c.name, "result.collections", answer.Result != nil && answer.Result.Collections != nil); err != nil {
		return nil, err
	}
	cols := *answer.Result.Collections
	out := make([]Index, 0, len(cols))
	for i, col := range cols {
		if col.Name == "" {
			return nil, fmt.Errorf("%s: %w: collection %d has no name", p.c.name, ErrUnavailable, i)
		}
		out = append(out, Index{Name: col.Name, Host: p.host})
	}
	return out, nil
}
