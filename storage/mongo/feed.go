package mongo

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// The change feed is kept in two collections.
//
// colChanges is a log with one document per Touch, only ever inserted (and deleted when old):
// {_id: <ObjectID>, org_id, rev, users, groups, all, at}. Concurrent writers cannot lose each
// other's entries, as they could updates of one shared document (FerretDB v1 loses concurrent
// updates of one document made over several connections).
//
// colRevisions holds one document per organization, {_id: <org id>, rev, at}, whose rev each
// Touch sets, after inserting its entry, to the entry's rev: the net under the log. A watcher
// that finds an organization's revision changed to a value that no entry it has seen carries
// (the entry was deleted, is late, or is older than what the watcher reads) reports the whole
// organization. A random rev, rather than a counter, needs only $set by _id (FerretDB loses
// concurrent $inc), and any two writers still leave a value that differs from what a watcher
// saw before either of them.
const (
	colRevisions = "org_revisions"
	colChanges   = "org_changes"
)

// pollInterval is how often WatchChanges reads the revisions and the log when no change stream
// is available, well inside the one second within which another process must see a change.
const pollInterval = 100 * time.Millisecond

// pollTimeout bounds one poll (a read of the revisions, then of the log), so that a store that
// stops answering is noticed (synced(false)) within a fraction of a second rather than after
// the driver's own timeouts. A poll takes milliseconds; one that takes this long is as good as
// lost. With pollInterval it stays within the half second a cache of the store is trusted
// unconfirmed (authz.maxStaleness), so a slow but answering store does not make the cache
// distrusted.
const pollTimeout = 350 * time.Millisecond

// logWindow is how far before the newest entry it has seen a poll reads the log back. An
// entry's _id is an ObjectID, made from the clock of the process that inserts it when it
// does, and entries commit in no particular order of their ids; so the log is read from a
// little before the newest id seen, and what a poll reads again is recognised by its _id.
//
// This assumes that the clocks of the processes sharing the store agree to within logWindow,
// less the time an insert takes to commit. An entry that arrives further behind is not read;
// the revisions then report its organization as a whole, unless a later Touch of the same
// organization, whose entry was read, set the revision again before the watcher looked.
const logWindow = 5 * time.Second

// logRetention is how long entries are kept; a watcher deletes older ones every pruneEvery.
// It is a delete by each watcher rather than a TTL index because FerretDB v1 has no TTL
// indexes, and one way for every deployment is the way the tests exercise.
const (
	logRetention = time.Hour
	pruneEvery   = time.Minute
)

// stallLimit is how long a watcher may go without reading the store (the process was paused,
// say) before it reports every organization it has seen: the entries it missed may have been
// deleted meanwhile.
const stallLimit = logRetention / 2

// maxNamed is the most users and groups one entry names; a change that names more is written
// as one of the whole organization, which keeps every entry far below the size limit of a
// document.
const maxNamed = 1000

// changeDoc is an entry of the log.
type changeDoc struct {
	ID     bson.ObjectID `bson:"_id"`
	OrgID  string        `bson:"org_id"`
	Rev    string        `bson:"rev"`
	Users  []string      `bson:"users,omitempty"`
	Groups []string      `bson:"groups,omitempty"`
	All    bool          `bson:"all,omitempty"` // the _id says when
}

func newChangeDoc(c storage.Change, rev string, now time.Time) changeDoc {
	d := changeDoc{ID: bson.NewObjectIDFromTimestamp(now), OrgID: c.OrgID, Rev: rev, Users: c.Users, Groups: c.Groups, All: c.Org}
	if d.All || len(d.Users)+len(d.Groups) > maxNamed {
		d.Users, d.Groups, d.All = nil, nil, true
	}
	return d
}

func (d changeDoc) change() storage.Change {
	return storage.Change{OrgID: d.OrgID, Users: d.Users, Groups: d.Groups, Org: d.All}
}

// revDoc is an organization's revision.
type revDoc struct {
	OrgID string `bson:"_id"`
	Rev   string `bson:"rev"`
}

// Touch inserts an entry for c in the log, then sets the organization's revision to the
// entry's rev. The order is what lets a watcher trust the log: a revision it reads names an
// entry already there to be read.
func (s *Store) Touch(ctx context.Context, c storage.Change) error {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	rev := hex.EncodeToString(b[:])
	now := time.Now()
	if _, err := s.db.Collection(colChanges).InsertOne(ctx, newChangeDoc(c, rev, now)); err != nil {
		return fmt.Errorf("touch organization %s: %w", c.OrgID, mapErr(err))
	}
	set := func() error {
		_, err := s.db.Collection(colRevisions).UpdateOne(ctx, bson.D{{Key: "_id", Value: c.OrgID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "rev", Value: rev}, {Key: "at", Value: now.UTC()}}}},
			options.UpdateOne().SetUpsert(true))
		return err
	}
	err := set()
	if mongo.IsDuplicateKeyError(err) {
		// Two first Touches of an organization raced to insert its revision (FerretDB does
		// not retry an upsert that lost): the document is there now, to update.
		err = set()
	}
	if err != nil {
		return fmt.Errorf("touch organization %s: %w", c.OrgID, mapErr(err))
	}
	return nil
}

// WatchChanges follows the log and the revisions with a change stream where the deployment
// offers one (a replica set or a sharded cluster) and, where it does not (a standalone server,
// FerretDB) or when the stream fails, by reading the revisions and then the log's recent
// entries each pollInterval. It reports each entry once, as the change it names, and every
// organization whose revision changed to a value no entry it has seen carries as a change of
// the whole organization. After a stream fails, a read fails, or the watcher stalls, every
// organization seen so far is reported, since changes may have gone unseen meanwhile. It also
// deletes entries older than logRetention.
func (s *Store) WatchChanges(ctx context.Context, changed func(storage.Change), synced func(fresh bool)) error {
	var pruning sync.WaitGroup
	pruning.Go(func() { s.pruneChanges(ctx) })
	defer pruning.Wait()

	// The stream opens before the first read, so that no change falls between the two.
	stream, streamErr := s.db.Watch(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{
		{Key: "ns.coll", Value: bson.D{{Key: "$in", Value: bson.A{colChanges, colRevisions}}}},
	}}}}, options.ChangeStream().SetMaxAwaitTime(pollInterval))
	w := newWatch(changed, time.Now())
	failed := s.poll(ctx, w, true) != nil
	if streamErr == nil {
		if !failed {
			synced(true)
		}
		follow(ctx, stream, w, synced)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		failed = true // what changed since the stream broke is not known
		synced(false)
	} else {
		synced(!failed)
	}
	lastRead := time.Now()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := s.poll(ctx, w, false); err != nil {
			failed = true
			synced(false)
			continue
		}
		if failed || time.Since(lastRead) > stallLimit {
			w.all()
			failed = false
		}
		lastRead = time.Now()
		synced(true)
	}
}

// watch is what a watcher knows of the feed, whether it reads it by polls or by a stream.
type watch struct {
	changed func(storage.Change)
	revs    map[string]string // each organization's revision as last seen
	orgs    map[string]bool   // every organization seen, in a revision or in an entry
	// seen are the entries read whose _id is at or after from, by the organization and rev
	// each set (every Touch draws a rev of its own), with the time of their _id; from only
	// moves forward, so that an entry left out of seen is never read again.
	seen   map[carried]time.Time
	newest time.Time // the time of the newest entry's _id
	from   time.Time
}

// carried is the revision an entry set, of its organization.
type carried struct{ org, rev string }

func newWatch(changed func(storage.Change), now time.Time) *watch {
	return &watch{changed: changed, revs: map[string]string{}, orgs: map[string]bool{},
		seen: map[carried]time.Time{}, from: now.Add(-logWindow).Truncate(time.Second)}
}

// advance moves from to logWindow before the newest entry seen (or before now, if that is
// earlier: a process whose clock is ahead must not make others skip entries), and forgets the
// entries before it.
func (w *watch) advance(now time.Time) {
	if w.newest.IsZero() {
		return
	}
	from := w.newest
	if now.Before(from) {
		from = now
	}
	from = from.Add(-logWindow).Truncate(time.Second) // an ObjectID counts whole seconds
	if !from.After(w.from) {
		return
	}
	w.from = from
	for c, t := range w.seen {
		if t.Before(from) {
			delete(w.seen, c)
		}
	}
}

// entry takes in an entry of the log, and reports it unless it was seen before or baseline
// says it is from before the watcher began.
func (w *watch) entry(d changeDoc, baseline bool) {
	c := carried{d.OrgID, d.Rev}
	if _, seen := w.seen[c]; seen {
		return
	}
	t := d.ID.Timestamp()
	w.seen[c] = t
	w.orgs[d.OrgID] = true
	if t.After(w.newest) {
		w.newest = t
	}
	if !baseline {
		w.changed(d.change())
	}
}

// revision takes in an organization's revision, and reports the whole organization if it
// changed to a value no entry seen carries, unless baseline says it is from before the watcher
// began.
func (w *watch) revision(orgID, rev string, baseline bool) {
	w.orgs[orgID] = true
	if w.revs[orgID] == rev {
		return
	}
	w.revs[orgID] = rev
	if _, seen := w.seen[carried{orgID, rev}]; !baseline && !seen {
		w.changed(storage.Change{OrgID: orgID, Org: true})
	}
}

// all reports every organization seen as a whole.
func (w *watch) all() {
	for _, org := range slices.Sorted(maps.Keys(w.orgs)) {
		w.changed(storage.Change{OrgID: org, Org: true})
	}
}

// poll reads every revision and then the log from w.from, and takes in what it read (only if
// both reads succeeded). The revisions are read first: the entry of every rev read is in the
// log by then. When no revision changed since the last poll, no Touch has finished since, and
// the log is not read: an entry inserted meanwhile is read with the revision its Touch sets
// next, w.from having stayed where it was.
func (s *Store) poll(ctx context.Context, w *watch, baseline bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.pollTimeout)
	defer cancel()
	cur, err := s.db.Collection(colRevisions).Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "rev", Value: 1}}))
	if err != nil {
		return fmt.Errorf("read revisions: %w", mapErr(err))
	}
	var revs []revDoc
	if err := cur.All(ctx, &revs); err != nil {
		return fmt.Errorf("read revisions: %w", mapErr(err))
	}
	if !baseline && !slices.ContainsFunc(revs, func(r revDoc) bool { return w.revs[r.OrgID] != r.Rev }) {
		return nil
	}
	w.advance(time.Now())
	cur, err = s.db.Collection(colChanges).Find(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: firstIDAt(w.from)}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return fmt.Errorf("read changes: %w", mapErr(err))
	}
	var entries []changeDoc
	if err := cur.All(ctx, &entries); err != nil {
		return fmt.Errorf("read changes: %w", mapErr(err))
	}
	for _, d := range entries {
		w.entry(d, baseline)
	}
	for _, r := range revs {
		w.revision(r.OrgID, r.Rev, baseline)
	}
	return nil
}

// pruneChanges deletes the entries older than logRetention, now and every pruneEvery, until
// ctx ends. A delete that fails is tried again the next time.
func (s *Store) pruneChanges(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		prune, cancel := context.WithTimeout(ctx, pruneEvery/2)
		_, _ = s.db.Collection(colChanges).DeleteMany(prune, bson.D{{Key: "_id", Value: bson.D{
			{Key: "$lt", Value: firstIDAt(time.Now().Add(-logRetention))},
		}}})
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// firstIDAt is the least ObjectID of the second t falls in, the bound of a range of _ids by
// time.
func firstIDAt(t time.Time) bson.ObjectID {
	var id bson.ObjectID
	binary.BigEndian.PutUint32(id[:4], uint32(t.Unix()))
	return id
}

// event is what follow reads of a change stream's event.
type event struct {
	Op string `bson:"operationType"`
	NS struct {
		Coll string `bson:"coll"`
	} `bson:"ns"`
	DocumentKey bson.Raw `bson:"documentKey"`
	Full        bson.Raw `bson:"fullDocument"`
	Update      struct {
		Fields bson.Raw `bson:"updatedFields"`
	} `bson:"updateDescription"`
}

// follow takes in every change the stream sees, and calls synced each time the server says
// there is nothing more (at least every pollInterval), until ctx ends or the stream fails;
// then it closes the stream. The stream gives the log's entries and the revisions' updates in
// the order they were made, so an entry comes before the revision it set.
func follow(ctx context.Context, stream *mongo.ChangeStream, w *watch, synced func(bool)) {
	defer stream.Close(context.WithoutCancel(ctx))
	for {
		if !stream.TryNext(ctx) {
			if stream.Err() != nil || ctx.Err() != nil {
				return
			}
			w.advance(time.Now())
			synced(true)
			continue
		}
		var ev event
		if err := stream.Decode(&ev); err != nil {
			w.all() // what changed cannot be told
			continue
		}
		w.event(ev)
	}
}

// event takes in one event of the stream. What it cannot read as an entry inserted or a
// revision set reports what it may have reached as a whole: an organization for a change of
// its revision document, every organization for a change of a collection.
func (w *watch) event(ev event) {
	switch {
	case ev.NS.Coll == colChanges && ev.Op == "insert":
		var d changeDoc
		if err := bson.Unmarshal(ev.Full, &d); err != nil {
			w.all()
			return
		}
		w.entry(d, false)
	case ev.NS.Coll == colChanges && ev.Op == "delete":
		// The deletes of old entries: nothing changed.
	case ev.NS.Coll == colRevisions && (ev.Op == "insert" || ev.Op == "update" || ev.Op == "replace" || ev.Op == "delete"):
		orgID, ok := ev.DocumentKey.Lookup("_id").StringValueOK()
		if !ok {
			w.all()
			return
		}
		doc := ev.Full
		if ev.Op == "update" {
			doc = ev.Update.Fields
		}
		rev, ok := bson.Raw(doc).Lookup("rev").StringValueOK()
		if !ok {
			w.orgs[orgID] = true
			w.changed(storage.Change{OrgID: orgID, Org: true})
			return
		}
		w.revision(orgID, rev, false)
	default:
		w.all()
	}
}
