package mongo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/grantry/grantry/storage"
)

// clearedPool stands for the driver's unexported "connection pool cleared" error, which has
// a Retryable method and nothing else to recognise it by.
type clearedPool struct{}

func (clearedPool) Error() string   { return "connection pool for 127.0.0.1:27017 was cleared" }
func (clearedPool) Retryable() bool { return true }

// TestMapErr: every way the driver says the deployment cannot answer becomes ErrUnavailable
// (a 503), so that an outage never shows as a 500.
func TestMapErr(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error // nil: mapped to neither sentinel
	}{
		{"no document", mongo.ErrNoDocuments, storage.ErrNotFound},
		{"deadline", fmt.Errorf("find: %w", context.DeadlineExceeded), storage.ErrUnavailable},
		{"server selection", topology.ServerSelectionError{Wrapped: errors.New("no reachable servers")}, storage.ErrUnavailable},
		{"handshake", topology.ConnectionError{Wrapped: errors.New("connection refused")}, storage.ErrUnavailable},
		{"pool cleared", fmt.Errorf("insert: %w", clearedPool{}), storage.ErrUnavailable},
		{"disconnected", mongo.ErrClientDisconnected, storage.ErrUnavailable},
		{"shutting down", mongo.CommandError{Code: 91, Message: "shutdown in progress"}, storage.ErrUnavailable},
		{"a bug of ours", mongo.CommandError{Code: 2, Message: "BadValue"}, nil},
		{"caller gave up", context.Canceled, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mapErr(tc.err)
			for _, sentinel := range []error{storage.ErrNotFound, storage.ErrUnavailable, storage.ErrConflict} {
				if errors.Is(got, sentinel) != (sentinel == tc.want) {
					t.Errorf("mapErr(%v) = %v: errors.Is %v = %v", tc.err, got, sentinel, !(sentinel == tc.want))
				}
			}
		})
	}
}
