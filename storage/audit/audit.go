// Package audit keeps Grantry's audit trail. Store wraps a storage.Store and, after each
// change of state succeeds and before it returns, appends an event to the store's EventStore
// saying who (the storage.Actor in the context) did what to which record, when, in which
// request, and what the record was before and after. A change whose event cannot be written is
// reported as failed, so that no change is acknowledged without its event.
//
// Grants and revokes on a store that can write a change and its events in one transaction
// (atomicGrants: the embedded store) hand it their events instead, so the two commit together.
//
// Changes that changed nothing (granting what is granted, revoking what is not, importing a
// user unchanged) write no event: the store reports them atomically with the change, so two
// racing callers never both record one.
//
// Store embeds storage.Store, so a method added to the interface later passes through
// unrecorded until it is wrapped here; wrapping one takes a few lines: call the store, and on
// success call record with the event.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/grantry/grantry/internal/jsonstr"
	"github.com/grantry/grantry/storage"
)

// The actions the trail records, as "<kind>.<verb>".
const (
	ActionOrgCreated             = "org.created"
	ActionAPIKeyCreated          = "api_key.created"
	ActionAPIKeyRevoked          = "api_key.revoked"
	ActionResourceCreated        = "resource.created"
	ActionResourceDeleted        = "resource.deleted"
	ActionResourceSecretReplaced = "resource.secret_replaced"
	ActionResourceSecretRotated  = "resource.secret_rotated"
	ActionAuthIntegrationCreated = "auth_integration.created"
	ActionUserCreated            = "user.created"
	ActionUserUpdated            = "user.updated"
	ActionGrantCreated           = "grant.created"
	ActionGrantRevoked           = "grant.revoked"
)

// writeTimeout bounds the writing of one change's events. The write is detached from the
// request's cancellation: a client that hangs up after its change was applied must not leave
// the change out of the trail.
const writeTimeout = 10 * time.Second

// retries is how many more times a failed event write is tried. Appending is idempotent by
// event id, so a retry never records an event twice.
const retries = 2

// Store is a storage.Store that records every change it makes in the audit trail.
type Store struct {
	storage.Store
	now func() time.Time
	log *slog.Logger
	ids storage.EntryIDs
}

// New returns s with an audit trail. now is the clock of the events' times (nil means
// time.Now); log receives the events that could not be written (nil discards).
func New(s storage.Store, now func() time.Time, log *slog.Logger) *Store {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{Store: s, now: now, log: log}
}

// stamp gives events, all made by one change, their ids, the time, the actor and the request
// id, and returns them.
func (s *Store) stamp(ctx context.Context, events []storage.Event) []storage.Event {
	now := s.now().UTC().Truncate(time.Millisecond)
	actor, requestID := storage.ActorFrom(ctx), storage.RequestIDFrom(ctx)
	for i := range events {
		e := &events[i]
		e.ID, e.Time, e.Actor, e.RequestID = s.ids.New(now), now, actor, requestID
	}
	return events
}

// record appends events, all made by one change, stamped. It is called after the change
// succeeded.
func (s *Store) record(ctx context.Context, events ...storage.Event) error {
	if len(events) == 0 {
		return nil
	}
	s.stamp(ctx, events)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	var err error
	for try := 0; try <= retries; try++ {
		if try > 0 {
			select {
			case <-time.After(time.Duration(try*try) * 50 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		if err = s.Store.AppendEvents(ctx, events); err == nil {
			return nil
		}
	}
	// The change is made but its event is lost: say so loudly, with what the event would
	// have said (snapshots hold no secrets), so that the trail can be mended from the log.
	for _, e := range events {
		s.log.LogAttrs(ctx, slog.LevelError, "audit event not recorded; the change was made",
			slog.String("error", err.Error()), slog.String("event_id", e.ID), slog.String("org_id", e.OrgID),
			slog.String("action", e.Action), slog.String("target_kind", e.TargetKind), slog.String("target_id", e.TargetID),
			slog.String("actor_kind", e.Actor.Kind), slog.String("actor_id", e.Actor.ID), slog.String("request_id", e.RequestID),
			slog.String("user_id", e.UserID), slog.String("svc_id", e.SvcID),
			slog.String("before", string(e.Before)), slog.String("after", string(e.After)))
	}
	return fmt.Errorf("record %s in the audit trail: %w", events[0].Action, err)
}

// CreateOrg creates the organization and records org.created.
func (s *Store) CreateOrg(ctx context.Context, org storage.Org) error {
	if err := s.Store.CreateOrg(ctx, org); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: org.ID, Action: ActionOrgCreated, TargetKind: "org", TargetID: org.ID, After: orgSnapshot(org),
	})
}

// CreateAPIKey stores the key and records api_key.created, without the key's hash.
func (s *Store) CreateAPIKey(ctx context.Context, key storage.APIKey) error {
	if err := s.Store.CreateAPIKey(ctx, key); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: key.OrgID, Action: ActionAPIKeyCreated, TargetKind: "api_key", TargetID: key.ID, After: apiKeySnapshot(key),
	})
}

// DeleteAPIKey revokes the key and records api_key.revoked in the key's organization.
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	key, err := s.Store.GetAPIKey(ctx, id)
	if err != nil {
		return fmt.Errorf("delete api key %s: %w", id, err)
	}
	if err := s.Store.DeleteAPIKey(ctx, id); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: key.OrgID, Action: ActionAPIKeyRevoked, TargetKind: "api_key", TargetID: key.ID, Before: apiKeySnapshot(key),
	})
}

// CreateResource registers the resource and records resource.created, without its secret.
func (s *Store) CreateResource(ctx context.Context, r storage.Resource) error {
	if err := s.Store.CreateResource(ctx, r); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: r.OrgID, Action: ActionResourceCreated, TargetKind: string(r.Kind), TargetID: r.ID, SvcID: r.ID,
		After: resourceSnapshot(r),
	})
}

// DeleteResource removes the resource, and with it every grant of it, and records
// resource.deleted with the resource as it was. The grants it took away are not recorded one
// by one: the trail's grant events say who held them.
func (s *Store) DeleteResource(ctx context.Context, orgID, id string) error {
	r, err := s.Store.GetResource(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("delete resource %s: %w", id, err)
	}
	if err := s.Store.DeleteResource(ctx, orgID, id); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionResourceDeleted, TargetKind: string(r.Kind), TargetID: id, SvcID: id,
		Before: resourceSnapshot(r),
	})
}

// ReplaceSecret replaces the resource's secret and metadata and records
// resource.secret_replaced, with the metadata before and after but never the secret.
func (s *Store) ReplaceSecret(ctx context.Context, orgID, id string, secret []byte, metadata map[string]string) error {
	r, err := s.Store.GetResource(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("replace secret of resource %s: %w", id, err)
	}
	if err := s.Store.ReplaceSecret(ctx, orgID, id, secret, metadata); err != nil {
		return err
	}
	after := r
	after.Metadata = maps.Clone(metadata)
	return s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionResourceSecretReplaced, TargetKind: string(r.Kind), TargetID: id, SvcID: id,
		Before: resourceSnapshot(r), After: resourceSnapshot(after),
	})
}

// SwapSecret re-seals the resource's secret and records resource.secret_rotated. Nothing an
// auditor may see changes, so the event has no snapshots.
func (s *Store) SwapSecret(ctx context.Context, orgID, id string, old, next []byte) error {
	r, err := s.Store.GetResource(ctx, orgID, id)
	if err != nil {
		return fmt.Errorf("swap secret of resource %s: %w", id, err)
	}
	if err := s.Store.SwapSecret(ctx, orgID, id, old, next); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: orgID, Action: ActionResourceSecretRotated, TargetKind: string(r.Kind), TargetID: id, SvcID: id,
	})
}

// CreateAuthIntegration stores the integration and records auth_integration.created.
func (s *Store) CreateAuthIntegration(ctx context.Context, a storage.AuthIntegration) error {
	if err := s.Store.CreateAuthIntegration(ctx, a); err != nil {
		return err
	}
	return s.record(ctx, storage.Event{
		OrgID: a.OrgID, Action: ActionAuthIntegrationCreated, TargetKind: "auth_integration", TargetID: a.ID,
		After: integrationSnapshot(a),
	})
}

// ImportUsers imports the users and records user.created for each new user and user.updated,
// with before and after, for each user whose email, names or attributes changed; users
// imported unchanged record nothing. The users as they were are read before the import; an
// import racing with another may therefore attribute a change to the wrong one of the two.
func (s *Store) ImportUsers(ctx context.Context, orgID, integrationID string, users []storage.UserImport, now time.Time) ([]storage.User, error) {
	before, err := s.Store.ListUsers(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("import users: read users before: %w", err)
	}
	out, err := s.Store.ImportUsers(ctx, orgID, integrationID, users, now)
	after := out
	if err != nil {
		if !errors.Is(err, storage.ErrConflict) {
			return nil, err
		}
		// A refused import may still have written part of itself where the store cannot
		// promise otherwise: record what did change.
		var lerr error
		if after, lerr = s.Store.ListUsers(ctx, orgID); lerr != nil {
			return nil, errors.Join(err, fmt.Errorf("read users after a refused import: %w", lerr))
		}
	}
	if rerr := s.record(ctx, userEvents(orgID, before, after)...); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	return out, err
}

// userEvents compares the users before and after an import.
func userEvents(orgID string, before, after []storage.User) []storage.Event {
	was := make(map[string]storage.User, len(before))
	for _, u := range before {
		was[u.ID] = u
	}
	var events []storage.Event
	seen := make(map[string]bool, len(after))
	for _, u := range after {
		if seen[u.ID] {
			continue
		}
		seen[u.ID] = true
		e := storage.Event{OrgID: orgID, TargetKind: "user", TargetID: u.ID, UserID: u.ID, After: userSnapshot(u)}
		old, ok := was[u.ID]
		switch {
		case !ok:
			e.Action = ActionUserCreated
		case userChanged(old, u):
			e.Action, e.Before = ActionUserUpdated, userSnapshot(old)
		default:
			continue
		}
		events = append(events, e)
	}
	return events
}

// RevokeGrant revokes the grant and records grant.revoked if there was one. (SetGrant, which
// records a grant and a new expiry, is in access.go.)
func (s *Store) RevokeGrant(ctx context.Context, orgID, userID, resourceID string) (bool, error) {
	events := func(removed bool) []storage.Event {
		if !removed {
			return nil
		}
		return []storage.Event{{
			OrgID: orgID, Action: ActionGrantRevoked, TargetKind: "user", TargetID: userID, UserID: userID, SvcID: resourceID,
			Before: grantSnapshot(userID, resourceID, time.Time{}, time.Time{}),
		}}
	}
	if as, ok := s.Store.(atomicGrants); ok {
		return as.RevokeRecorded(ctx, orgID, userID, resourceID, func(removed bool) []storage.Event {
			return s.stamp(ctx, events(removed))
		})
	}
	removed, err := s.Store.RevokeGrant(ctx, orgID, userID, resourceID)
	if err != nil || !removed {
		return removed, err
	}
	return true, s.record(ctx, events(true)...)
}

// The snapshots. Each lists the fields of its record that an auditor needs and none that is a
// secret or derived from one: no Resource.Secret, no APIKey.Hash.

func orgSnapshot(o storage.Org) json.RawMessage {
	return snapshot(struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		CreatedAt string `json:"created_at"`
	}{o.ID, o.Name, timestamp(o.CreatedAt)})
}

func apiKeySnapshot(k storage.APIKey) json.RawMessage {
	return snapshot(struct {
		ID        string `json:"id"`
		OrgID     string `json:"org_id"`
		Prefix    string `json:"prefix"`
		Scope     string `json:"scope,omitempty"`
		CreatedAt string `json:"created_at"`
	}{k.ID, k.OrgID, k.Prefix, k.Scope, timestamp(k.CreatedAt)})
}

func resourceSnapshot(r storage.Resource) json.RawMessage {
	return snapshot(struct {
		ID          string            `json:"id"`
		Kind        storage.Kind      `json:"kind"`
		Source      string            `json:"source"`
		Name        string            `json:"name"`
		Description string            `json:"description,omitempty"`
		Metadata    map[string]string `json:"metadata,omitempty"`
		CreatedAt   string            `json:"created_at"`
	}{r.ID, r.Kind, r.Source, r.Name, r.Description, r.Metadata, timestamp(r.CreatedAt)})
}

func integrationSnapshot(a storage.AuthIntegration) json.RawMessage {
	return snapshot(struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Metadata  string `json:"metadata"`
		Type      string `json:"type"`
		CreatedAt string `json:"created_at"`
	}{a.ID, a.Name, a.Metadata, a.Type, timestamp(a.CreatedAt)})
}

func userSnapshot(u storage.User) json.RawMessage {
	return snapshot(struct {
		ID                  string `json:"id"`
		Email               string `json:"email"`
		First               string `json:"first"`
		Last                string `json:"last"`
		Active              bool   `json:"active"`
		AuthIntegrationID   string `json:"auth_integration_id"`
		AuthIntegrationName string `json:"auth_integration_name"`
		ExternalID          string `json:"external_id,omitempty"`
		ImportedAt          string `json:"imported_at"`
		ModifiedAt          string `json:"modified_at"`
	}{u.ID, u.Email, u.First, u.Last, u.Active, u.IntegrationID, u.IntegrationName, u.ExternalID, timestamp(u.ImportedAt), timestamp(u.ModifiedAt)})
}

// grantSnapshot leaves created_at out when it is not known (a revoked grant), and expires_at
// when the grant never expires.
func grantSnapshot(userID, resourceID string, created, expires time.Time) json.RawMessage {
	return holdingSnapshot("user_id", userID, resourceID, created, expires)
}

// holdingSnapshot is the snapshot of a grant to a user or a group (holder names its field),
// written as json.Marshal would write a struct of those fields, without its reflection: every
// grant and revoke records one.
func holdingSnapshot(holder, holderID, resourceID string, created, expires time.Time) json.RawMessage {
	b := make([]byte, 0, 64+len(holderID)+len(resourceID))
	b = jsonstr.Append(append(append(append(b, '{', '"'), holder...), '"', ':'), holderID)
	b = jsonstr.Append(append(b, `,"svc_id":`...), resourceID)
	for _, t := range []struct {
		name string
		at   time.Time
	}{{`,"created_at":"`, created}, {`,"expires_at":"`, expires}} {
		if !t.at.IsZero() {
			b = append(t.at.UTC().AppendFormat(append(b, t.name...), timestampLayout), '"')
		}
	}
	return append(b, '}')
}

func snapshot(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("audit snapshot: %v", err)) // cannot happen: plain strings, bools and maps of strings
	}
	return raw
}

// timestamp is the API's time format, so that snapshots read like the API's records.
func timestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

const timestampLayout = "2006-01-02T15:04:05.000Z"
