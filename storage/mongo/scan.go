package mongo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/grantry/grantry/storage"
)

// scanBatch is how many documents a scan's cursor asks for in one round trip: enough that the
// round trips cost little next to decoding, few enough that a cursor holds a few hundred KiB
// rather than the server's 16 MiB batches.
const scanBatch = 2000

// membershipDoc is one member of one group, as membershipPipeline unwinds groupDoc.Members:
// the group's _id, and in members the one member's user id. (FerretDB's $unwind keeps no
// other field, so the group's id is read back from its _id.)
type membershipDoc struct {
	Key    string `bson:"_id"`
	Member string `bson:"members"`
}

// membershipPipeline turns the organization's groups into one document per member, ordered
// by member: the order in which ScanUsers meets the organization's users. No index can serve
// that order (members is a list), so the server sorts; allowDiskUse lets MongoDB sort more
// than fits in its memory limit on disk rather than fail.
func membershipPipeline(orgID string) mongo.Pipeline {
	return mongo.Pipeline{
		{{Key: "$match", Value: orgFilter(orgID)}},
		{{Key: "$project", Value: bson.D{{Key: "members", Value: 1}}}},
		{{Key: "$unwind", Value: "$members"}},
		{{Key: "$sort", Value: bson.D{{Key: "members", Value: 1}, {Key: "_id", Value: 1}}}},
	}
}

// ScanUsers merges three streams, each ordered by organization and user: the users (the
// users' (org_id, id) index), their grants (the grants' (org_id, user_id, …) index) and, an
// organization at a time, the memberships (membershipPipeline). Each stream is read a batch at
// a time, so a scan holds one user's grants and groups, not a collection. A grant or
// membership whose user the users stream does not have (one being deleted) is passed over. It
// is not a snapshot: see storage.FactsScanner.
func (s *Store) ScanUsers(ctx context.Context, fn func(u storage.ScannedUser) error) error {
	if err := s.scanUsers(ctx, fn); err != nil {
		return fmt.Errorf("scan users: %w", err)
	}
	return nil
}

func (s *Store) scanUsers(ctx context.Context, fn func(u storage.ScannedUser) error) error {
	users, err := findStream(ctx, s.users, bson.D{{Key: "org_id", Value: 1}, {Key: "id", Value: 1}}, nil,
		func(d *userDoc) (string, string) { return d.OrgID, d.ID })
	if err != nil {
		return fmt.Errorf("users: %w", err)
	}
	defer users.close(ctx)
	grants, err := findStream(ctx, s.grants,
		bson.D{{Key: "org_id", Value: 1}, {Key: "user_id", Value: 1}, {Key: "created_at", Value: 1}, {Key: "resource_id", Value: 1}},
		bson.D{{Key: "_id", Value: 0}, {Key: "org_id", Value: 1}, {Key: "user_id", Value: 1}, {Key: "resource_id", Value: 1}, {Key: "expires_at", Value: 1}},
		func(d *grantDoc) (string, string) { return d.OrgID, d.UserID })
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	defer grants.close(ctx)
	var (
		members    *stream[membershipDoc] // of the organization of the user being read
		membersOrg string
	)
	defer func() {
		if members != nil {
			members.close(ctx)
		}
	}()

	var (
		u         storage.ScannedUser
		resources = internedIDs{}
		groupIDs  = internedIDs{}
	)
	for users.ok {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := users.doc
		if members == nil || membersOrg != d.OrgID {
			if members != nil {
				members.close(ctx)
			}
			if members, err = s.membershipStream(ctx, d.OrgID); err != nil {
				return fmt.Errorf("memberships of %s: %w", d.OrgID, err)
			}
			membersOrg = d.OrgID
		}
		u = storage.ScannedUser{User: d.record(), Groups: u.Groups[:0], Grants: u.Grants[:0]}
		if err := grants.each(ctx, d.OrgID, d.ID, func(g *grantDoc) error {
			r := g.record()
			u.Grants = append(u.Grants, storage.ScannedGrant{ResourceID: resources.id(r.ResourceID), ExpiresAt: r.ExpiresAt})
			return nil
		}); err != nil {
			return fmt.Errorf("grants: %w", err)
		}
		slices.SortFunc(u.Grants, compareScannedGrants)
		if err := members.each(ctx, d.OrgID, d.ID, func(m *membershipDoc) error {
			parts, ok := splitKey(m.Key)
			if !ok || len(parts) != 2 || parts[0] != d.OrgID {
				return fmt.Errorf("group _id %q: not one of %s", m.Key, d.OrgID)
			}
			u.Groups = append(u.Groups, groupIDs.id(parts[1]))
			return nil
		}); err != nil {
			return fmt.Errorf("memberships of %s: %w", d.OrgID, err)
		}
		slices.Sort(u.Groups) // in the order of their _id, which escaping may change
		if err := users.advance(ctx); err != nil {
			return fmt.Errorf("users: %w", err)
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// membershipStream opens a stream of the memberships of the organization's groups. Its holder
// is the organization and the member, so that it merges with the users.
func (s *Store) membershipStream(ctx context.Context, orgID string) (*stream[membershipDoc], error) {
	cur, err := s.groups().Aggregate(ctx, membershipPipeline(orgID), options.Aggregate().SetAllowDiskUse(true).SetBatchSize(scanBatch))
	if err != nil {
		return nil, mapErr(err)
	}
	return newStream(ctx, cur, func(d *membershipDoc) (string, string) { return orgID, d.Member })
}

// ScanGroups merges two streams ordered by organization and group: the groups, without their
// members (the groups' (org_id, id) index), and their grants (the group grants' (org_id,
// group_id, …) index). It is not a snapshot: see storage.FactsScanner.
func (s *Store) ScanGroups(ctx context.Context, fn func(g storage.ScannedGroup) error) error {
	if err := s.scanGroups(ctx, fn); err != nil {
		return fmt.Errorf("scan groups: %w", err)
	}
	return nil
}

func (s *Store) scanGroups(ctx context.Context, fn func(g storage.ScannedGroup) error) error {
	groups, err := findStream(ctx, s.groups(), bson.D{{Key: "org_id", Value: 1}, {Key: "id", Value: 1}},
		bson.D{{Key: "members", Value: 0}, {Key: "member_displays", Value: 0}},
		func(d *groupDoc) (string, string) { return d.OrgID, d.ID })
	if err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	defer groups.close(ctx)
	grants, err := findStream(ctx, s.groupGrants(),
		bson.D{{Key: "org_id", Value: 1}, {Key: "group_id", Value: 1}, {Key: "created_at", Value: 1}, {Key: "resource_id", Value: 1}},
		bson.D{{Key: "_id", Value: 0}, {Key: "org_id", Value: 1}, {Key: "group_id", Value: 1}, {Key: "resource_id", Value: 1}, {Key: "expires_at", Value: 1}},
		func(d *groupGrantDoc) (string, string) { return d.OrgID, d.GroupID })
	if err != nil {
		return fmt.Errorf("group grants: %w", err)
	}
	defer grants.close(ctx)

	var (
		g         storage.ScannedGroup
		resources = internedIDs{}
	)
	for groups.ok {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec := groups.doc.record()
		g = storage.ScannedGroup{OrgID: rec.OrgID, GroupID: rec.ID, DisplayName: rec.DisplayName, Grants: g.Grants[:0]}
		if err := grants.each(ctx, rec.OrgID, rec.ID, func(d *groupGrantDoc) error {
			r := d.record()
			g.Grants = append(g.Grants, storage.ScannedGrant{ResourceID: resources.id(r.ResourceID), ExpiresAt: r.ExpiresAt})
			return nil
		}); err != nil {
			return fmt.Errorf("group grants: %w", err)
		}
		slices.SortFunc(g.Grants, compareScannedGrants)
		if err := groups.advance(ctx); err != nil {
			return fmt.Errorf("groups: %w", err)
		}
		if err := fn(g); err != nil {
			return err
		}
	}
	return nil
}

// compareScannedGrants orders a holder's grants by resource id. The streams give them in
// CreatedAt order, which the grants' index serves; a holder's grants are few enough to sort.
func compareScannedGrants(a, b storage.ScannedGrant) int {
	return strings.Compare(a.ResourceID, b.ResourceID)
}

// stream is a cursor read one document ahead, whose documents come ordered by the holder that
// holder names (organization id, then user or group id), so that streams can be merged.
type stream[T any] struct {
	cur    *mongo.Cursor
	holder func(*T) (orgID, id string)
	doc    T    // the next document, if ok
	ok     bool // false at the end
	// org and id are the holder of the last document read, to catch a server that sorts
	// otherwise than Go compares strings: a merge would then pass over documents unseen.
	org, id string
}

// findStream opens a stream of every document of col, in the order of sort, with only the
// fields projection keeps (every field if it is nil).
func findStream[T any](ctx context.Context, col *mongo.Collection, sort, projection bson.D, holder func(*T) (string, string)) (*stream[T], error) {
	opts := options.Find().SetSort(sort).SetBatchSize(scanBatch)
	if projection != nil {
		opts.SetProjection(projection)
	}
	cur, err := col.Find(ctx, bson.D{}, opts)
	if err != nil {
		return nil, mapErr(err)
	}
	return newStream(ctx, cur, holder)
}

// newStream reads the first document of cur.
func newStream[T any](ctx context.Context, cur *mongo.Cursor, holder func(*T) (string, string)) (*stream[T], error) {
	st := &stream[T]{cur: cur, holder: holder}
	if err := st.advance(ctx); err != nil {
		st.close(ctx)
		return nil, err
	}
	return st, nil
}

// advance reads the next document, or sets ok false at the end.
func (st *stream[T]) advance(ctx context.Context) error {
	if !st.cur.Next(ctx) {
		st.ok = false
		return mapErr(st.cur.Err())
	}
	var doc T
	if err := st.cur.Decode(&doc); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	org, id := st.holder(&doc)
	if st.ok && cmp.Or(strings.Compare(org, st.org), strings.Compare(id, st.id)) < 0 {
		return fmt.Errorf("%q of %q came after %q of %q: the server's order is not the scan's", id, org, st.id, st.org)
	}
	st.doc, st.ok, st.org, st.id = doc, true, org, id
	return nil
}

// each passes over the documents of holders before (orgID, id), and calls fn with each of
// (orgID, id)'s own, leaving the stream at the first document of a later holder. An error of
// fn stops it and is returned.
func (st *stream[T]) each(ctx context.Context, orgID, id string, fn func(*T) error) error {
	for st.ok {
		org, holder := st.holder(&st.doc)
		c := cmp.Or(strings.Compare(org, orgID), strings.Compare(holder, id))
		if c > 0 {
			return nil
		}
		if c == 0 {
			if err := fn(&st.doc); err != nil {
				return err
			}
		}
		if err := st.advance(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close closes the cursor, even when ctx has ended, so that the server frees it now rather
// than when it times out.
func (st *stream[T]) close(ctx context.Context) {
	_ = st.cur.Close(context.WithoutCancel(ctx))
}

// internedIDs gives each id one string, however many documents spell it: a scan's grants are
// of few resources, each held by many users, and a caller keeping the ids keeps one copy.
type internedIDs map[string]string

func (ids internedIDs) id(s string) string {
	if id, ok := ids[s]; ok {
		return id
	}
	ids[s] = s
	return s
}
