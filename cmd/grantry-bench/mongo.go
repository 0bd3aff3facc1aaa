package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/internal/seal"
	"github.com/grantry/grantry/storage/mongo"
)

// mongoDB is the database the MongoDB rows run on: at GRANTRY_BENCH_MONGO_URI, or in a FerretDB
// that this process runs.
type mongoDB struct {
	uri    string // may hold a password: never printed
	name   string
	ferret bool
	// secretKey is GRANTRY_SECRET_KEY of the servers on it, drawn anew for each run.
	secretKey string
	// close stops the FerretDB, or drops the database from the given deployment.
	close func(ctx context.Context) error
}

// onMongo reports whether system is a Grantry on MongoDB.
func onMongo(system string) bool {
	return system == systemGrantryMongo || system == systemGrantryReplicas
}

// describe names the deployment for the report, without its URI.
func (db mongoDB) describe() string {
	if db.ferret {
		return "FerretDB " + ferretVersion() + " on SQLite, in grantry-bench's own process"
	}
	return "GRANTRY_BENCH_MONGO_URI, database " + db.name
}

// ferretVersion is the version of the FerretDB module grantry-bench was built with.
func ferretVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/FerretDB/FerretDB" {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// benchMongoURI is the variable naming a MongoDB deployment for the MongoDB rows.
const benchMongoURI = "GRANTRY_BENCH_MONGO_URI"

// openMongo returns the database of the MongoDB rows: a new one, grantry_bench_<time>, at
// GRANTRY_BENCH_MONGO_URI (dropped again by close unless keep), or grantry_bench in a FerretDB
// run in this process on SQLite files under dir/ferretdb.
func openMongo(getenv func(string) string, dir string, keep bool) (mongoDB, error) {
	if uri := getenv(benchMongoURI); uri != "" {
		db := mongoDB{uri: uri, name: fmt.Sprintf("grantry_bench_%d", time.Now().Unix()), secretKey: newSecretKey()}
		db.close = func(ctx context.Context) error {
			if keep {
				return nil
			}
			return dropDatabase(ctx, db.uri, db.name)
		}
		return db, nil
	}
	return startFerretDB(dir)
}

// startFerretDB runs FerretDB in this process, listening on a loopback port, with its SQLite
// files in dir/ferretdb. SQLite commits without waiting for the disk at each one
// (synchronous=normal, in WAL mode), as close as it comes to MongoDB's default of journaling
// in batches. Its log (errors only: below that it prints whole wire messages) goes to
// dir/ferretdb.log.
func startFerretDB(dir string) (mongoDB, error) {
	data := filepath.Join(dir, "ferretdb")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return mongoDB{}, fmt.Errorf("ferretdb: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "ferretdb.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return mongoDB{}, fmt.Errorf("ferretdb: %w", err)
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelError})),
		Handler:   "sqlite",
		SQLiteURL: "file:" + data + "/?_pragma=synchronous(normal)",
	})
	if err != nil {
		logFile.Close()
		return mongoDB{}, fmt.Errorf("ferretdb: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	return mongoDB{uri: f.MongoDBURI(), name: "grantry_bench", ferret: true, secretKey: newSecretKey(), close: func(context.Context) error {
		cancel()
		err := <-done
		return errors.Join(err, logFile.Close())
	}}, nil
}

// newSecretKey draws a master key for third-party secrets, as GRANTRY_SECRET_KEY takes it.
func newSecretKey() string {
	key := make([]byte, seal.KeySize)
	rand.Read(key) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(key)
}

// dropDatabase drops name at uri, the database the MongoDB rows were seeded into.
func dropDatabase(ctx context.Context, uri, name string) error {
	client, err := driver.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return errors.New("drop the bench database: invalid connection URI (details withheld: it may hold credentials)")
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	if err := client.Database(name).Drop(ctx); err != nil {
		return fmt.Errorf("drop the bench database %s: %w", name, err)
	}
	return nil
}

// mongoSeeding is what seeding one of the MongoDB rows' databases took, for the report.
type mongoSeeding struct {
	p       params
	took    time.Duration
	systems []string // the rows run on it
}

// smallMongoUsers is how many users the replicas' row holds on FerretDB, which reads a user's
// grants by scanning every grant: each change makes the replica it reaches read its user
// again, and with make bench's half a million grants those reads, tens of milliseconds each,
// swamp FerretDB under the load. A MongoDB reads them through an index.
const smallMongoUsers = 50

// replicaParams is the workload of the replicas' row on FerretDB: p with smallMongoUsers users,
// p's first, with the same grants.
func replicaParams(p params) params {
	p.Users = min(p.Users, smallMongoUsers)
	return p
}

// mongoRun is where a MongoDB row runs: its database, its work folder (with the API key) and
// its workload.
type mongoRun struct {
	db  mongoDB
	dir string
	p   params
}

// seedMongoRows seeds the databases of the selected MongoDB rows: make bench's workload, p,
// for both on a MongoDB; on FerretDB, p for the MongoDB row and replicaParams(p) in a database
// of its own for the replicas' row.
func seedMongoRows(ctx context.Context, db mongoDB, sel selection, dir string, p params, progress io.Writer) (*mongoReport, mongoRun, mongoRun, error) {
	rep := &mongoReport{describe: db.describe(), ferret: db.ferret}
	full := mongoRun{db: db, dir: filepath.Join(dir, "mongo"), p: p}
	replicas := full
	if db.ferret {
		replicas.db.name += "_replicas"
		replicas.dir = filepath.Join(dir, "mongo-replicas")
		replicas.p = replicaParams(p)
	}
	seed := func(r mongoRun, systems ...string) error {
		ms, err := seedMongo(ctx, r.db, r.dir, r.p, progress)
		ms.systems = systems
		rep.seedings = append(rep.seedings, ms)
		return err
	}
	var err error
	switch {
	case !db.ferret:
		var systems []string
		for _, row := range []string{rowMongo, rowReplicas} {
			if sel[row] {
				systems = append(systems, row)
			}
		}
		err = seed(full, systems...)
	default:
		if sel[rowMongo] {
			err = seed(full, rowMongo)
		}
		if sel[rowReplicas] && err == nil {
			err = seed(replicas, rowReplicas)
		}
	}
	if err != nil {
		return nil, mongoRun{}, mongoRun{}, err
	}
	return rep, full, replicas, nil
}

// seedMongo writes the workload of p into db through the store's bulk loader, and the API key
// of its organization to dir/api-key.
func seedMongo(ctx context.Context, db mongoDB, dir string, p params, progress io.Writer) (ms mongoSeeding, err error) {
	s, err := mongo.Open(ctx, db.uri, db.name)
	if err != nil {
		return mongoSeeding{}, fmt.Errorf("seed MongoDB: %w", err)
	}
	defer func() { err = errors.Join(err, s.Close(context.WithoutCancel(ctx))) }()
	ms = mongoSeeding{p: p}
	fmt.Fprintf(progress, "seeding MongoDB with %d users × %d grants over %d resources\n", ms.p.Users, ms.p.Grants, ms.p.Resources)
	start := time.Now()
	w, err := newWorkload(ms.p)
	if err != nil {
		return mongoSeeding{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return mongoSeeding{}, fmt.Errorf("seed MongoDB: %w", err)
	}
	if err := seedStore(ctx, s, s.NewLoader(mongo.DefaultLoadBatch), w, filepath.Join(dir, keyFile)); err != nil {
		return mongoSeeding{}, fmt.Errorf("seed MongoDB: %w", err)
	}
	ms.took = time.Since(start)
	fmt.Fprintf(progress, "seeded MongoDB in %s\n", ms.took.Round(100*time.Millisecond))
	return ms, nil
}
