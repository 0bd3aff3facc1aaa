// Package mongo is the production storage.Store, kept in MongoDB through the official driver.
//
// It uses only operations that MongoDB and FerretDB v1 both implement correctly (see the
// "Stores" section of the contract): inserts guarded by unique indexes, point reads and
// $set by _id, and finds and deletes by equality (plus $in on _id and on the users' email key)
// with sort and limit; ScanUsers reads group memberships with an aggregation that only unwinds
// and sorts. Records that belong to an organization get a composite string _id that
// starts with the organization's id, so uniqueness within an organization and point access come
// from the primary key, and every document also carries org_id, which every query filters on.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/grantry/grantry/storage"
)

// Collection names.
const (
	colOrgs             = "orgs"
	colAPIKeys          = "api_keys"
	colResources        = "resources"
	colAuthIntegrations = "auth_integrations"
	colUsers            = "users"
	colGrants           = "grants"
)

// defaultServerSelectionTimeout bounds how long an operation waits for a reachable server when
// the caller's context has no earlier deadline; the driver's default of 30 s would leave
// requests hanging long after a load balancer gave up on them.
const defaultServerSelectionTimeout = 5 * time.Second

// Store is a storage.Store kept in one MongoDB database.
type Store struct {
	client *mongo.Client
	db     *mongo.Database

	orgs             *mongo.Collection
	apiKeys          *mongo.Collection
	resources        *mongo.Collection
	authIntegrations *mongo.Collection
	users            *mongo.Collection
	grants           *mongo.Collection

	// pollTimeout bounds one read of WatchChanges' polls: pollTimeout, or longer in tests that
	// run on a loaded machine and count a read that fails as a bug.
	pollTimeout time.Duration
}

var _ storage.Store = (*Store)(nil)

// Open connects to the MongoDB deployment at uri, checks that it answers within ctx, makes sure
// the indexes of database exist, and returns the store. An unreachable deployment yields an
// error wrapping storage.ErrUnavailable. A serverSelectionTimeoutMS in uri overrides the default
// of a few seconds.
func Open(ctx context.Context, uri, database string) (*Store, error) {
	opts := options.Client().ApplyURI(uri)
	if opts.ServerSelectionTimeout == nil {
		opts.SetServerSelectionTimeout(defaultServerSelectionTimeout)
	}
	if opts.ConnectTimeout == nil {
		opts.SetConnectTimeout(defaultServerSelectionTimeout)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		// The driver's message may quote parts of the URI, which can hold a password.
		return nil, errors.New("open mongo: invalid connection URI (details withheld: it may hold credentials)")
	}
	db := client.Database(database)
	s := &Store{
		client:           client,
		db:               db,
		orgs:             db.Collection(colOrgs),
		apiKeys:          db.Collection(colAPIKeys),
		resources:        db.Collection(colResources),
		authIntegrations: db.Collection(colAuthIntegrations),
		users:            db.Collection(colUsers),
		grants:           db.Collection(colGrants),
		pollTimeout:      pollTimeout,
	}
	if err := s.Ping(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open mongo: %w", err)
	}
	if err := s.ensureIndexes(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open mongo: %w", err)
	}
	return s, nil
}

// Close disconnects from the deployment, waiting within ctx for operations in flight.
func (s *Store) Close(ctx context.Context) error {
	if err := s.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("close mongo: %w", mapErr(err))
	}
	return nil
}

// Ping reports whether the primary answers; any failure means the store cannot serve writes,
// so it always wraps storage.ErrUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx, readpref.Primary()); err != nil {
		return fmt.Errorf("ping mongo: %w: %w", storage.ErrUnavailable, err)
	}
	return nil
}

// index describes one index by its keys in order.
type index struct {
	keys   []string
	unique bool
}

// indexes lists what each collection needs: the unique ones enforce the interface's uniqueness
// rules atomically, the others serve the sorted lists and the grant clean-up by resource. Every
// key of an organization's records begins with org_id so one tenant's data is one index range.
var indexes = map[string][]index{
	colOrgs:    {{keys: []string{"name"}, unique: true}, {keys: []string{"created_at", "_id"}}},
	colAPIKeys: {{keys: []string{"hash"}, unique: true}, {keys: []string{"org_id", "created_at"}}},
	colResources: {
		{keys: []string{"org_id", "kind", "source", "name"}, unique: true},
		{keys: []string{"org_id", "created_at", "id"}},
		{keys: []string{"org_id", "kind", "created_at", "id"}},
	},
	colAuthIntegrations: {
		{keys: []string{"org_id", "name"}, unique: true},
		{keys: []string{"org_id", "created_at", "id"}},
	},
	colUsers: {
		{keys: []string{"org_id", "integration_id", "email_key"}, unique: true},
		{keys: []string{"org_id", "imported_at", "id"}},
		{keys: []string{"org_id", "integration_id", "id"}},
		{keys: []string{"org_id", "integration_id", "external_id"}},
		{keys: []string{"org_id", "id"}}, // ScanUsers
	},
	colGrants: {
		{keys: []string{"org_id", "user_id", "created_at", "resource_id"}},
		{keys: []string{"org_id", "resource_id"}},
		{keys: []string{"expires_at"}}, // DeleteExpiredGrants, across organizations
	},
	colGroupGrants: {
		{keys: []string{"org_id", "group_id", "created_at", "resource_id"}},
		{keys: []string{"org_id", "resource_id", "group_id"}},
		{keys: []string{"expires_at"}},
	},
	colEvents:    entryIndexes("user_id", "svc_id", "action"),
	colDecisions: entryIndexes("user_id", "resource_ids"),
	colSCIMTokens: {
		{keys: []string{"hash"}, unique: true},
		{keys: []string{"org_id", "integration_id"}},
	},
	colGroups: {
		{keys: []string{"org_id", "integration_id", "name_key"}, unique: true},
		{keys: []string{"org_id", "integration_id", "id"}},
		{keys: []string{"org_id", "members"}},
		{keys: []string{"org_id", "created_at", "id"}},
		{keys: []string{"org_id", "id"}}, // ScanGroups
	},
}

// ensureIndexes creates the indexes that do not exist yet; creating an existing index with the
// same keys and options is a no-op, so every replica may run it at start-up.
func (s *Store) ensureIndexes(ctx context.Context) error {
	for col, idxs := range indexes {
		// Only the missing ones are created: FerretDB v1 drops the connection when asked to
		// create an index that exists (MongoDB would do nothing), which would stop a second
		// process, or a restart, on the same database.
		existing, err := s.indexNames(ctx, col)
		if err != nil {
			return err
		}
		models := make([]mongo.IndexModel, 0, len(idxs))
		for _, idx := range idxs {
			name := strings.Join(idx.keys, "_")
			if existing[name] {
				continue
			}
			keys := make(bson.D, 0, len(idx.keys))
			for _, k := range idx.keys {
				keys = append(keys, bson.E{Key: k, Value: 1})
			}
			opts := options.Index().SetName(name)
			if idx.unique {
				opts.SetUnique(true)
			}
			models = append(models, mongo.IndexModel{Keys: keys, Options: opts})
		}
		if len(models) == 0 {
			continue
		}
		if _, err := s.db.Collection(col).Indexes().CreateMany(ctx, models); err != nil {
			return fmt.Errorf("create indexes of %s: %w", col, mapErr(err))
		}
	}
	return nil
}

// indexNames returns the names of the indexes collection col has.
func (s *Store) indexNames(ctx context.Context, col string) (map[string]bool, error) {
	cur, err := s.db.Collection(col).Indexes().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list indexes of %s: %w", col, mapErr(err))
	}
	var specs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(ctx, &specs); err != nil {
		return nil, fmt.Errorf("list indexes of %s: %w", col, mapErr(err))
	}
	names := make(map[string]bool, len(specs))
	for _, sp := range specs {
		names[sp.Name] = true
	}
	return names, nil
}

// mapErr turns a driver error into the storage sentinels, the one place that knows how:
// a duplicate key is ErrConflict, no document is ErrNotFound, and anything that says the
// deployment could not be reached or did not answer in time is ErrUnavailable (keeping the
// cause in the chain). Callers add what they were doing.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return storage.ErrNotFound
	case errors.Is(err, context.Canceled):
		// The caller gave up; the store may be fine.
		return err
	case mongo.IsDuplicateKeyError(err):
		// The server's message quotes the duplicate key's values; the sentinel says enough.
		return storage.ErrConflict
	case isUnavailable(err):
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	default:
		return err
	}
}

// unavailableCodes are server error codes that mean the deployment cannot serve the request
// right now (shutting down, electing a primary, unreachable members), not that it was wrong.
var unavailableCodes = []int{
	6,     // HostUnreachable
	7,     // HostNotFound
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	189,   // PrimarySteppedDown
	262,   // ExceededTimeLimit
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
}

// isUnavailable reports whether err means the deployment could not answer.
func isUnavailable(err error) bool {
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, mongo.ErrClientDisconnected) {
		return true
	}
	if errors.As(err, new(topology.ServerSelectionError)) || errors.As(err, new(topology.ConnectionError)) {
		return true
	}
	// The driver's "connection pool cleared" error, met by operations waiting for a connection
	// when another one failed, is unexported; it is the only error with this method.
	var cleared interface{ Retryable() bool }
	if errors.As(err, &cleared) {
		return true
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range unavailableCodes {
			if se.HasErrorCode(code) {
				return true
			}
		}
	}
	return false
}

// key joins parts into a composite _id. Each part is escaped so that "/" appears only as the
// separator: ids are caller-chosen strings (user ids especially), and ("a/b", "c") must not
// collide with ("a", "b/c").
func key(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(keyEscaper.Replace(p))
	}
	return b.String()
}

var keyEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// splitKey returns the parts that key joined into k; ok is false if k is not such a key.
func splitKey(k string) (parts []string, ok bool) {
	parts = strings.Split(k, "/")
	if !strings.Contains(k, "%") {
		return parts, true
	}
	for i, p := range parts {
		parts[i] = keyUnescaper.Replace(p)
	}
	return parts, key(parts...) == k
}

var keyUnescaper = strings.NewReplacer("%25", "%", "%2F", "/")

// inChunk bounds how many values one $in query carries, keeping each command far below the
// 16 MiB message limit whatever the ids look like.
const inChunk = 1000

// chunks splits values into slices of at most inChunk elements.
func chunks(values []string) [][]string {
	var out [][]string
	for len(values) > inChunk {
		out = append(out, values[:inChunk])
		values = values[inChunk:]
	}
	if len(values) > 0 {
		out = append(out, values)
	}
	return out
}

// findAll runs a find on col and decodes every document into a slice of T.
func findAll[T any](ctx context.Context, col *mongo.Collection, filter, sort bson.D) ([]T, error) {
	opts := options.Find()
	if sort != nil {
		opts.SetSort(sort)
	}
	cur, err := col.Find(ctx, filter, opts)
	if err != nil {
		return nil, mapErr(err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, mapErr(err)
	}
	return docs, nil
}

// findOne reads the one document of col matching filter into a T, or returns ErrNotFound.
func findOne[T any](ctx context.Context, col *mongo.Collection, filter bson.D) (T, error) {
	var doc T
	if err := col.FindOne(ctx, filter).Decode(&doc); err != nil {
		return doc, mapErr(err)
	}
	return doc, nil
}

// exists reports whether col has a document matching filter, reading only its _id.
func exists(ctx context.Context, col *mongo.Collection, filter bson.D) (bool, error) {
	err := col.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil
	default:
		return false, mapErr(err)
	}
}
