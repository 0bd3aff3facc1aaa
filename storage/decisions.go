package storage

import (
	"context"
	"time"
)

// DecisionStore keeps the decision log: one Decision per access check answered. It is written
// in batches off the request path and pruned by age.
type DecisionStore interface {
	// InsertDecisions stores decisions, which may belong to several organizations. Each ID must
	// come from an EntryIDs made for its Time (it returns an error wrapping ErrInvalidID if
	// not). Inserting a decision whose ID is already stored leaves the stored one as it is, so
	// that a caller may retry a batch that failed midway.
	InsertDecisions(ctx context.Context, decisions []Decision) error
	// ListDecisions returns the organization's decisions that match f, newest first (by ID,
	// which is time order), at most f.Limit of them.
	ListDecisions(ctx context.Context, orgID string, f DecisionFilter) ([]Decision, error)
	// DeleteDecisionsBefore removes the decisions of every organization whose Time is before t,
	// and returns how many it removed.
	DeleteDecisionsBefore(ctx context.Context, t time.Time) (int, error)
}

// Decision is one answer of an access check, as the policy gave it.
type Decision struct {
	ID        string
	OrgID     string
	Time      time.Time
	RequestID string
	// APIKeyID is the id of the API key that asked; never the key itself.
	APIKeyID string
	// Endpoint is the check asked: "can_user_access" or "can_user_access_all".
	Endpoint    string
	UserID      string
	ResourceIDs []string
	Allowed     bool
	// PolicyRevision is the revision of the policy that decided (policy.Revision).
	PolicyRevision string
	// Duration is how long the service took to answer, kept to the microsecond.
	Duration time.Duration
}

// DecisionFilter selects decisions. Zero fields select everything.
type DecisionFilter struct {
	UserID string
	// SvcID selects decisions whose ResourceIDs contain it.
	SvcID string
	// Allowed, when not nil, selects decisions with this result.
	Allowed *bool
	Since   time.Time // decisions at or after Since
	Until   time.Time // decisions before Until
	// Cursor is the ID of the last decision of the previous page: only older ones are returned.
	Cursor string
	// Limit is the most decisions returned; it must be positive.
	Limit int
}
