package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/storage"
)

// fault is how a faultyStore behaves on the calls that serve requests of an organization.
type fault int32

const (
	healthy fault = iota
	// broken answers at once with the error a store gives when it cannot reach its database,
	// carrying an internal detail that must never reach a client.
	broken
	// hanging answers only when the caller's context is done, as a store does whose database
	// has stopped answering.
	hanging
)

// internalDetail is what a broken store's errors carry; no response may show it.
const internalDetail = "dial tcp 10.1.2.3:27017: connection refused"

// faultyStore is a store whose organization-scoped reads and grants can be made to fail or
// hang, while authentication keeps working, so that tests reach the handlers.
type faultyStore struct {
	storage.Store
	mode atomic.Int32
	ping atomic.Int32
}

func (s *faultyStore) set(f fault) { s.mode.Store(int32(f)) }

func (s *faultyStore) fault(ctx context.Context, mode *atomic.Int32, op string) error {
	switch fault(mode.Load()) {
	case broken:
		return fmt.Errorf("%s: %w: %s", op, storage.ErrUnavailable, internalDetail)
	case hanging:
		<-ctx.Done()
		return fmt.Errorf("%s: %w: %w", op, storage.ErrUnavailable, ctx.Err())
	}
	return nil
}

func (s *faultyStore) Ping(ctx context.Context) error {
	if err := s.fault(ctx, &s.ping, "ping"); err != nil {
		return err
	}
	return s.Store.Ping(ctx)
}

func (s *faultyStore) GetUser(ctx context.Context, orgID, id string) (storage.User, error) {
	if err := s.fault(ctx, &s.mode, "get user"); err != nil {
		return storage.User{}, err
	}
	return s.Store.GetUser(ctx, orgID, id)
}

// UserFacts is the engine's read of a user: a check of a user not in memory fails with it.
func (s *faultyStore) UserFacts(ctx context.Context, orgID, userID string) (storage.Facts, error) {
	if err := s.fault(ctx, &s.mode, "user facts"); err != nil {
		return storage.Facts{}, err
	}
	return s.Store.UserFacts(ctx, orgID, userID)
}

func (s *faultyStore) GetResources(ctx context.Context, orgID string, ids []string) ([]storage.Resource, error) {
	if err := s.fault(ctx, &s.mode, "get resources"); err != nil {
		return nil, err
	}
	return s.Store.GetResources(ctx, orgID, ids)
}

func (s *faultyStore) ListResources(ctx context.Context, orgID string, kind storage.Kind) ([]storage.Resource, error) {
	if err := s.fault(ctx, &s.mode, "list resources"); err != nil {
		return nil, err
	}
	return s.Store.ListResources(ctx, orgID, kind)
}

func (s *faultyStore) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	if err := s.fault(ctx, &s.mode, "grant"); err != nil {
		return nil, err
	}
	return s.Store.SetGrant(ctx, g)
}

// withFaultyStore puts a faultyStore in front of the fixture's store and returns it. A store
// that can fail is a remote, shared one, and no change feed runs here to vouch for the cache:
// so every check reads the store, as a check does while a real feed cannot read it.
func withFaultyStore(fs **faultyStore) fixtureOption {
	return func(c *fixtureConfig) {
		*fs = &faultyStore{Store: c.Engine.Store}
		c.Engine.Store = *fs
		c.Engine.Shared = true
	}
}

// logBuffer collects what the server logs, for tests to read while it serves.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withLog makes the server log JSON at every level, debug included, into buf.
func withLog(buf *logBuffer) fixtureOption {
	return func(c *fixtureConfig) {
		c.Logger = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Engine.Logger = c.Logger
	}
}

// unreadyDecider is a Decider whose policy is not ready.
type unreadyDecider struct{ api.Decider }

func (unreadyDecider) Ready() error { return errors.New("policy bundle not loaded yet") }
