package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/grantry/grantry/storage"
)

// The actions of group grants and expiring grants.
const (
	// ActionGrantUpdated is a grant given again with another expiry.
	ActionGrantUpdated = "grant.updated"
	// ActionGrantExpired is a grant removed by the clean-up after it expired.
	ActionGrantExpired      = "grant.expired"
	ActionGroupGrantCreated = "group_grant.created"
	ActionGroupGrantUpdated = "group_grant.updated"
	ActionGroupGrantRevoked = "group_grant.revoked"
	ActionGroupGrantExpired = "group_grant.expired"
)

// atomicGrants is a store that writes a grant's change and its events in one transaction, as
// the embedded store does: the two cannot part, and one commit serves both, which halves the
// commits, and so the time, of a grant or a revoke. record is called within the transaction,
// perhaps more than once; the events it returns are written only if the change is.
type atomicGrants interface {
	SetGrantRecorded(ctx context.Context, g storage.Grant, record func(prev *storage.Grant) []storage.Event) (*storage.Grant, error)
	RevokeRecorded(ctx context.Context, orgID, userID, resourceID string, record func(removed bool) []storage.Event) (bool, error)
}

// SetGrant grants the resource, or gives the grant another expiry, and records grant.created
// or grant.updated (with the grant before and after); granting what is granted, with the same
// expiry, records nothing.
func (s *Store) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	if as, ok := s.Store.(atomicGrants); ok {
		return as.SetGrantRecorded(ctx, g, func(prev *storage.Grant) []storage.Event {
			return s.stamp(ctx, setGrantEvents(g, prev))
		})
	}
	prev, err := s.Store.SetGrant(ctx, g)
	if err != nil {
		return nil, err
	}
	return prev, s.record(ctx, setGrantEvents(g, prev)...)
}

// setGrantEvents says what SetGrant changed: g is what was asked, prev the grant before.
func setGrantEvents(g storage.Grant, prev *storage.Grant) []storage.Event {
	e := storage.Event{OrgID: g.OrgID, TargetKind: "user", TargetID: g.UserID, UserID: g.UserID, SvcID: g.ResourceID}
	switch {
	case prev == nil:
		e.Action, e.After = ActionGrantCreated, grantSnapshot(g.UserID, g.ResourceID, g.CreatedAt, g.ExpiresAt)
	case !prev.ExpiresAt.Equal(g.ExpiresAt):
		e.Action = ActionGrantUpdated
		e.Before = grantSnapshot(g.UserID, g.ResourceID, prev.CreatedAt, prev.ExpiresAt)
		e.After = grantSnapshot(g.UserID, g.ResourceID, prev.CreatedAt, g.ExpiresAt)
	default:
		return nil
	}
	return []storage.Event{e}
}

// SetGroupGrant grants the resource to the group, or gives the group grant another expiry,
// and records group_grant.created or group_grant.updated; nothing when nothing changed.
func (s *Store) SetGroupGrant(ctx context.Context, g storage.GroupGrant) (*storage.GroupGrant, error) {
	prev, err := s.Store.SetGroupGrant(ctx, g)
	if err != nil {
		return nil, err
	}
	e := storage.Event{OrgID: g.OrgID, TargetKind: "group", TargetID: g.GroupID, SvcID: g.ResourceID}
	switch {
	case prev == nil:
		e.Action, e.After = ActionGroupGrantCreated, groupGrantSnapshot(g.GroupID, g.ResourceID, g.CreatedAt, g.ExpiresAt)
	case !prev.ExpiresAt.Equal(g.ExpiresAt):
		e.Action = ActionGroupGrantUpdated
		e.Before = groupGrantSnapshot(g.GroupID, g.ResourceID, prev.CreatedAt, prev.ExpiresAt)
		e.After = groupGrantSnapshot(g.GroupID, g.ResourceID, prev.CreatedAt, g.ExpiresAt)
	default:
		return prev, nil
	}
	return prev, s.record(ctx, e)
}

// RevokeGroupGrant revokes the group grant and records group_grant.revoked if there was one.
func (s *Store) RevokeGroupGrant(ctx context.Context, orgID, groupID, resourceID string) (bool, error) {
	removed, err := s.Store.RevokeGroupGrant(ctx, orgID, groupID, resourceID)
	if err != nil || !removed {
		return removed, err
	}
	return true, s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionGroupGrantRevoked, TargetKind: "group", TargetID: groupID, SvcID: resourceID,
		Before: groupGrantSnapshot(groupID, resourceID, time.Time{}, time.Time{}),
	})
}

// DeleteExpiredGrants removes the expired grants and records grant.expired or
// group_grant.expired for each, with the grant as it was, in its own organization. Grants
// removed before an error are recorded all the same.
func (s *Store) DeleteExpiredGrants(ctx context.Context, now time.Time) (storage.ExpiredGrants, error) {
	gone, err := s.Store.DeleteExpiredGrants(ctx, now)
	events := make([]storage.Event, 0, len(gone.Users)+len(gone.Groups))
	for _, g := range gone.Users {
		events = append(events, storage.Event{
			OrgID: g.OrgID, Action: ActionGrantExpired, TargetKind: "user", TargetID: g.UserID, UserID: g.UserID, SvcID: g.ResourceID,
			Before: grantSnapshot(g.UserID, g.ResourceID, g.CreatedAt, g.ExpiresAt),
		})
	}
	for _, g := range gone.Groups {
		events = append(events, storage.Event{
			OrgID: g.OrgID, Action: ActionGroupGrantExpired, TargetKind: "group", TargetID: g.GroupID, SvcID: g.ResourceID,
			Before: groupGrantSnapshot(g.GroupID, g.ResourceID, g.CreatedAt, g.ExpiresAt),
		})
	}
	if rerr := s.record(ctx, events...); rerr != nil && err == nil {
		err = rerr
	}
	return gone, err
}

// groupGrantSnapshot leaves created_at out when it is not known (a revoked grant), and
// expires_at when the grant never expires.
func groupGrantSnapshot(groupID, resourceID string, created, expires time.Time) json.RawMessage {
	return holdingSnapshot("group_id", groupID, resourceID, created, expires)
}
