package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
)

// endpointCheckBatch names the decisions of POST /provisions/check_batch in the decision log:
// one per item.
const endpointCheckBatch = "check_batch"

type batchRequest struct {
	Checks []batchCheck `json:"checks" validate:"required,min=1,max=1000,dive"`
}

// batchCheck is one item of a batch: what can_user_access takes, and an optional id of the
// caller's, given back with the answer.
type batchCheck struct {
	UserID        string  `json:"user_id" validate:"required,max=256"`
	SvcID         string  `json:"svc_id" validate:"required,uuid"`
	CorrelationID *string `json:"correlation_id" validate:"omitnil,max=256"`
}

// batchResult answers one item, echoing it as sent; correlation_id is null when none was sent.
type batchResult struct {
	CorrelationID *string `json:"correlation_id"`
	UserID        string  `json:"user_id"`
	SvcID         string  `json:"svc_id"`
	Allowed       bool    `json:"allowed"`
}

// checkBatch answers many access checks at once, each exactly as can_user_access would, in the
// order asked. It reads each distinct user once and every resource in one call, and decides
// every item with the same policy revision and the same request time, so that a batch costs a
// fraction of the same checks made one by one.
func (s *Server) checkBatch(c *gin.Context) {
	start := time.Now()
	var req batchRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx, org, now := c.Request.Context(), orgID(c), s.now()
	ids := make([]string, len(req.Checks))
	for i, ch := range req.Checks {
		ids[i] = canonicalID(ch.SvcID)
	}
	rs, err := s.store.GetResources(ctx, org, ids)
	if err != nil {
		s.writeError(c, fmt.Errorf("resources asked about: %w", err))
		return
	}
	resources := make(map[string]policy.Resource, len(rs))
	for _, r := range rs {
		resources[r.ID] = policy.Resource{Kind: string(r.Kind), Name: r.Name}
	}
	users := map[string]*policy.User{} // nil: no such user
	for _, ch := range req.Checks {
		if _, done := users[ch.UserID]; done {
			continue
		}
		u, err := s.store.GetUser(ctx, org, ch.UserID)
		if errors.Is(err, storage.ErrNotFound) {
			users[ch.UserID] = nil
			continue
		}
		if err == nil {
			users[ch.UserID], err = s.policyUser(ctx, u)
		}
		if err != nil {
			s.writeError(c, fmt.Errorf("user %s: %w", ch.UserID, err))
			return
		}
	}
	d, revision := s.pinPolicy()
	results := make([]batchResult, len(req.Checks))
	for i, ch := range req.Checks {
		in := policy.Input{User: users[ch.UserID], ResourceIDs: ids[i : i+1], Resources: map[string]policy.Resource{}, Now: now}
		if r, ok := resources[ids[i]]; ok {
			in.Resources[ids[i]] = r
		}
		allowed := s.decideWith(ctx, d, false, in)
		s.logDecision(c, start, endpointCheckBatch, ch.UserID, in, allowed, revision)
		results[i] = batchResult{CorrelationID: ch.CorrelationID, UserID: ch.UserID, SvcID: ch.SvcID, Allowed: allowed}
	}
	c.JSON(http.StatusOK, gin.H{"results": results})
}
