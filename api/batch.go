package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/authz"
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
// order asked, every one with the same policy revision and the same request time.
func (s *Server) checkBatch(c *gin.Context) {
	start := time.Now()
	var req batchRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	qs := make([]authz.Question, len(req.Checks))
	now := s.nowAt(start)
	for i, ch := range req.Checks {
		qs[i] = s.question(c, ch.UserID, []string{canonicalID(ch.SvcID)}, false, now)
	}
	allowed, revision, err := s.decider.DecideEach(c.Request.Context(), qs)
	if err != nil {
		s.writeError(c, err)
		return
	}
	results := make([]batchResult, len(req.Checks))
	for i, ch := range req.Checks {
		s.logDecision(c, start, endpointCheckBatch, ch.UserID, qs[i].ResourceIDs, allowed[i], revision)
		results[i] = batchResult{CorrelationID: ch.CorrelationID, UserID: ch.UserID, SvcID: ch.SvcID, Allowed: allowed[i]}
	}
	c.JSON(http.StatusOK, gin.H{"results": results})
}
