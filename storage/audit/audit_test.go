package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/audit"
	"github.com/grantry/grantry/storage/bolt"
	"github.com/grantry/grantry/storage/bolt/bolttest"
)

var now = time.Date(2026, 11, 22, 9, 30, 0, 123_000_000, time.UTC)

const (
	org      = "org-1"
	res      = "00000000-0000-4000-8000-000000000001"
	secret   = "sealed-provider-secret"
	keyHash  = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed"
	actorKey = "key-7"
)

// actorCtx is the context of a request made with API key actorKey.
func actorCtx(tb testing.TB) context.Context {
	return storage.WithRequestID(storage.WithActor(tb.Context(), storage.Actor{Kind: storage.ActorAPIKey, ID: actorKey}), "req-1")
}

// seeded returns an audited store holding org-1 with a model, an integration and users ada and
// bob, with ada granted the model; and the number of events that set-up recorded.
func seeded(tb testing.TB) (*audit.Store, int) {
	tb.Helper()
	return seededOn(tb, bolttest.OpenNoSync(tb))
}

// seededOn is seeded on the store inner.
func seededOn(tb testing.TB, inner storage.Store) (*audit.Store, int) {
	tb.Helper()
	s := audit.New(inner, func() time.Time { return now }, nil)
	ctx := tb.Context()
	must(tb, s.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: now}))
	must(tb, s.CreateResource(ctx, storage.Resource{OrgID: org, ID: res, Kind: storage.KindModel, Source: "openai",
		Name: "gpt", Metadata: map[string]string{"env": "prod"}, Secret: []byte(secret), CreatedAt: now}))
	must(tb, s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-1", Name: "hr", Type: "import", CreatedAt: now}))
	_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{{ID: "ada", Email: "ada@example.com", First: "Ada"}, {ID: "bob", Email: "bob@example.com"}}, now)
	must(tb, err)
	must(tb, storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "ada", ResourceID: res, CreatedAt: now}))
	return s, len(events(tb, s))
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func events(tb testing.TB, s storage.EventStore) []storage.Event {
	tb.Helper()
	got, err := s.ListEvents(tb.Context(), org, storage.EventFilter{Limit: 1000})
	must(tb, err)
	return got
}

// brief is what a test compares of an event; the snapshots are compared as decoded JSON.
type brief struct {
	Action, TargetKind, TargetID, UserID, SvcID string
	Actor                                       storage.Actor
	RequestID                                   string
	Before, After                               map[string]any
}

func briefOf(tb testing.TB, e storage.Event) brief {
	tb.Helper()
	b := brief{Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID, UserID: e.UserID, SvcID: e.SvcID, Actor: e.Actor, RequestID: e.RequestID}
	for raw, dst := range map[*json.RawMessage]*map[string]any{&e.Before: &b.Before, &e.After: &b.After} {
		if *raw != nil {
			must(tb, json.Unmarshal(*raw, dst))
		}
	}
	return b
}

func TestEveryKindOfChange(t *testing.T) {
	apiKey := map[string]any{"id": "key-2", "org_id": org, "prefix": "gry_abc", "created_at": "2026-11-22T09:30:00.123Z"}
	model := map[string]any{"id": res, "kind": "model", "source": "openai", "name": "gpt", "metadata": map[string]any{"env": "prod"}, "created_at": "2026-11-22T09:30:00.123Z"}
	ada := map[string]any{"id": "ada", "email": "ada@example.com", "first": "Ada", "last": "", "active": true,
		"auth_integration_id": "int-1", "auth_integration_name": "hr", "imported_at": "2026-11-22T09:30:00.123Z", "modified_at": "2026-11-22T09:30:00.123Z"}
	actor := storage.Actor{Kind: storage.ActorAPIKey, ID: actorKey}
	tests := []struct {
		name   string
		change func(ctx context.Context, s *audit.Store) error
		want   []brief
	}{
		{"org created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateOrg(ctx, storage.Org{ID: "org-2", Name: "other", CreatedAt: now})
		}, nil}, // recorded in org-2's trail, checked in TestOrgEventsLandInTheirOrg
		{"api key created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateAPIKey(ctx, storage.APIKey{ID: "key-2", OrgID: org, Prefix: "gry_abc", Hash: keyHash, CreatedAt: now})
		}, []brief{{Action: "api_key.created", TargetKind: "api_key", TargetID: "key-2", Actor: actor, RequestID: "req-1", After: apiKey}}},
		{"resource created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateResource(ctx, storage.Resource{OrgID: org, ID: "00000000-0000-4000-8000-000000000002", Kind: storage.KindFunction,
				Source: storage.SourceCustom, Name: "search", Description: "finds", CreatedAt: now})
		}, []brief{{Action: "resource.created", TargetKind: "function", TargetID: "00000000-0000-4000-8000-000000000002",
			SvcID: "00000000-0000-4000-8000-000000000002", Actor: actor, RequestID: "req-1",
			After: map[string]any{"id": "00000000-0000-4000-8000-000000000002", "kind": "function", "source": "custom", "name": "search", "description": "finds", "created_at": "2026-11-22T09:30:00.123Z"}}}},
		{"resource deleted", func(ctx context.Context, s *audit.Store) error {
			return s.DeleteResource(ctx, org, res)
		}, []brief{{Action: "resource.deleted", TargetKind: "model", TargetID: res, SvcID: res, Actor: actor, RequestID: "req-1", Before: model}}},
		{"secret replaced", func(ctx context.Context, s *audit.Store) error {
			return s.ReplaceSecret(ctx, org, res, []byte("new-"+secret), map[string]string{"env": "staging"})
		}, []brief{{Action: "resource.secret_replaced", TargetKind: "model", TargetID: res, SvcID: res, Actor: actor, RequestID: "req-1", Before: model,
			After: map[string]any{"id": res, "kind": "model", "source": "openai", "name": "gpt", "metadata": map[string]any{"env": "staging"}, "created_at": "2026-11-22T09:30:00.123Z"}}}},
		{"secret rotated", func(ctx context.Context, s *audit.Store) error {
			return s.SwapSecret(ctx, org, res, []byte(secret), []byte("resealed-"+secret))
		}, []brief{{Action: "resource.secret_rotated", TargetKind: "model", TargetID: res, SvcID: res, Actor: actor, RequestID: "req-1"}}},
		{"auth integration created", func(ctx context.Context, s *audit.Store) error {
			return s.CreateAuthIntegration(ctx, storage.AuthIntegration{OrgID: org, ID: "int-2", Name: "okta", Metadata: "{}", Type: "import", CreatedAt: now})
		}, []brief{{Action: "auth_integration.created", TargetKind: "auth_integration", TargetID: "int-2", Actor: actor, RequestID: "req-1",
			After: map[string]any{"id": "int-2", "name": "okta", "metadata": "{}", "type": "import", "created_at": "2026-11-22T09:30:00.123Z"}}}},
		{"users imported: one new, one changed, one unchanged", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{
				{ID: "cyd", Email: "cyd@example.com"},
				{Email: "ADA@example.com", First: "Augusta", Last: "King"},
				{Email: "bob@example.com"},
			}, now.Add(time.Second))
			return err
		}, []brief{
			{Action: "user.updated", TargetKind: "user", TargetID: "ada", UserID: "ada", Actor: actor, RequestID: "req-1", Before: ada,
				After: map[string]any{"id": "ada", "email": "ADA@example.com", "first": "Augusta", "last": "King", "active": true,
					"auth_integration_id": "int-1", "auth_integration_name": "hr", "imported_at": "2026-11-22T09:30:00.123Z", "modified_at": "2026-11-22T09:30:01.123Z"}},
			{Action: "user.created", TargetKind: "user", TargetID: "cyd", UserID: "cyd", Actor: actor, RequestID: "req-1",
				After: map[string]any{"id": "cyd", "email": "cyd@example.com", "first": "", "last": "", "active": true,
					"auth_integration_id": "int-1", "auth_integration_name": "hr", "imported_at": "2026-11-22T09:30:01.123Z", "modified_at": "2026-11-22T09:30:01.123Z"}},
		}},
		{"user imported with only its attributes changed", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{
				{Email: "ada@example.com", First: "Ada", Attributes: map[string]string{"department": "Engines"}},
			}, now.Add(time.Second))
			return err
		}, []brief{
			{Action: "user.updated", TargetKind: "user", TargetID: "ada", UserID: "ada", Actor: actor, RequestID: "req-1", Before: ada,
				After: map[string]any{"id": "ada", "email": "ada@example.com", "first": "Ada", "last": "", "active": true,
					"auth_integration_id": "int-1", "auth_integration_name": "hr", "imported_at": "2026-11-22T09:30:00.123Z", "modified_at": "2026-11-22T09:30:01.123Z"}},
		}},
		{"granted", func(ctx context.Context, s *audit.Store) error {
			return storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "bob", ResourceID: res, CreatedAt: now})
		}, []brief{{Action: "grant.created", TargetKind: "user", TargetID: "bob", UserID: "bob", SvcID: res, Actor: actor, RequestID: "req-1",
			After: map[string]any{"user_id": "bob", "svc_id": res, "created_at": "2026-11-22T09:30:00.123Z"}}}},
		{"revoked", func(ctx context.Context, s *audit.Store) error {
			return storage.Revoke(ctx, s, org, "ada", res)
		}, []brief{{Action: "grant.revoked", TargetKind: "user", TargetID: "ada", UserID: "ada", SvcID: res, Actor: actor, RequestID: "req-1",
			Before: map[string]any{"user_id": "ada", "svc_id": res}}}},
		{"api key revoked", func(ctx context.Context, s *audit.Store) error {
			if err := s.CreateAPIKey(context.Background(), storage.APIKey{ID: "key-2", OrgID: org, Prefix: "gry_abc", Hash: keyHash, CreatedAt: now}); err != nil {
				return err
			}
			return s.DeleteAPIKey(ctx, "key-2")
		}, []brief{
			{Action: "api_key.revoked", TargetKind: "api_key", TargetID: "key-2", Actor: actor, RequestID: "req-1", Before: apiKey},
			{Action: "api_key.created", TargetKind: "api_key", TargetID: "key-2", Actor: storage.Actor{Kind: storage.ActorSystem}, After: apiKey},
		}},
		// Changes that change nothing record nothing.
		{"granted again", func(ctx context.Context, s *audit.Store) error {
			return storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "ada", ResourceID: res, CreatedAt: now})
		}, nil},
		{"revoked what is not granted", func(ctx context.Context, s *audit.Store) error {
			return storage.Revoke(ctx, s, org, "bob", res)
		}, nil},
		{"imported unchanged", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{{Email: "bob@example.com"}}, now.Add(time.Second))
			return err
		}, nil},
		{"imported unchanged, with no attributes for a user who has none", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{{Email: "bob@example.com", Attributes: map[string]string{}}}, now.Add(time.Second))
			return err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, before := seeded(t)
			must(t, tt.change(actorCtx(t), s))
			all := events(t, s)
			var got []brief
			for _, e := range all[:len(all)-before] {
				got = append(got, briefOf(t, e))
				if e.OrgID != org || !e.Time.Equal(now) || storage.CheckID(e.ID, e.Time) != nil {
					t.Errorf("event %s: org %s, time %s; want %s at %s with an id of that time", e.ID, e.OrgID, e.Time, org, now)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("new events, newest first (-want +got):\n%s", diff)
			}
			for _, e := range all {
				raw, _ := json.Marshal(e)
				if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(keyHash)) {
					t.Errorf("event %s holds a secret or a key hash: %s", e.Action, raw)
				}
			}
		})
	}
}

func TestSeedingIsRecorded(t *testing.T) {
	s, _ := seeded(t)
	var got []string
	for _, e := range events(t, s) {
		got = append(got, e.Action+" "+e.TargetID)
	}
	want := []string{"grant.created ada", "user.created bob", "user.created ada", "auth_integration.created int-1", "resource.created " + res, "org.created " + org}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events of the set-up (-want +got):\n%s", diff)
	}
}

func TestOrgEventsLandInTheirOrg(t *testing.T) {
	s := audit.New(bolttest.Open(t), func() time.Time { return now }, nil)
	ctx := storage.WithActor(t.Context(), storage.Actor{Kind: storage.ActorAdmin})
	must(t, s.CreateOrg(ctx, storage.Org{ID: "org-2", Name: "other", CreatedAt: now}))
	must(t, s.CreateAPIKey(ctx, storage.APIKey{ID: "key-9", OrgID: "org-2", Prefix: "gry_x", Hash: keyHash, CreatedAt: now}))
	must(t, s.DeleteAPIKey(ctx, "key-9"))
	got, err := s.ListEvents(t.Context(), "org-2", storage.EventFilter{Limit: 10})
	must(t, err)
	var actions []string
	for _, e := range got {
		actions = append(actions, e.Action+" by "+e.Actor.Kind)
	}
	want := []string{"api_key.revoked by admin", "api_key.created by admin", "org.created by admin"}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("org-2's events (-want +got):\n%s", diff)
	}
	if mine := events(t, s); len(mine) != 0 {
		t.Errorf("org-1 sees %d events of org-2", len(mine))
	}
}

func TestFailedChangesRecordNothing(t *testing.T) {
	tests := []struct {
		name   string
		change func(ctx context.Context, s *audit.Store) error
	}{
		{"org name taken", func(ctx context.Context, s *audit.Store) error {
			return s.CreateOrg(ctx, storage.Org{ID: "org-3", Name: "acme", CreatedAt: now})
		}},
		{"unknown api key", func(ctx context.Context, s *audit.Store) error { return s.DeleteAPIKey(ctx, "key-404") }},
		{"unknown resource", func(ctx context.Context, s *audit.Store) error {
			return s.DeleteResource(ctx, org, "00000000-0000-4000-8000-000000000404")
		}},
		{"grant to unknown user", func(ctx context.Context, s *audit.Store) error {
			return storage.AddGrant(ctx, s, storage.Grant{OrgID: org, UserID: "zed", ResourceID: res, CreatedAt: now})
		}},
		{"revoke from unknown user", func(ctx context.Context, s *audit.Store) error { return storage.Revoke(ctx, s, org, "zed", res) }},
		{"import into unknown integration", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-404", []storage.UserImport{{Email: "x@example.com"}}, now)
			return err
		}},
		{"import with an id conflict", func(ctx context.Context, s *audit.Store) error {
			_, err := s.ImportUsers(ctx, org, "int-1", []storage.UserImport{{ID: "bob", Email: "new@example.com"}}, now)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, before := seeded(t)
			if err := tt.change(actorCtx(t), s); err == nil {
				t.Fatal("the change succeeded, want an error")
			}
			if n := len(events(t, s)) - before; n != 0 {
				t.Errorf("a failed change recorded %d events", n)
			}
		})
	}
}

// failingEvents is a store whose audit trail cannot be written.
type failingEvents struct{ *bolt.Store }

func (failingEvents) AppendEvents(context.Context, []storage.Event) error {
	return errors.New("disk full: " + storage.ErrUnavailable.Error())
}

func TestUnrecordedChangeFailsAndIsLogged(t *testing.T) {
	var logs bytes.Buffer
	s := audit.New(failingEvents{bolttest.Open(t)}, func() time.Time { return now }, slog.New(slog.NewJSONHandler(&logs, nil)))
	err := s.CreateOrg(actorCtx(t), storage.Org{ID: org, Name: "acme", CreatedAt: now})
	if err == nil || !strings.Contains(err.Error(), "audit trail") {
		t.Fatalf("CreateOrg with a failing trail: error %v, want one about the audit trail", err)
	}
	if _, err := s.GetOrg(t.Context(), org); err != nil {
		t.Errorf("the change itself was made (its event failed after), but GetOrg says %v", err)
	}
	for _, want := range []string{`"action":"org.created"`, `"target_id":"org-1"`, `"actor_id":"key-7"`, `"request_id":"req-1"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %s lacks %s", logs.String(), want)
		}
	}
}

// hangUp is a store whose caller gives up just as a change succeeds.
type hangUp struct {
	*bolt.Store
	cancel context.CancelFunc
}

func (h hangUp) CreateOrg(ctx context.Context, o storage.Org) error {
	err := h.Store.CreateOrg(ctx, o)
	h.cancel()
	return err
}

func TestClientHangingUpStillRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(actorCtx(t))
	s := audit.New(hangUp{bolttest.Open(t), cancel}, func() time.Time { return now }, nil)
	must(t, s.CreateOrg(ctx, storage.Org{ID: org, Name: "acme", CreatedAt: now}))
	if got := events(t, s); len(got) != 1 || got[0].Action != "org.created" {
		t.Errorf("events = %+v, want org.created", got)
	}
}
