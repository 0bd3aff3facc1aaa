// Package bolt is the embedded store: one bbolt file that needs no server, used when no MongoDB
// is configured.
//
// Records live in top-level buckets under composite keys that begin with their organization's
// id, so that an organization's records are one key range and a key of one organization can
// never name a record of another. Every uniqueness rule has its own index bucket, checked and
// written in the same transaction as the record, so a rule can never be broken by two writers
// racing. Values are JSON of private structs in this package; the record types of package
// storage stay plain.
package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt/internal/journal"
)

// The buckets. Keys are built by key; the comment says which parts, and what the value is.
var (
	bucketOrgs             = []byte("orgs")              // org id → orgRecord
	bucketOrgNames         = []byte("org_names")         // name → org id
	bucketAPIKeys          = []byte("api_keys")          // key id → apiKeyRecord
	bucketAPIKeyHashes     = []byte("api_key_hashes")    // hash → key id
	bucketRevokedAPIKeys   = []byte("revoked_api_keys")  // hash of a deleted key → when, Unix milliseconds as text
	bucketResources        = []byte("resources")         // org, id → resourceRecord
	bucketResourceNames    = []byte("resource_names")    // org, kind, source, name → id
	bucketIntegrations     = []byte("integrations")      // org, id → integrationRecord
	bucketIntegrationNames = []byte("integration_names") // org, name → id
	bucketUsers            = []byte("users")             // org, id → userRecord
	bucketUserEmails       = []byte("user_emails")       // org, integration id, lower-cased email → user id
	bucketGrants           = []byte("grants")            // org, user id, resource id → grantValue (times; older records: grantRecord)
	// grants_by_resource lets DeleteResource find a resource's grants without a scan.
	bucketGrantsByResource = []byte("grants_by_resource") // org, resource id, user id → user id

	// droppedBuckets are buckets earlier versions wrote and nothing reads any more: the
	// decision log's indexes by user and by resource (decisions.go). Open removes them.
	droppedBuckets = [][]byte{[]byte("decisions_by_user"), []byte("decisions_by_svc_id")}

	allBuckets = [][]byte{
		bucketOrgs, bucketOrgNames, bucketAPIKeys, bucketAPIKeyHashes, bucketRevokedAPIKeys,
		bucketResources, bucketResourceNames, bucketIntegrations, bucketIntegrationNames,
		bucketUsers, bucketUserEmails, bucketGrants, bucketGrantsByResource,
		bucketEvents, bucketEventsByUser, bucketEventsBySvc, bucketDecisions,
		bucketSCIMTokens, bucketUserExternalIDs, bucketGroups, bucketGroupNames, bucketGroupsByMember, bucketGroupIDs,
		bucketGroupGrants, bucketGroupGrantsByResource, bucketGrantExpiries, bucketJournal,
	}
)

// lockTimeout is how long Open waits for the file lock. bbolt would wait forever for a file
// that another process holds open; a second Grantry on the same data directory should instead
// fail soon with a message that says why.
const lockTimeout = time.Second

// Store is the embedded store. It implements storage.Store; its methods are safe for concurrent
// use.
type Store struct {
	db      *bbolt.DB
	writes  *batcher
	journal *journal.Journal // grants and revokes, acknowledged before they are written into db
	// applyFault, when a test sets it, is called in each apply's transaction; an error it
	// returns fails the apply, as a full disk would.
	applyFault func() error
}

// Option changes how Open opens the data file.
type Option func(*bbolt.Options)

// Preload reads the whole data file into memory while it is opened, and again whenever its
// map grows, so that no read waits for the disk to fetch a page: bbolt reads the file through
// a memory map, and a page read for the first time since start, or dropped from the page
// cache since, is a page fault that stalls the reading goroutine's thread on the disk. The file
// is read in one sequential pass, so that the first checks of a large store do not each wait
// for the pages they read on demand, and its pages stay mapped, hence counted in the resident
// memory. On Linux only (mmap's MAP_POPULATE); elsewhere it does nothing.
//
// The map is made mapRoom larger than the file, so that the file is mapped and read in again
// only once it has grown by that much.
func Preload() Option {
	return func(o *bbolt.Options) { o.MmapFlags |= populateFlag }
}

// mapRoom is how much a data file opened with Preload may grow before bbolt maps it again. Left
// to itself, bbolt maps a file of more than a GiB to the next whole GiB, which a large store
// whose decision log grows it under load soon outgrows; the server then reads the whole file in
// again to map it anew (a write waits meanwhile for every read under way, and every read for
// it), and serves fewer checks while it does. The room is address space, not memory: only the
// file's pages are read in.
const mapRoom = 1 << 30

// preloadMapSize is the size of the first map of the data file at path, opened with Preload:
// mapRoom more than the file (bbolt rounds it up to its steps).
func preloadMapSize(path string) int {
	info, err := os.Stat(path)
	if err != nil {
		return mapRoom // a new file, or one bbolt will report on
	}
	return int(info.Size()) + mapRoom
}

// Open opens the data file at path, creating it (mode 0600) and its directory (mode 0700) if
// they do not exist, and creates the buckets it lacks. Only one process may have the file open:
// if another has, Open fails after about a second with an error that says the file is in use
// and wraps storage.ErrUnavailable.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	return open(ctx, path, 0, opts...)
}

// open is Open with the time a journaled change waits before it is applied (zero: the
// journal's own), which tests lengthen so that what they journal stays pending until they
// apply it.
func open(ctx context.Context, path string, applyAfter time.Duration, opts ...Option) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	options := &bbolt.Options{Timeout: lockTimeout}
	for _, opt := range opts {
		opt(options)
	}
	if options.MmapFlags&populateFlag != 0 {
		options.InitialMmapSize = preloadMapSize(path)
	}
	db, err := bbolt.Open(path, 0o600, options)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: the data file is in use by another process (is another grantry running on this data directory?): %w",
			path, storage.ErrUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		for _, name := range droppedBuckets {
			if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
				return fmt.Errorf("drop bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open %s: %w", path, err), db.Close())
	}
	s := &Store{db: db}
	j, err := s.openJournal(path+"-journal", options.NoSync, applyAfter)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open %s: %w", path, err), db.Close())
	}
	s.journal, s.writes = j, &batcher{db: db, journal: j}
	return s, nil
}

// Close applies the journal and closes it and the data file, waiting for transactions under
// way.
func (s *Store) Close(ctx context.Context) error {
	jerr := s.journal.Close()
	if err := errors.Join(jerr, s.db.Close()); err != nil {
		return fmt.Errorf("close %s: %w", s.db.Path(), err)
	}
	return nil
}

// Ping reports whether the data file is open and readable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.view(ctx, func(*bbolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// view runs fn in a read transaction, and update in a write transaction, unless ctx is done.
// bbolt cannot abandon a transaction midway, so ctx is honoured when the call starts; calls on
// a local file are short enough that this is where a deadline matters. Errors of the database
// itself (a closed store) are reported as storage.ErrUnavailable.
//
// Both apply the journal first, and update holds its changes back until it has committed
// (journal.go).
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := s.journal.Settle(); err != nil {
		return unavailable(err)
	}
	return unavailable(s.db.View(fn))
}

// viewData is view without applying the journal: for a read of buckets the journal does not
// write, or one that reads the journal's pending changes over the data file itself.
func (s *Store) viewData(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return unavailable(s.db.View(fn))
}

func (s *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	done, err := s.journal.Exclusive()
	if err != nil {
		return unavailable(err)
	}
	defer done()
	return unavailable(s.db.Update(fn))
}

// batch is update in a transaction shared with concurrent writers (batch.go): one commit for
// many grants. fn may run more than once, so it must have no effect outside tx.
func (s *Store) batch(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return unavailable(s.writes.do(fn, false))
}

// batchApart is batch for a write of buckets the journal neither writes nor reads (the decision
// log's): it does not wait for the journal to be applied, nor hold its changes back.
func (s *Store) batchApart(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return unavailable(s.writes.do(fn, true))
}

// ctxErr says that a done context makes the store unavailable to this call, keeping the
// context's own error for errors.Is.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return nil
}

// unavailable marks errors that come from bbolt itself rather than from the storage rules.
func unavailable(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) || errors.Is(err, bolterrors.ErrTxClosed) {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return err
}

// key joins parts into one key that sorts like the parts one after another. Each part has its
// zero bytes escaped as 0x00 0xff and ends with 0x00, so no part can run into the next: a user
// id that contains a zero byte cannot make one key look like another, and key(org) followed by
// anything is exactly the keys of org.
func key(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	return appendKey(make([]byte, 0, n), parts...)
}

// appendKey appends to k the key of parts, as key makes it.
func appendKey(k []byte, parts ...string) []byte {
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if p[i] == 0 {
				k = append(k, 0, 0xff)
				continue
			}
			k = append(k, p[i])
		}
		k = append(k, 0)
	}
	return k
}

// splitKey appends to parts the parts key joined into k; ok is false if k is not such a key.
func splitKey(parts []string, k []byte) (_ []string, ok bool) {
	var part []byte // the part so far, when it holds an escaped zero byte
	start := 0
	for i := 0; i < len(k); i++ {
		switch {
		case k[i] != 0:
		case i+1 < len(k) && k[i+1] == 0xff:
			part = append(append(part, k[start:i]...), 0)
			i++
			start = i + 1
		case part != nil:
			parts = append(parts, string(append(part, k[start:i]...)))
			part, start = nil, i+1
		default:
			parts = append(parts, string(k[start:i]))
			start = i + 1
		}
	}
	return parts, start == len(k) && part == nil // else not ended by a separator
}

// under yields, in key order, the keys of b under prefix (key of leading parts) and their
// values. A key is under prefix if it begins with it and its next part does not begin with an
// escaped zero byte, which would make prefix's last part the beginning of a longer one: user
// "a" has the prefix key(org, "a"), and user "a\x00b"'s keys begin with those bytes too. Keys
// of such a longer part sort after every other key beginning with prefix (0xff is above every
// byte of UTF-8 text, which ids are), so the scan ends at the first key that is not under it.
// Every scan of a prefix goes through here, or, with a cursor of its own, through isUnder.
func under(b *bbolt.Bucket, prefix []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		c := b.Cursor()
		for k, v := c.Seek(prefix); isUnder(k, prefix); k, v = c.Next() {
			if !yield(k, v) {
				return
			}
		}
	}
}

// isUnder reports whether k, a key a cursor found at or after prefix, is under prefix (see
// under); a nil k, the end of the bucket, is not.
func isUnder(k, prefix []byte) bool {
	return k != nil && bytes.HasPrefix(k, prefix) && !(len(k) > len(prefix) && k[len(prefix)] == 0xff)
}

// get decodes the value at k in b into a T; ok is false if there is none.
func get[T any](b *bbolt.Bucket, k []byte) (v T, ok bool, err error) {
	data := b.Get(k)
	if data == nil {
		return v, false, nil
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, false, fmt.Errorf("decode %q: %w", k, err)
	}
	return v, true, nil
}

// put encodes v as JSON at k in b.
func put(b *bbolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", k, err)
	}
	return b.Put(k, data)
}

// scan decodes every value whose key begins with prefix, in key order.
func scan[T any](b *bbolt.Bucket, prefix []byte) ([]T, error) {
	return scanWith(nil, b, prefix, func(k, data []byte) (T, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return v, fmt.Errorf("decode %q: %w", k, err)
		}
		return v, nil
	})
}

// scanWith is scan with decode, which is given the key too, instead of encoding/json; it
// appends to out (nil, or room made for as many as the caller expects).
func scanWith[T any](out []T, b *bbolt.Bucket, prefix []byte, decode func(k, data []byte) (T, error)) ([]T, error) {
	for k, data := range under(b, prefix) {
		v, err := decode(k, data)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// millis and fromMillis keep times as Unix milliseconds: the contract's precision, and they come
// back in UTC as the caller gave them.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
