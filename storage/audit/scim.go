package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/grantry/grantry/storage"
)

// The actions of changes made through SCIM.
const (
	ActionUserDeactivated = "user.deactivated"
	ActionUserReactivated = "user.reactivated"
	ActionUserDeleted     = "user.deleted"
	ActionGroupCreated    = "group.created"
	ActionGroupUpdated    = "group.updated"
	ActionGroupDeleted    = "group.deleted"
)

// CreateSCIMIntegration stores the integration and its token and records
// auth_integration.created, with the token's id and prefix but never its hash.
func (s *Store) CreateSCIMIntegration(ctx context.Context, a storage.AuthIntegration, t storage.SCIMToken) error {
	if err := s.Store.CreateSCIMIntegration(ctx, a, t); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: a.OrgID, Action: ActionAuthIntegrationCreated, TargetKind: "auth_integration", TargetID: a.ID,
		After: scimIntegrationSnapshot(a, t),
	})
}

// CreateUser stores the user and records user.created.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	if err := s.Store.CreateUser(ctx, u); err != nil {
		return err
	}
	stored, err := s.Store.GetUser(ctx, u.OrgID, u.ID) // with the integration's name, as stored
	if err != nil {
		stored = u
	}
	return s.record(ctx, storage.Event{
		OrgID: u.OrgID, Action: ActionUserCreated, TargetKind: "user", TargetID: u.ID, UserID: u.ID, After: userSnapshot(stored),
	})
}

// UpdateUser changes the user and records, when anything an auditor sees changed,
// user.deactivated or user.reactivated if the active flag flipped, and user.updated otherwise.
// fn may run more than once; the user it saw on its last run is the one before the change.
func (s *Store) UpdateUser(ctx context.Context, orgID, integrationID, id string, fn func(*storage.User) error) (storage.User, error) {
	var before storage.User
	after, err := s.Store.UpdateUser(ctx, orgID, integrationID, id, func(u *storage.User) error {
		before = *u
		return fn(u)
	})
	if err != nil {
		return after, err
	}
	if !userChanged(before, after) {
		return after, nil
	}
	action := ActionUserUpdated
	switch {
	case before.Active && !after.Active:
		action = ActionUserDeactivated
	case !before.Active && after.Active:
		action = ActionUserReactivated
	}
	return after, s.record(ctx, storage.Event{
		OrgID: orgID, Action: action, TargetKind: "user", TargetID: id, UserID: id, Before: userSnapshot(before), After: userSnapshot(after),
	})
}

// userChanged reports whether anything but the modification time differs. Attributes (SCIM's
// or an import's) are not in the snapshots, but a change to them is a change all the same.
func userChanged(a, b storage.User) bool {
	return a.Email != b.Email || a.First != b.First || a.Last != b.Last || a.Active != b.Active ||
		a.ExternalID != b.ExternalID || !bytes.Equal(a.Attributes, b.Attributes)
}

// DeleteUser removes the user, its grants and its memberships, and records user.deleted with
// the user as it was.
func (s *Store) DeleteUser(ctx context.Context, orgID, integrationID, id string, now time.Time) error {
	u, err := s.Store.GetUser(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	if err := s.Store.DeleteUser(ctx, orgID, integrationID, id, now); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionUserDeleted, TargetKind: "user", TargetID: id, UserID: id, Before: userSnapshot(u),
	})
}

// CreateGroup stores the group and records group.created.
func (s *Store) CreateGroup(ctx context.Context, g storage.Group) error {
	if err := s.Store.CreateGroup(ctx, g); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: g.OrgID, Action: ActionGroupCreated, TargetKind: "group", TargetID: g.ID, After: groupSnapshot(g),
	})
}

// UpdateGroup changes the group and records group.updated when its name, external id or
// members changed.
func (s *Store) UpdateGroup(ctx context.Context, orgID, integrationID, id string, fn func(*storage.Group) error) (storage.Group, error) {
	before, after, err := storage.UpdateGroupFrom(ctx, s.Store, orgID, integrationID, id, fn)
	if err != nil {
		return after, err
	}
	was, is := groupSnapshot(before), groupSnapshot(after)
	if bytes.Equal(was, is) {
		return after, nil
	}
	return after, s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionGroupUpdated, TargetKind: "group", TargetID: id, Before: was, After: is,
	})
}

// DeleteGroup removes the group and records group.deleted with the group as it was.
func (s *Store) DeleteGroup(ctx context.Context, orgID, integrationID, id string) error {
	g, err := s.Store.GetGroup(ctx, orgID, integrationID, id)
	if err != nil {
		return fmt.Errorf("delete group %s: %w", id, err)
	}
	if err := s.Store.DeleteGroup(ctx, orgID, integrationID, id); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionGroupDeleted, TargetKind: "group", TargetID: id, Before: groupSnapshot(g),
	})
}

func scimIntegrationSnapshot(a storage.AuthIntegration, t storage.SCIMToken) json.RawMessage {
	return snapshot(struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Metadata    string `json:"metadata"`
		Type        string `json:"type"`
		TokenID     string `json:"scim_token_id"`
		TokenPrefix string `json:"scim_token_prefix"`
		CreatedAt   string `json:"created_at"`
	}{a.ID, a.Name, a.Metadata, a.Type, t.ID, t.Prefix, timestamp(a.CreatedAt)})
}

// groupSnapshot leaves out ModifiedAt, so that a write that changed nothing an auditor sees
// compares equal.
func groupSnapshot(g storage.Group) json.RawMessage {
	members := g.Members
	if members == nil {
		members = []string{}
	}
	return snapshot(struct {
		ID                string   `json:"id"`
		AuthIntegrationID string   `json:"auth_integration_id"`
		DisplayName       string   `json:"display_name"`
		ExternalID        string   `json:"external_id,omitempty"`
		Members           []string `json:"members"`
		CreatedAt         string   `json:"created_at"`
	}{g.ID, g.IntegrationID, g.DisplayName, g.ExternalID, members, timestamp(g.CreatedAt)})
}

// The actions of a SCIM token's lifecycle and of an integration's removal.
const (
	ActionSCIMTokenRotated       = "scim_token.rotated"
	ActionSCIMTokenRevoked       = "scim_token.revoked"
	ActionAuthIntegrationDeleted = "auth_integration.deleted"
)

// SetSCIMToken replaces or removes the integration's token and records scim_token.rotated or
// scim_token.revoked, with the tokens' ids and prefixes but never their hashes.
func (s *Store) SetSCIMToken(ctx context.Context, orgID, integrationID string, t *storage.SCIMToken) (*storage.SCIMToken, error) {
	old, err := s.Store.SetSCIMToken(ctx, orgID, integrationID, t)
	if err != nil {
		return old, err
	}
	action := ActionSCIMTokenRotated
	if t == nil {
		action = ActionSCIMTokenRevoked
	}
	return old, s.record(ctx, storage.Event{
		OrgID: orgID, Action: action, TargetKind: "auth_integration", TargetID: integrationID,
		Before: scimTokenSnapshot(old), After: scimTokenSnapshot(t),
	})
}

// DeleteAuthIntegration removes the integration with its token, users and groups, and records
// auth_integration.deleted, and user.deleted and group.deleted for each of its users and
// groups, each with the record as it was read just before.
func (s *Store) DeleteAuthIntegration(ctx context.Context, orgID, id string, now time.Time) (storage.RemovedIntegration, error) {
	users, _, err := s.Store.IntegrationUsers(ctx, orgID, id, 0, -1)
	if err != nil {
		return storage.RemovedIntegration{}, fmt.Errorf("delete auth integration %s: read users before: %w", id, err)
	}
	groups, _, err := s.Store.IntegrationGroups(ctx, orgID, id, 0, -1)
	if err != nil {
		return storage.RemovedIntegration{}, fmt.Errorf("delete auth integration %s: read groups before: %w", id, err)
	}
	removed, err := s.Store.DeleteAuthIntegration(ctx, orgID, id, now)
	if err != nil {
		return removed, err
	}
	userBefore := make(map[string]storage.User, len(users))
	for _, u := range users {
		userBefore[u.ID] = u
	}
	groupBefore := make(map[string]storage.Group, len(groups))
	for _, g := range groups {
		groupBefore[g.ID] = g
	}
	events := []storage.Event{{OrgID: orgID, Action: ActionAuthIntegrationDeleted, TargetKind: "auth_integration", TargetID: id,
		Before: integrationSnapshot(removed.Integration)}}
	for _, g := range removed.Groups {
		e := storage.Event{OrgID: orgID, Action: ActionGroupDeleted, TargetKind: "group", TargetID: g}
		if was, ok := groupBefore[g]; ok {
			e.Before = groupSnapshot(was)
		}
		events = append(events, e)
	}
	for _, u := range removed.Users {
		e := storage.Event{OrgID: orgID, Action: ActionUserDeleted, TargetKind: "user", TargetID: u, UserID: u}
		if was, ok := userBefore[u]; ok {
			e.Before = userSnapshot(was)
		}
		events = append(events, e)
	}
	return removed, s.record(ctx, events...)
}

// scimTokenSnapshot is a token as the trail shows it: its id and prefix, or null.
func scimTokenSnapshot(t *storage.SCIMToken) json.RawMessage {
	if t == nil {
		return nil
	}
	return snapshot(struct {
		ID        string `json:"scim_token_id"`
		Prefix    string `json:"scim_token_prefix"`
		CreatedAt string `json:"created_at"`
	}{t.ID, t.Prefix, timestamp(t.CreatedAt)})
}
