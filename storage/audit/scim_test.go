package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
)

// scimSeeded is seeded plus a SCIM integration with user cat and group eng holding cat.
func scimSeeded(tb testing.TB) (*audit.Store, int) {
	tb.Helper()
	s, _ := seeded(tb)
	ctx := tb.Context()
	must(tb, s.CreateSCIMIntegration(ctx,
		storage.AuthIntegration{OrgID: org, ID: "int-s", Name: "okta", Type: storage.IntegrationSCIM, CreatedAt: now},
		storage.SCIMToken{ID: "tok-1", OrgID: org, IntegrationID: "int-s", Prefix: "gscim_ab", Hash: keyHash, CreatedAt: now}))
	must(tb, s.CreateUser(ctx, storage.User{OrgID: org, ID: "cat", IntegrationID: "int-s", Email: "cat@example.com", Active: true, ImportedAt: now, ModifiedAt: now}))
	must(tb, s.CreateGroup(ctx, storage.Group{OrgID: org, ID: "eng", IntegrationID: "int-s", DisplayName: "Engineering", Members: []string{"cat"}, CreatedAt: now, ModifiedAt: now}))
	return s, len(events(tb, s))
}

func TestSCIMChanges(t *testing.T) {
	actor := storage.Actor{Kind: storage.ActorAPIKey, ID: actorKey}
	cat := map[string]any{"id": "cat", "email": "cat@example.com", "first": "", "last": "", "active": true,
		"auth_integration_id": "int-s", "auth_integration_name": "okta", "imported_at": "2026-11-22T09:30:00.123Z", "modified_at": "2026-11-22T09:30:00.123Z"}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	later := now.Add(time.Minute)
	laterText := "2026-11-22T09:31:00.123Z"
	eng := map[string]any{"id": "eng", "auth_integration_id": "int-s", "display_name": "Engineering", "members": []any{"cat"}, "created_at": "2026-11-22T09:30:00.123Z"}
	setActive := func(active bool) func(u *storage.User) error {
		return func(u *storage.User) error { u.Active, u.ModifiedAt = active, later; return nil }
	}
	tests := []struct {
		name   string
		change func(ctx context.Context, s *audit.Store) error
		want   []brief
	}{
		{"integration created, without the token hash", func(ctx context.Context, s *audit.Store) error {
			return s.CreateSCIMIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-t", Name: "entra", Type: storage.IntegrationSCIM, CreatedAt: now},
				storage.SCIMToken{ID: "tok-2", OrgID: org, IntegrationID: "int-t", Prefix: "gscim_cd", Hash: keyHash[:63] + "0", CreatedAt: now})
		}, []brief{{Action: "auth_integration.created", TargetKind: "auth_integration", TargetID: "int-t", Actor: actor, RequestID: "req-1",
			After: map[string]any{"id": "int-t", "name": "entra", "metadata": "", "type": "scim", "scim_token_id": "tok-2", "scim_token_prefix": "gscim_cd", "created_at": "2026-11-22T09:30:00.123Z"}}}},
		{"user created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateUser(ctx, storage.User{OrgID: org, ID: "dan", IntegrationID: "int-s", Email: "dan@example.com", ExternalID: "00u1", Active: true, ImportedAt: now, ModifiedAt: now})
		}, []brief{{Action: "user.created", TargetKind: "user", TargetID: "dan", UserID: "dan", Actor: actor, RequestID: "req-1",
			After: with(cat, "id", "dan", "email", "dan@example.com", "external_id", "00u1")}}},
		{"user renamed", func(ctx context.Context, s *audit.Store) error {
			_, err := s.UpdateUser(ctx, org, "int-s", "cat", func(u *storage.User) error { u.First, u.ModifiedAt = "Cat", later; return nil })
			return err
		}, []brief{{Action: "user.updated", TargetKind: "user", TargetID: "cat", UserID: "cat", Actor: actor, RequestID: "req-1",
			Before: cat, After: with(cat, "first", "Cat", "modified_at", laterText)}}},
		{"user deactivated", func(ctx context.Context, s *audit.Store) error {
			_, err := s.UpdateUser(ctx, org, "int-s", "cat", setActive(false))
			return err
		}, []brief{{Action: "user.deactivated", TargetKind: "user", TargetID: "cat", UserID: "cat", Actor: actor, RequestID: "req-1",
			Before: cat, After: with(cat, "active", false, "modified_at", laterText)}}},
		{"user reactivated", func(ctx context.Context, s *audit.Store) error {
			if _, err := s.UpdateUser(context.Background(), org, "int-s", "cat", setActive(false)); err != nil {
				return err
			}
			_, err := s.UpdateUser(ctx, org, "int-s", "cat", func(u *storage.User) error { u.Active, u.ModifiedAt = true, later.Add(time.Minute); return nil })
			return err
		}, []brief{
			{Action: "user.reactivated", TargetKind: "user", TargetID: "cat", UserID: "cat", Actor: actor, RequestID: "req-1",
				Before: with(cat, "active", false, "modified_at", laterText), After: with(cat, "modified_at", "2026-11-22T09:32:00.123Z")},
			{Action: "user.deactivated", TargetKind: "user", TargetID: "cat", UserID: "cat", Actor: storage.Actor{Kind: storage.ActorSystem},
				Before: cat, After: with(cat, "active", false, "modified_at", laterText)},
		}},
		{"user touched but unchanged", func(ctx context.Context, s *audit.Store) error {
			_, err := s.UpdateUser(ctx, org, "int-s", "cat", func(u *storage.User) error { u.ModifiedAt = later; return nil })
			return err
		}, nil},
		{"user deleted", func(ctx context.Context, s *audit.Store) error {
			return s.DeleteUser(ctx, org, "int-s", "cat", later)
		}, []brief{{Action: "user.deleted", TargetKind: "user", TargetID: "cat", UserID: "cat", Actor: actor, RequestID: "req-1", Before: cat}}},
		{"group created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateGroup(ctx, storage.Group{OrgID: org, ID: "ops", IntegrationID: "int-s", DisplayName: "Ops", CreatedAt: now, ModifiedAt: now})
		}, []brief{{Action: "group.created", TargetKind: "group", TargetID: "ops", Actor: actor, RequestID: "req-1",
			After: with(eng, "id", "ops", "display_name", "Ops", "members", []any{})}}},
		{"group member removed", func(ctx context.Context, s *audit.Store) error {
			_, err := s.UpdateGroup(ctx, org, "int-s", "eng", func(g *storage.Group) error { g.Members, g.ModifiedAt = nil, later; return nil })
			return err
		}, []brief{{Action: "group.updated", TargetKind: "group", TargetID: "eng", Actor: actor, RequestID: "req-1",
			Before: eng, After: with(eng, "members", []any{})}}},
		{"group touched but unchanged", func(ctx context.Context, s *audit.Store) error {
			_, err := s.UpdateGroup(ctx, org, "int-s", "eng", func(g *storage.Group) error { g.ModifiedAt = later; return nil })
			return err
		}, nil},
		{"group deleted", func(ctx context.Context, s *audit.Store) error {
			return s.DeleteGroup(ctx, org, "int-s", "eng")
		}, []brief{{Action: "group.deleted", TargetKind: "group", TargetID: "eng", Actor: actor, RequestID: "req-1", Before: eng}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, before := scimSeeded(t)
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
