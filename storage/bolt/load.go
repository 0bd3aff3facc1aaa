package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// DefaultLoadBatch is how many records a Loader writes in one transaction when no other size is
// given. One commit per record, as the normal methods do, would make seeding millions of grants
// take hours; one transaction for everything would hold every dirty page in memory at once.
const DefaultLoadBatch = 50_000

// loadFillPercent is how full the Loader packs the pages of the big buckets. bbolt splits pages
// half full by default, which suits random inserts; a bulk load arrives mostly in key order, so
// half-full pages would stay half full, and a large store would take far more disk than it
// needs. Pages split as usual when the normal methods write to them later.
const loadFillPercent = 0.9

// Loader writes authentication integrations, resources, users and grants straight into the store,
// many records to a transaction. It exists to seed large data sets (the benchmark harness's
// million users) in minutes; the service itself never uses it.
//
// The records are encoded exactly as the normal methods encode them, indexes included, so that
// everything the store answers afterwards is as if each record had been written one at a time.
// What the Loader skips is the checking: it does not look for taken ids or names, nor for the
// user and resource of a grant. The caller promises that the records are new and consistent —
// which is why it is meant for an organization that the Loader alone is filling, with nothing
// else writing to it until Flush returns.
//
// A Loader is not safe for concurrent use.
type Loader struct {
	s            *Store
	batch        int
	integrations []storage.AuthIntegration
	resources    []storage.Resource
	users        []storage.User
	grants       []storage.Grant
}

var _ storage.Loader = (*Loader)(nil)

// NewLoader returns a Loader that commits every batch records; batch ≤ 0 means
// DefaultLoadBatch.
func (s *Store) NewLoader(batch int) *Loader {
	if batch <= 0 {
		batch = DefaultLoadBatch
	}
	return &Loader{s: s, batch: batch}
}

// AddIntegration queues an authentication integration, committing a batch if one is full.
func (l *Loader) AddIntegration(ctx context.Context, a storage.AuthIntegration) error {
	l.integrations = append(l.integrations, a)
	return l.flushIfFull(ctx)
}

// AddResource queues a resource, committing a batch if one is full.
func (l *Loader) AddResource(ctx context.Context, r storage.Resource) error {
	l.resources = append(l.resources, r)
	return l.flushIfFull(ctx)
}

// AddUser queues a user. Its IntegrationID must name an integration added before it or already
// stored; the user is indexed by its email within that integration, as ImportUsers would, and
// by its ExternalID when it has one, as CreateUser would.
func (l *Loader) AddUser(ctx context.Context, u storage.User) error {
	l.users = append(l.users, u)
	return l.flushIfFull(ctx)
}

// AddGrant queues a grant. Its user and resource must have been added before it or be stored.
func (l *Loader) AddGrant(ctx context.Context, g storage.Grant) error {
	l.grants = append(l.grants, g)
	return l.flushIfFull(ctx)
}

func (l *Loader) flushIfFull(ctx context.Context) error {
	if len(l.integrations)+len(l.resources)+len(l.users)+len(l.grants) < l.batch {
		return nil
	}
	return l.Flush(ctx)
}

// Flush commits every queued record in one transaction. Within it, integrations are written
// first, then resources, users and grants, so a batch may hold a grant together with its user.
func (l *Loader) Flush(ctx context.Context) error {
	n := len(l.integrations) + len(l.resources) + len(l.users) + len(l.grants)
	if n == 0 {
		return nil
	}
	err := l.s.update(ctx, func(tx *bbolt.Tx) error {
		if err := loadIntegrations(tx, l.integrations); err != nil {
			return err
		}
		if err := loadResources(tx, l.resources); err != nil {
			return err
		}
		if err := loadUsers(tx, l.users); err != nil {
			return err
		}
		return loadGrants(tx, l.grants)
	})
	if err != nil {
		return fmt.Errorf("load %d records: %w", n, err)
	}
	l.integrations, l.resources, l.users, l.grants = l.integrations[:0], l.resources[:0], l.users[:0], l.grants[:0]
	return nil
}

func loadIntegrations(tx *bbolt.Tx, as []storage.AuthIntegration) error {
	integrations, names := tx.Bucket(bucketIntegrations), tx.Bucket(bucketIntegrationNames)
	for _, a := range as {
		if err := names.Put(key(a.OrgID, a.Name), []byte(a.ID)); err != nil {
			return err
		}
		err := put(integrations, key(a.OrgID, a.ID), integrationRecord{
			OrgID: a.OrgID, ID: a.ID, Name: a.Name, Metadata: a.Metadata, Type: a.Type, CreatedAt: millis(a.CreatedAt),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func loadResources(tx *bbolt.Tx, rs []storage.Resource) error {
	resources, names := tx.Bucket(bucketResources), tx.Bucket(bucketResourceNames)
	for _, r := range rs {
		rec := newResourceRecord(r)
		if err := names.Put(rec.nameKey(), []byte(r.ID)); err != nil {
			return err
		}
		if err := put(resources, key(r.OrgID, r.ID), rec); err != nil {
			return err
		}
	}
	return nil
}

func loadUsers(tx *bbolt.Tx, us []storage.User) error {
	users, emails, externalIDs := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails), tx.Bucket(bucketUserExternalIDs)
	users.FillPercent, emails.FillPercent = loadFillPercent, loadFillPercent
	for _, u := range us {
		if err := emails.Put(emailKey(u.OrgID, u.IntegrationID, u.Email), []byte(u.ID)); err != nil {
			return err
		}
		if u.ExternalID != "" {
			if err := externalIDs.Put(externalIDKey(u.OrgID, u.IntegrationID, u.ExternalID, u.ID), []byte(u.ID)); err != nil {
				return err
			}
		}
		if err := put(users, key(u.OrgID, u.ID), newUserRecord(u)); err != nil {
			return err
		}
	}
	return nil
}

func loadGrants(tx *bbolt.Tx, gs []storage.Grant) error {
	grants, byResource := tx.Bucket(bucketGrants), tx.Bucket(bucketGrantsByResource)
	grants.FillPercent, byResource.FillPercent = loadFillPercent, loadFillPercent
	for _, g := range gs {
		if err := byResource.Put(key(g.OrgID, g.ResourceID, g.UserID), []byte(g.UserID)); err != nil {
			return err
		}
		err := put(grants, key(g.OrgID, g.UserID, g.ResourceID), grantValue(millis(g.CreatedAt), expiryMillis(g.ExpiresAt)))
		if err != nil {
			return err
		}
		ref := expiryRef{Kind: expiryUser, OrgID: g.OrgID, Holder: g.UserID, ResourceID: g.ResourceID, ExpiresAt: expiryMillis(g.ExpiresAt)}
		if err := indexExpiry(tx, ref); err != nil {
			return err
		}
	}
	return nil
}
