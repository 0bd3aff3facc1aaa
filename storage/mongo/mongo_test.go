package mongo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/storagetest"
)

// ferretURI is the URI of the FerretDB that TestMain runs for the whole test binary, with
// maxPoolSize=1: FerretDB v1 loses concurrent updates to one document over several connections.
var ferretURI string

func TestMain(m *testing.M) {
	os.Exit(runWithFerretDB(m))
}

// runWithFerretDB starts an in-process FerretDB on SQLite files in a temporary directory, runs
// the tests, and stops it again.
func runWithFerretDB(m *testing.M) int {
	dir, err := os.MkdirTemp("", "grantry-ferretdb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		// WARN and below print whole wire replies.
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Handler: "sqlite",
		// A directory of files: "?mode=memory" deadlocks on the first update. The tests do not
		// crash the database, so it need not wait for the disk at each commit.
		SQLiteURL: "file:" + dir + "/?_pragma=synchronous(off)",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "ferretdb:", err)
		}
	}()

	ferretURI = f.MongoDBURI() + "?maxPoolSize=1"
	return m.Run()
}

// TestFerretDB runs the behavioural suite against the in-process FerretDB.
func TestFerretDB(t *testing.T) {
	storagetest.Run(t, opener(ferretURI))
}

// TestMongoDB runs the behavioural suite against the real MongoDB at GRANTRY_TEST_MONGO_URI.
func TestMongoDB(t *testing.T) {
	uri := os.Getenv("GRANTRY_TEST_MONGO_URI")
	if uri == "" {
		t.Skip("GRANTRY_TEST_MONGO_URI is not set")
	}
	storagetest.Run(t, opener(uri))
}

// opener returns a function that opens a store on a new database of the deployment at uri for
// each test, and drops that database when the test ends.
func opener(uri string) func(t *testing.T) storage.Store {
	var n atomic.Int64
	return func(t *testing.T) storage.Store {
		t.Helper()
		s, _ := openStore(t, uri, dbName(t.Name(), n.Add(1)))
		return s
	}
}

// openStore opens a store on database db at uri, and registers on tb closing it and dropping
// the database through a client of its own, so that a test may close the store itself.
func openStore(tb testing.TB, uri, db string) (*Store, *mongo.Database) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, uri, db)
	if err != nil {
		tb.Fatalf("Open(%s): %v", db, err)
	}
	admin, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() {
		// tb.Context is already cancelled here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil && !errors.Is(err, mongo.ErrClientDisconnected) {
			tb.Errorf("Close: %v", err)
		}
		if err := admin.Database(db).Drop(ctx); err != nil {
			tb.Errorf("drop %s: %v", db, err)
		}
		if err := admin.Disconnect(ctx); err != nil {
			tb.Errorf("disconnect: %v", err)
		}
	})
	return s, admin.Database(db)
}

var notDBNameChar = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// dbName turns a test name and a counter into a database name both MongoDB and FerretDB accept:
// letters, digits and underscores, at most 63 bytes, keeping the end of the name, which is the
// part that tells subtests apart.
func dbName(testName string, n int64) string {
	suffix := fmt.Sprintf("_%d", n)
	name := notDBNameChar.ReplaceAllString(testName, "_")
	if limit := 63 - len(suffix); len(name) > limit {
		name = name[len(name)-limit:]
	}
	return name + suffix
}

func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	tests := []struct {
		name    string
		uri     string
		timeout time.Duration // of ctx; 0 for none
	}{
		{name: "ContextDeadline", uri: "mongodb://" + addr + "/", timeout: time.Second},
		{name: "URITimeout", uri: "mongodb://" + addr + "/?serverSelectionTimeoutMS=500"},
		{name: "Credentials", uri: "mongodb://grantry:s3cr3t-pw@" + addr + "/", timeout: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			s, err := Open(ctx, tt.uri, "grantry")
			elapsed := time.Since(start)
			if err == nil {
				s.Close(t.Context())
				t.Fatal("Open succeeded against a closed port")
			}
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Errorf("Open error = %v, want one wrapping storage.ErrUnavailable", err)
			}
			// Past the deadline asked for (a second at most), short of the driver's default
			// of five, which an Open that ignored it would wait out.
			if elapsed > 4*time.Second {
				t.Errorf("Open took %v to fail", elapsed)
			}
			if strings.Contains(err.Error(), "s3cr3t-pw") {
				t.Errorf("Open error shows the password: %v", err)
			}
		})
	}
}

func TestOpenInvalidURI(t *testing.T) {
	_, err := Open(t.Context(), "mongodb://grantry:s3cr3t-pw@127.0.0.1:1/?maxPoolSize=many", "grantry")
	if err == nil {
		t.Fatal("Open succeeded with an invalid URI")
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Errorf("Open error shows the password: %v", err)
	}
}

// TestRawDocuments checks what actually lands in the database: every document names its
// organization, and a resource's secret is stored as the opaque bytes it was given, nowhere else.
func TestRawDocuments(t *testing.T) {
	s, db := openStore(t, ferretURI, dbName(t.Name(), 0))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	secret := []byte("\x00sealed\xffcredential\x01")

	must(t, s.CreateOrg(ctx, storage.Org{ID: "org-1", Name: "acme", CreatedAt: now}))
	must(t, s.CreateAPIKey(ctx, storage.APIKey{ID: "key-1", OrgID: "org-1", Prefix: "gry_ab", Hash: "00ff", CreatedAt: now}))
	must(t, s.CreateResource(ctx, storage.Resource{
		OrgID: "org-1", ID: "res-1", Kind: storage.KindModel, Source: "openai", Name: "gpt",
		Metadata: map[string]string{"a.b": "1", "$c": "2", "": "3"}, Secret: secret, CreatedAt: now,
	}))
	must(t, s.CreateResource(ctx, storage.Resource{
		OrgID: "org-1", ID: "res-2", Kind: storage.KindModel, Source: storage.SourceCustom, Name: "mine", CreatedAt: now,
	}))
	must(t, s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "dir", Type: "import", CreatedAt: now}))
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", []storage.UserImport{{ID: "u-1", Email: "A@example.com"}}, now); err != nil {
		t.Fatal(err)
	}
	must(t, storage.AddGrant(ctx, s, storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: "res-1", CreatedAt: now}))

	secretDocs := 0
	for _, col := range []string{colOrgs, colAPIKeys, colResources, colAuthIntegrations, colUsers, colGrants} {
		cur, err := db.Collection(col).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		if len(docs) == 0 {
			t.Errorf("%s: no documents", col)
		}
		for _, raw := range docs {
			if org, ok := raw.Lookup("org_id").StringValueOK(); !ok || org != "org-1" {
				t.Errorf("%s: document without org_id org-1: %v", col, raw)
			}
			if n := bytes.Count(raw, secret); n > 0 {
				secretDocs += n
				sub, data, ok := raw.Lookup("secret").BinaryOK()
				if col != colResources || !ok || sub != bson.TypeBinaryGeneric || !bytes.Equal(data, secret) {
					t.Errorf("%s: the secret appears other than as the resource's binary secret: %v", col, raw)
				}
			}
		}
	}
	if secretDocs != 1 {
		t.Errorf("the secret appears %d times in the database, want once", secretDocs)
	}

	r, err := s.GetResource(ctx, "org-1", "res-1")
	must(t, err)
	if !bytes.Equal(r.Secret, secret) || len(r.Metadata) != 3 || r.Metadata["a.b"] != "1" || r.Metadata["$c"] != "2" || r.Metadata[""] != "3" {
		t.Errorf("GetResource = %+v", r)
	}
	r, err = s.GetResource(ctx, "org-1", "res-2")
	must(t, err)
	if r.Secret != nil || r.Metadata != nil {
		t.Errorf("custom resource: Secret = %v, Metadata = %v, want nil", r.Secret, r.Metadata)
	}
}

// TestCompositeKeys checks that ids containing the key separator cannot collide across
// organizations or users.
func TestCompositeKeys(t *testing.T) {
	s, _ := openStore(t, ferretURI, dbName(t.Name(), 0))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	res := func(org, id string) storage.Resource {
		return storage.Resource{OrgID: org, ID: id, Kind: storage.KindModel, Source: storage.SourceCustom, Name: org + id, CreatedAt: now}
	}
	must(t, s.CreateResource(ctx, res("a", "b/c")))
	must(t, s.CreateResource(ctx, res("a/b", "c")))
	must(t, s.CreateResource(ctx, res("a%2Fb", "c")))
	for _, r := range []storage.Resource{res("a", "b/c"), res("a/b", "c"), res("a%2Fb", "c")} {
		got, err := s.GetResource(ctx, r.OrgID, r.ID)
		must(t, err)
		if got.OrgID != r.OrgID || got.Name != r.Name {
			t.Errorf("GetResource(%q, %q) = %+v", r.OrgID, r.ID, got)
		}
	}
	if _, err := s.GetResource(ctx, "a", "b"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetResource(a, b) error = %v, want ErrNotFound", err)
	}
}

// TestConcurrentWrites checks the writes that depend on unique indexes rather than on the
// checks before them: racing grants of one pair all succeed and leave one grant, and racing
// imports of one new email leave one user, every import either succeeding or reporting a
// conflict.
func TestConcurrentWrites(t *testing.T) {
	s, _ := openStore(t, ferretURI, dbName(t.Name(), 0))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, s.CreateOrg(ctx, storage.Org{ID: "org-1", Name: "acme", CreatedAt: now}))
	must(t, s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "dir", CreatedAt: now}))
	must(t, s.CreateResource(ctx, storage.Resource{OrgID: "org-1", ID: "res-1", Kind: storage.KindModel, Source: storage.SourceCustom, Name: "m", CreatedAt: now}))
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", []storage.UserImport{{ID: "u-1", Email: "u1@example.com"}}, now); err != nil {
		t.Fatal(err)
	}

	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			errs <- storage.AddGrant(ctx, s, storage.Grant{OrgID: "org-1", UserID: "u-1", ResourceID: "res-1", CreatedAt: now.Add(time.Duration(i) * time.Second)})
		})
		wg.Go(func() {
			_, err := s.ImportUsers(ctx, "org-1", "int-1", []storage.UserImport{{Email: "New@example.com", First: fmt.Sprint(i)}}, now)
			if errors.Is(err, storage.ErrConflict) {
				err = nil
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	grants, err := s.UserGrants(ctx, "org-1", "u-1")
	must(t, err)
	if len(grants) != 1 {
		t.Errorf("UserGrants = %v, want one grant", grants)
	}
	users, err := s.ListUsers(ctx, "org-1")
	must(t, err)
	if len(users) != 2 {
		t.Errorf("ListUsers = %v, want u-1 and one new user", users)
	}
}

// TestImportManyUpdates re-imports more users than one update command may carry on FerretDB,
// where an update command of about a hundred statements never returns.
func TestImportManyUpdates(t *testing.T) {
	s, _ := openStore(t, ferretURI, dbName(t.Name(), 0))
	// A hang fails this test rather than the whole binary's timeout.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "dir", CreatedAt: now}))
	items := make([]storage.UserImport, 110)
	for i := range items {
		items[i] = storage.UserImport{Email: fmt.Sprintf("u%d@example.com", i), First: "Old"}
	}
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", items, now); err != nil {
		t.Fatal(err)
	}
	for i := range items {
		items[i].First = "New"
	}
	later := now.Add(time.Second)
	if _, err := s.ImportUsers(ctx, "org-1", "int-1", items, later); err != nil {
		t.Fatal(err)
	}
	users, err := s.ListUsers(ctx, "org-1")
	must(t, err)
	if len(users) != len(items) {
		t.Fatalf("ListUsers returned %d users, want %d", len(users), len(items))
	}
	for _, u := range users {
		if u.First != "New" || !u.ModifiedAt.Equal(later) {
			t.Errorf("user %s: First = %q, ModifiedAt = %v; want New, %v", u.ID, u.First, u.ModifiedAt, later)
		}
	}
}

func TestChunks(t *testing.T) {
	values := make([]string, 2*inChunk+1)
	tests := []struct {
		name string
		n    int
		want []int
	}{
		{name: "None", n: 0, want: nil},
		{name: "One", n: 1, want: []int{1}},
		{name: "Full", n: inChunk, want: []int{inChunk}},
		{name: "Over", n: 2*inChunk + 1, want: []int{inChunk, inChunk, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, c := range chunks(values[:tt.n]) {
				got = append(got, len(c))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("chunk sizes = %v, want %v", got, tt.want)
			}
		})
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
