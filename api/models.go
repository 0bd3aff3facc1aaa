package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// modelJSON is the spec's Model.
type modelJSON struct {
	ID              string `json:"id"`
	ModelName       string `json:"model_name"`
	IntegrationType string `json:"integration_type"`
	SvcID           string `json:"svc_id"`
}

func modelOf(r storage.Resource) modelJSON {
	return modelJSON{ID: r.ID, ModelName: r.Name, IntegrationType: r.Source, SvcID: r.ID}
}

type customModelRequest struct {
	ModelName string `json:"model_name" validate:"required,max=256"`
}

func (s *Server) createCustomModel(c *gin.Context) {
	var req customModelRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.register(c.Request.Context(), orgID(c), storage.Resource{Kind: storage.KindModel, Source: storage.SourceCustom, Name: req.ModelName})
	if err != nil {
		s.writeError(c, conflict(err, "A custom model with this name is already registered."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"model": modelOf(r)})
}

// listModels answers {"models": [...], "model": <the most recently integrated or null>}: model
// keeps the spec's single-object shape, models is the whole list.
func (s *Server) listModels(c *gin.Context) {
	rs, err := s.listFor(c, storage.KindModel)
	if err != nil {
		s.writeError(c, err)
		return
	}
	models := make([]modelJSON, len(rs))
	for i, r := range rs {
		models[i] = modelOf(r)
	}
	var latest *modelJSON
	if len(models) > 0 {
		latest = &models[len(models)-1]
	}
	c.JSON(http.StatusOK, gin.H{"models": models, "model": latest})
}
