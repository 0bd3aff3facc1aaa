package api

import (
	"context"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/internal/decisionlog"
	"github.com/grantry/grantry/storage"
)

// DecisionRecorder takes the record of every access decision. Record must return at once and
// never fail: a check is not slowed by its logging. *decisionlog.Log is one.
type DecisionRecorder interface {
	Record(decisionlog.Entry)
}

// The checks whose decisions are logged, as Decision.Endpoint names them.
const (
	endpointCheck    = "can_user_access"
	endpointCheckAll = "can_user_access_all"
)

// logDecision records one answer, made by policy revision, of a check whose handler started at
// start (time.Now); the decision is dated then (s.nowAt), as the check judged its grants.
func (s *Server) logDecision(c *gin.Context, start time.Time, endpoint, userID string, resourceIDs []string, allowed bool, revision string) {
	if s.decisions == nil {
		return
	}
	now := s.nowAt(start).UTC().Truncate(time.Millisecond)
	s.decisions.Record(decisionlog.Entry{
		ID:             s.decisionIDs.New(now),
		Time:           now,
		RequestID:      requestID(c),
		OrgID:          orgID(c),
		APIKeyID:       requestOf(c).keyID,
		Endpoint:       endpoint,
		UserID:         userID,
		ResourceIDs:    resourceIDs,
		Allowed:        allowed,
		PolicyRevision: revision,
		Duration:       time.Since(start),
	})
}

// DecisionSink is the sink that writes a decision log's batches to store. Entries keep the ids
// logDecision gave them, so that a batch written again after a failure is not stored twice.
func DecisionSink(store storage.DecisionStore) decisionlog.Sink {
	return func(ctx context.Context, batch []decisionlog.Entry) error {
		ds := make([]storage.Decision, len(batch))
		for i, e := range batch {
			ds[i] = storage.Decision{
				ID: e.ID, OrgID: e.OrgID, Time: e.Time, RequestID: e.RequestID, APIKeyID: e.APIKeyID,
				Endpoint: e.Endpoint, UserID: e.UserID, ResourceIDs: e.ResourceIDs, Allowed: e.Allowed,
				PolicyRevision: e.PolicyRevision, Duration: e.Duration,
			}
		}
		if err := store.InsertDecisions(ctx, ds); err != nil {
			return fmt.Errorf("write %d decisions: %w", len(ds), err)
		}
		return nil
	}
}
