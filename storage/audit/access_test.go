package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

// accessSeeded is seeded plus a plain group eng holding bob.
func accessSeeded(tb testing.TB) (*audit.Store, int) {
	tb.Helper()
	s, _ := seeded(tb)
	must(tb, s.CreateGroup(tb.Context(), storage.Group{OrgID: org, ID: "eng", DisplayName: "Engineering", Members: []string{"bob"}, CreatedAt: now, ModifiedAt: now}))
	return s, len(events(tb, s))
}

func TestAccessChanges(t *testing.T) {
	actor := storage.Actor{Kind: storage.ActorAPIKey, ID: actorKey}
	system := storage.Actor{Kind: storage.ActorSystem}
	const created, soon, later = "2026-11-22T09:30:00.123Z", "2026-11-22T10:30:00.123Z", "2026-11-22T11:30:00.123Z"
	in := func(d time.Duration) time.Time { return now.Add(d) }
	grant := func(user string, expires time.Time) storage.Grant {
		return storage.Grant{OrgID: org, UserID: user, ResourceID: res, CreatedAt: now, ExpiresAt: expires}
	}
	groupGrant := func(expires time.Time) storage.GroupGrant {
		return storage.GroupGrant{OrgID: org, GroupID: "eng", ResourceID: res, CreatedAt: now, ExpiresAt: expires}
	}
	setGroup := func(ctx context.Context, s *audit.Store, g storage.GroupGrant) error {
		_, err := s.SetGroupGrant(ctx, g)
		return err
	}
	tests := []struct {
		name   string
		change func(ctx context.Context, s *audit.Store) error
		want   []brief
	}{
		{"grant with an expiry", func(ctx context.Context, s *audit.Store) error {
			_, err := s.SetGrant(ctx, grant("bob", in(time.Hour)))
			return err
		}, []brief{{Action: "grant.created", TargetKind: "user", TargetID: "bob", UserID: "bob", SvcID: res, Actor: actor, RequestID: "req-1",
			After: map[string]any{"user_id": "bob", "svc_id": res, "created_at": created, "expires_at": soon}}}},
		{"grant again, unchanged", func(ctx context.Context, s *audit.Store) error {
			_, err := s.SetGrant(ctx, grant("ada", time.Time{}))
			return err
		}, nil},
		{"grant again with an expiry", func(ctx context.Context, s *audit.Store) error {
			_, err := s.SetGrant(ctx, grant("ada", in(time.Hour)))
			return err
		}, []brief{{Action: "grant.updated", TargetKind: "user", TargetID: "ada", UserID: "ada", SvcID: res, Actor: actor, RequestID: "req-1",
			Before: map[string]any{"user_id": "ada", "svc_id": res, "created_at": created},
			After:  map[string]any{"user_id": "ada", "svc_id": res, "created_at": created, "expires_at": soon}}}},
		{"Grant records a new expiry too", func(ctx context.Context, s *audit.Store) error {
			return storage.AddGrant(ctx, s, grant("ada", in(2*time.Hour)))
		}, []brief{{Action: "grant.updated", TargetKind: "user", TargetID: "ada", UserID: "ada", SvcID: res, Actor: actor, RequestID: "req-1",
			Before: map[string]any{"user_id": "ada", "svc_id": res, "created_at": created},
			After:  map[string]any{"user_id": "ada", "svc_id": res, "created_at": created, "expires_at": later}}}},
		{"group grant", func(ctx context.Context, s *audit.Store) error {
			return setGroup(ctx, s, groupGrant(time.Time{}))
		}, []brief{{Action: "group_grant.created", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: actor, RequestID: "req-1",
			After: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created}}}},
		{"group grant again, then with an expiry", func(ctx context.Context, s *audit.Store) error {
			if err := setGroup(context.Background(), s, groupGrant(time.Time{})); err != nil {
				return err
			}
			if err := setGroup(ctx, s, groupGrant(time.Time{})); err != nil {
				return err
			}
			return setGroup(ctx, s, groupGrant(in(time.Hour)))
		}, []brief{
			{Action: "group_grant.updated", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: actor, RequestID: "req-1",
				Before: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created},
				After:  map[string]any{"group_id": "eng", "svc_id": res, "created_at": created, "expires_at": soon}},
			{Action: "group_grant.created", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: system,
				After: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created}},
		}},
		{"group grant revoked, and revoked again", func(ctx context.Context, s *audit.Store) error {
			if err := setGroup(context.Background(), s, groupGrant(time.Time{})); err != nil {
				return err
			}
			for range 2 {
				if _, err := s.RevokeGroupGrant(ctx, org, "eng", res); err != nil {
					return err
				}
			}
			return nil
		}, []brief{
			{Action: "group_grant.revoked", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: actor, RequestID: "req-1",
				Before: map[string]any{"group_id": "eng", "svc_id": res}},
			{Action: "group_grant.created", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: system,
				After: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created}},
		}},
		{"expired grants cleaned up, by Grantry itself", func(ctx context.Context, s *audit.Store) error {
			bg := context.Background()
			if _, err := s.SetGrant(bg, grant("bob", in(time.Hour))); err != nil {
				return err
			}
			if err := setGroup(bg, s, groupGrant(in(time.Hour))); err != nil {
				return err
			}
			gone, err := s.DeleteExpiredGrants(bg, in(time.Hour))
			if err == nil && (len(gone.Users) != 1 || len(gone.Groups) != 1) {
				t.Errorf("DeleteExpiredGrants = %+v, want bob's grant and eng's", gone)
			}
			return err
		}, []brief{
			{Action: "group_grant.expired", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: system,
				Before: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created, "expires_at": soon}},
			{Action: "grant.expired", TargetKind: "user", TargetID: "bob", UserID: "bob", SvcID: res, Actor: system,
				Before: map[string]any{"user_id": "bob", "svc_id": res, "created_at": created, "expires_at": soon}},
			{Action: "group_grant.created", TargetKind: "group", TargetID: "eng", SvcID: res, Actor: system,
				After: map[string]any{"group_id": "eng", "svc_id": res, "created_at": created, "expires_at": soon}},
			{Action: "grant.created", TargetKind: "user", TargetID: "bob", UserID: "bob", SvcID: res, Actor: system,
				After: map[string]any{"user_id": "bob", "svc_id": res, "created_at": created, "expires_at": soon}},
		}},
		{"nothing expired, nothing recorded", func(ctx context.Context, s *audit.Store) error {
			_, err := s.DeleteExpiredGrants(ctx, in(time.Hour))
			return err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, before := accessSeeded(t)
			must(t, tt.change(actorCtx(t), s))
			all := events(t, s)
			var got []brief
			for _, e := range all[:len(all)-before] {
				got = append(got, briefOf(t, e))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("new events, newest first (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGrantEventsAtomicOrAfter checks that grants and revokes record the same events whether
// the store writes them with the change (the embedded store) or the decorator appends them
// after it (any other store; here the embedded one behind a type that hides the way).
func TestGrantEventsAtomicOrAfter(t *testing.T) {
	grant := storage.Grant{OrgID: org, UserID: "bob", ResourceID: res, CreatedAt: now}
	later := grant
	later.ExpiresAt = now.Add(time.Hour)
	steps := []struct {
		name   string
		change func(ctx context.Context, s *audit.Store) error
	}{
		{"grant", func(ctx context.Context, s *audit.Store) error { return storage.AddGrant(ctx, s, grant) }},
		{"grant again", func(ctx context.Context, s *audit.Store) error { return storage.AddGrant(ctx, s, grant) }},
		{"set expiry", func(ctx context.Context, s *audit.Store) error { _, err := s.SetGrant(ctx, later); return err }},
		{"revoke", func(ctx context.Context, s *audit.Store) error { return storage.Revoke(ctx, s, org, "bob", res) }},
		{"revoke again", func(ctx context.Context, s *audit.Store) error { return storage.Revoke(ctx, s, org, "bob", res) }},
		{"grant to unknown user", func(ctx context.Context, s *audit.Store) error {
			return storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "zed", ResourceID: res, CreatedAt: now})
		}},
	}
	// trail makes the steps and returns, for each, whether it failed and the events it added.
	trail := func(s *audit.Store, before int) []brief {
		var out []brief
		for _, st := range steps {
			err := st.change(actorCtx(t), s)
			out = append(out, brief{Action: fmt.Sprintf("%s: failed %t", st.name, err != nil)})
			all := events(t, s) // newest first
			for _, e := range all[:len(all)-before] {
				out = append(out, briefOf(t, e))
			}
			before = len(all)
		}
		return out
	}
	atomic, n := seeded(t)
	after, m := seededOn(t, struct{ storage.Store }{bolttest.Open(t)})
	if diff := cmp.Diff(trail(atomic, n), trail(after, m)); diff != "" {
		t.Errorf("events written with the change (-) and after it (+) differ:\n%s", diff)
	}
}
