package mongo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/grantry/grantry/storage"
)

// DefaultLoadBatch is how many records a Loader queues before it writes them when no other
// size is given: enough that a round trip carries many documents, few enough that the queue
// stays a few MiB.
const DefaultLoadBatch = 10_000

// Loader writes authentication integrations, resources, users and grants with InsertMany, many
// documents to a command, to seed large data sets; the service itself never uses it.
//
// The documents are the very ones the store's own methods write (newUserDoc, newGrantDoc, …),
// derived fields such as the users' email key included, so everything the store answers
// afterwards is as if each record had been written one at a time. It does none of the checks
// those methods make (that an integration, user or resource exists); the unique indexes still
// refuse a taken id or name, failing Flush with storage.ErrConflict. Flush then tells the other
// processes sharing the database that the organizations it wrote changed as a whole (Touch), as
// the API does after each write, so that none keeps answering from what it cached before.
//
// A Flush that fails may have written part of what was queued. A Loader is not safe for
// concurrent use.
type Loader struct {
	s     *Store
	batch int
	queue []loadQueue
	n     int             // documents queued
	orgs  map[string]bool // organizations written to since the last Touch
}

// loadQueue is what a Loader queued for one collection.
type loadQueue struct {
	col  *mongo.Collection
	docs []any
}

var _ storage.Loader = (*Loader)(nil)

// The Loader's queues, in the order Flush writes them.
const (
	queueIntegrations = iota
	queueResources
	queueUsers
	queueGrants
)

// NewLoader returns a Loader that writes every batch records; batch ≤ 0 means
// DefaultLoadBatch.
func (s *Store) NewLoader(batch int) *Loader {
	if batch <= 0 {
		batch = DefaultLoadBatch
	}
	return &Loader{
		s:     s,
		batch: batch,
		queue: []loadQueue{
			queueIntegrations: {col: s.authIntegrations},
			queueResources:    {col: s.resources},
			queueUsers:        {col: s.users},
			queueGrants:       {col: s.grants},
		},
		orgs: map[string]bool{},
	}
}

// AddIntegration queues an authentication integration, writing a batch if one is full.
func (l *Loader) AddIntegration(ctx context.Context, a storage.AuthIntegration) error {
	return l.add(ctx, queueIntegrations, a.OrgID, newAuthIntegrationDoc(a))
}

// AddResource queues a resource, writing a batch if one is full.
func (l *Loader) AddResource(ctx context.Context, r storage.Resource) error {
	return l.add(ctx, queueResources, r.OrgID, newResourceDoc(r))
}

// AddUser queues a user as CreateUser stores it, IntegrationName included as given.
func (l *Loader) AddUser(ctx context.Context, u storage.User) error {
	return l.add(ctx, queueUsers, u.OrgID, newUserDoc(u))
}

// AddGrant queues a grant, writing a batch if one is full.
func (l *Loader) AddGrant(ctx context.Context, g storage.Grant) error {
	return l.add(ctx, queueGrants, g.OrgID, newGrantDoc(g))
}

func (l *Loader) add(ctx context.Context, q int, orgID string, doc any) error {
	l.queue[q].docs = append(l.queue[q].docs, doc)
	l.orgs[orgID] = true
	if l.n++; l.n < l.batch {
		return nil
	}
	return l.Flush(ctx)
}

// Flush writes every queued document, a collection at a time (integrations, resources, users,
// then grants), and touches the organizations written to, even when a write failed part way.
func (l *Loader) Flush(ctx context.Context) error {
	err := l.insert(ctx)
	for _, org := range slices.Sorted(maps.Keys(l.orgs)) {
		if terr := l.s.Touch(ctx, storage.Change{OrgID: org, Org: true}); terr != nil {
			return errors.Join(err, fmt.Errorf("load: %w", terr))
		}
		delete(l.orgs, org)
	}
	return err
}

func (l *Loader) insert(ctx context.Context) error {
	for i := range l.queue {
		q := &l.queue[i]
		if len(q.docs) == 0 {
			continue
		}
		if _, err := q.col.InsertMany(ctx, q.docs); err != nil {
			return fmt.Errorf("load %d documents into %s: %w", len(q.docs), q.col.Name(), mapErr(err))
		}
		l.n -= len(q.docs)
		clear(q.docs) // let the documents go before the next batch reuses the array
		q.docs = q.docs[:0]
	}
	return nil
}
