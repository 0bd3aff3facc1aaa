package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// functionJSON is the spec's Function.
type functionJSON struct {
	ID           string `json:"id"`
	FunctionName string `json:"function_name"`
	Description  string `json:"description"`
	SvcID        string `json:"svc_id"`
}

func functionOf(r storage.Resource) functionJSON {
	return functionJSON{ID: r.ID, FunctionName: r.Name, Description: r.Description, SvcID: r.ID}
}

type createFunctionRequest struct {
	FunctionName string `json:"function_name" validate:"required,max=256"`
	Description  string `json:"description" validate:"max=4096"`
}

func (s *Server) createFunction(c *gin.Context) {
	var req createFunctionRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.register(c.Request.Context(), orgID(c), storage.Resource{
		Kind: storage.KindFunction, Source: storage.SourceCustom, Name: req.FunctionName, Description: req.Description,
	})
	if err != nil {
		s.writeError(c, conflict(err, "A function with this name is already registered."))
		return
	}
	c.JSON(http.StatusOK, gin.H{"function": functionOf(r)})
}

func (s *Server) listFunctions(c *gin.Context) {
	rs, err := s.listFor(c, storage.KindFunction)
	if err != nil {
		s.writeError(c, err)
		return
	}
	functions := make([]functionJSON, len(rs))
	for i, r := range rs {
		functions[i] = functionOf(r)
	}
	c.JSON(http.StatusOK, gin.H{"functions": functions})
}
