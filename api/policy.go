package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/grantry/grantry/policy"
)

type explainResponse struct {
	Allowed        bool     `json:"allowed"`
	Reasons        []string `json:"reasons"`
	PolicyRevision string   `json:"policy_revision"`
}

// explain answers what can_user_access would answer, with the policy's reasons. It reads
// like the check (unknown users and resources are reasons, never 404) and is not logged as a
// decision: it grants nothing.
func (s *Server) explain(c *gin.Context) {
	var req accessRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	ex, err := s.decider.Explain(ctx, s.question(c, req.UserID, []string{canonicalID(req.SvcID)}, false, s.now()))
	if err != nil && !errors.Is(err, policy.ErrEvaluation) {
		s.writeError(c, err) // the store's, answered as the check answers it
		return
	}
	if err != nil {
		// The explanation says the policy failed, which denies; the error itself is for the log.
		s.log.LogAttrs(ctx, slog.LevelError, "policy explanation failed",
			slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
	}
	if ex.Reasons == nil {
		ex.Reasons = []string{}
	}
	c.JSON(http.StatusOK, explainResponse{Allowed: ex.Allowed, Reasons: ex.Reasons, PolicyRevision: ex.Revision})
}

// policyJSON is GET /policy: the policy deciding now, and whether its answers are remembered.
type policyJSON struct {
	Revision string         `json:"revision"`
	Modules  any            `json:"modules"`
	Memo     policyMemoJSON `json:"memo"`
}

// policyMemoJSON says of each rule whether its answers are remembered (what it reads of its
// input is bounded), and if one is not, why it is evaluated for every question.
type policyMemoJSON struct {
	Allow    bool   `json:"allow"`
	AllowAll bool   `json:"allow_all"`
	Reason   string `json:"reason,omitempty"`
}

// getPolicy shows the policy deciding now: its revision, every module (tests included), and
// whether its answers are remembered. The policy is the same for every organization and holds
// no organization's data.
func (s *Server) getPolicy(c *gin.Context) {
	allow, allowAll, why := s.decider.Memoised()
	c.JSON(http.StatusOK, policyJSON{Revision: s.decider.Revision(), Modules: s.decider.Modules(), Memo: policyMemoJSON{Allow: allow, AllowAll: allowAll, Reason: why}})
}
