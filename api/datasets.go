package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// datasetJSON is the spec's dataset integration, as listed.
type datasetJSON struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Metadata string `json:"metadata"`
	SvcID    string `json:"svc_id"`
}

func datasetOf(r storage.Resource) datasetJSON {
	return datasetJSON{ID: r.ID, Source: r.Source, Metadata: metadataJSON(r.Metadata), SvcID: r.ID}
}

type customDatasetRequest struct {
	DatasetName string `json:"dataset_name" validate:"required,max=256"`
}

type customDatasetJSON struct {
	DatasetName string `json:"dataset_name"`
	ID          string `json:"id"`
}

func (s *Server) createCustomDataset(c *gin.Context) {
	var req customDatasetRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.register(c.Request.Context(), orgID(c), storage.Resource{
		Kind: storage.KindDataset, Source: storage.SourceCustom, Name: req.DatasetName,
		Metadata: map[string]string{"dataset_name": req.DatasetName},
	})
	if err != nil {
		s.writeError(c, conflict(err, "A custom dataset with this name is already registered."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"datasets": []customDatasetJSON{{DatasetName: r.Name, ID: r.ID}}})
}

func (s *Server) listDatasets(c *gin.Context) {
	rs, err := s.listFor(c, storage.KindDataset)
	if err != nil {
		s.writeError(c, err)
		return
	}
	indexes := make([]datasetJSON, len(rs))
	for i, r := range rs {
		indexes[i] = datasetOf(r)
	}
	c.JSON(http.StatusOK, gin.H{"indexes": indexes})
}
