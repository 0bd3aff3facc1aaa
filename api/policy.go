package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/policy"
)

// policyEngine is what explain and GET /policy need of the policy: *policy.Engine is one.
type policyEngine interface {
	Decider
	Revision() string
	Modules() []policy.Module
	Explain(ctx context.Context, in policy.Input) (policy.Explanation, error)
}

// livePolicy is a Decider whose policy may be replaced while the server runs; *policy.Live is
// one. A request takes the engine running when it asks, and uses it for its whole answer, so
// that the answer and the revision it is logged with come from the same policy.
type livePolicy interface {
	Engine() *policy.Engine
}

// revisioned is a Decider that can say which policy revision it decides with.
type revisioned interface {
	Revision() string
}

// pinPolicy returns the policy deciding now, and its revision ("" when it cannot say).
func (s *Server) pinPolicy() (Decider, string) {
	switch d := s.decider.(type) {
	case livePolicy:
		e := d.Engine()
		return e, e.Revision()
	case revisioned:
		return s.decider, d.Revision()
	}
	return s.decider, ""
}

var errCannotExplain = errors.New("the policy decider cannot explain or show itself")

// currentPolicy returns the policy deciding now, for explain and GET /policy.
func (s *Server) currentPolicy() (policyEngine, error) {
	d, _ := s.pinPolicy()
	pe, ok := d.(policyEngine)
	if !ok {
		return nil, errCannotExplain
	}
	return pe, nil
}

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
	pe, err := s.currentPolicy()
	if err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	in, err := s.policyInput(ctx, orgID(c), req.UserID, []string{canonicalID(req.SvcID)})
	if err != nil {
		s.writeError(c, err)
		return
	}
	ex, err := pe.Explain(ctx, in)
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

// getPolicy shows the policy deciding now: its revision and every module, tests included. The
// policy is the same for every organization and holds no organization's data.
func (s *Server) getPolicy(c *gin.Context) {
	pe, err := s.currentPolicy()
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"revision": pe.Revision(), "modules": pe.Modules()})
}
