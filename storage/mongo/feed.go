package mongo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// colRevisions holds one document per organization whose rev changes on every Touch:
// {_id: <org id>, rev: <random>, at: <time>}. A random rev, rather than a counter, needs only
// $set by _id (FerretDB loses concurrent $inc), and any two writers still leave a value that
// differs from what a watcher saw before either of them.
const colRevisions = "org_revisions"

// pollInterval is how often WatchChanges reads the revisions when no change stream is
// available, well inside the one second within which another process must see a change.
const pollInterval = 100 * time.Millisecond

// pollTimeout bounds one read of the revisions, so that a store that stops answering is noticed
// (synced(false)) within a fraction of a second rather than after the driver's own timeouts. A
// read takes milliseconds; one that takes this long is as good as lost. With pollInterval it
// stays within the half second a cache of the store is trusted unconfirmed (api.maxStaleness),
// so a slow but answering store does not make the cache distrusted.
const pollTimeout = 350 * time.Millisecond

// Touch sets a new random revision for the organization.
func (s *Store) Touch(ctx context.Context, orgID string) error {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	_, err := s.db.Collection(colRevisions).UpdateOne(ctx, bson.D{{Key: "_id", Value: orgID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "rev", Value: hex.EncodeToString(b[:])}, {Key: "at", Value: time.Now().UTC()}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("touch organization %s: %w", orgID, mapErr(err))
	}
	return nil
}

// WatchChanges follows the revisions with a change stream where the deployment offers one (a
// replica set or a sharded cluster) and, where it does not (a standalone server, FerretDB) or
// when the stream fails, by reading every revision each pollInterval and reporting those that
// differ from the last read. After a stream fails or a read fails, every organization seen so
// far is reported, since changes may have gone unseen meanwhile.
func (s *Store) WatchChanges(ctx context.Context, changed func(orgID string), synced func(fresh bool)) error {
	// The stream opens before the first read, so that no change falls between the two.
	stream, streamErr := s.db.Collection(colRevisions).Watch(ctx, mongo.Pipeline{},
		options.ChangeStream().SetMaxAwaitTime(pollInterval))
	seen := map[string]string{}
	failed := s.pollRevisions(ctx, seen, nil) != nil
	if streamErr == nil {
		if !failed {
			synced(true)
		}
		follow(ctx, stream, changed, synced)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		failed = true // what changed since the stream broke is not known
		synced(false)
	} else {
		synced(!failed)
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := s.pollRevisions(ctx, seen, changed); err != nil {
			failed = true
			synced(false)
			continue
		}
		if failed {
			for org := range seen {
				changed(org)
			}
			failed = false
		}
		synced(true)
	}
}

// pollRevisions reads every revision, calls changed (if not nil) for each that differs from
// seen, and records it in seen.
func (s *Store) pollRevisions(ctx context.Context, seen map[string]string, changed func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, s.pollTimeout)
	defer cancel()
	cur, err := s.db.Collection(colRevisions).Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "rev", Value: 1}}))
	if err != nil {
		return fmt.Errorf("read revisions: %w", mapErr(err))
	}
	var docs []struct {
		OrgID string `bson:"_id"`
		Rev   string `bson:"rev"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return fmt.Errorf("read revisions: %w", mapErr(err))
	}
	for _, d := range docs {
		if seen[d.OrgID] != d.Rev {
			seen[d.OrgID] = d.Rev
			if changed != nil {
				changed(d.OrgID)
			}
		}
	}
	return nil
}

// follow reports the organization of every change that stream sees, and synced each time the
// server says there is nothing more (at least every pollInterval), until ctx ends or the stream
// fails; then it closes the stream.
func follow(ctx context.Context, stream *mongo.ChangeStream, changed func(string), synced func(bool)) {
	defer stream.Close(context.WithoutCancel(ctx))
	for {
		if !stream.TryNext(ctx) {
			if stream.Err() != nil || ctx.Err() != nil {
				return
			}
			synced(true)
			continue
		}
		var ev struct {
			DocumentKey struct {
				OrgID string `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := stream.Decode(&ev); err == nil && ev.DocumentKey.OrgID != "" {
			changed(ev.DocumentKey.OrgID)
		}
	}
}
