package mongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// Events and decisions are logs of entries whose ids sort in time order (storage.EntryIDs),
// kept as documents with that id as _id. A page of one organization's entries, newest first,
// is then a find by equality with a range on _id, sorted on _id: a time range and a cursor are
// both bounds of that one range, and the retention delete is a range on _id alone.

// Collection names of the logs.
const (
	colEvents    = "events"
	colDecisions = "decisions"
)

// entryBatch bounds the documents of one insert command, keeping each well under the 16 MiB
// message limit even for decisions about a thousand resources.
const entryBatch = 500

// entryIndexes serves pages of one organization's entries, newest first: all of them, and
// those with a given value of each field.
func entryIndexes(fields ...string) []index {
	idxs := []index{{keys: []string{"org_id", "_id"}}}
	for _, f := range fields {
		idxs = append(idxs, index{keys: []string{"org_id", f, "_id"}})
	}
	return idxs
}

// pageFilter selects the organization's entries at or after since, before until and before
// the cursor id; zero values do not bound.
func pageFilter(orgID string, since, until time.Time, cursor string) bson.D {
	filter := bson.D{{Key: "org_id", Value: orgID}}
	var idRange bson.D
	if !since.IsZero() {
		idRange = append(idRange, bson.E{Key: "$gte", Value: storage.IDTimePrefix(since)})
	}
	upper := cursor
	if !until.IsZero() && (upper == "" || storage.IDTimePrefix(until) < upper) {
		upper = storage.IDTimePrefix(until)
	}
	if upper != "" {
		idRange = append(idRange, bson.E{Key: "$lt", Value: upper})
	}
	if len(idRange) > 0 {
		filter = append(filter, bson.E{Key: "_id", Value: idRange})
	}
	return filter
}

// findPage returns at most limit entries of col that match filter, newest first.
func findPage[T any](ctx context.Context, col *mongo.Collection, filter bson.D, limit int) ([]T, error) {
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(int64(limit))
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

// insertEntries inserts docs in unordered batches. A document whose _id is already stored was
// written by an earlier try of the same batch, so a duplicate key is not an error.
func insertEntries[T any](ctx context.Context, col *mongo.Collection, docs []T) error {
	for len(docs) > 0 {
		n := min(len(docs), entryBatch)
		_, err := col.InsertMany(ctx, docs[:n], options.InsertMany().SetOrdered(false))
		if err != nil && !onlyDuplicates(err) {
			return mapErr(err)
		}
		docs = docs[n:]
	}
	return nil
}

// onlyDuplicates reports whether err is a bulk write error made only of duplicate keys.
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}
