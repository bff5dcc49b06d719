package agentos

import (
	"errors"
	"math"
	"net/http"
	"strings"

	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/memory"
	"github.com/agentryhq/agentry/model"
)

// optimizeMemoriesRequest is AgentOS's OptimizeMemoriesRequest.
type optimizeMemoriesRequest struct {
	UserID string `json:"user_id"`
	// Model is "provider:model_id"; empty means the server's memory model.
	Model string `json:"model"`
	// Apply defaults to true; false previews without writing.
	Apply *bool `json:"apply"`
}

// optimizeMemoriesResponse is AgentOS's OptimizeMemoriesResponse.
type optimizeMemoriesResponse struct {
	Memories            []memoryView `json:"memories"`
	MemoriesBefore      int          `json:"memories_before"`
	MemoriesAfter       int          `json:"memories_after"`
	TokensBefore        int          `json:"tokens_before"`
	TokensAfter         int          `json:"tokens_after"`
	TokensSaved         int          `json:"tokens_saved"`
	ReductionPercentage float64      `json:"reduction_percentage"`
}

// memoryModel is the model POST /optimize-memories uses when the request
// names none: Config.MemoryModel, else the memory model of the first agent
// (then team) that has one.
func (s *Server) memoryModel() model.Model {
	if s.cfg.MemoryModel != nil {
		return s.cfg.MemoryModel
	}
	for _, a := range s.cfg.Agents {
		if m := a.Config().MemoryModel; m != nil {
			return m
		}
	}
	for _, t := range s.cfg.Teams {
		if m := t.Config().MemoryModel; m != nil {
			return m
		}
	}
	return nil
}

// optimizeMemories combines a user's memories into one (Agno's summarize
// strategy); apply=false previews. A scoped caller optimizes its own.
func (s *Server) optimizeMemories(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req optimizeMemoriesRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if err := checkBodyID("user_id", req.UserID); err != nil {
		return err
	}
	userID := actAs(r.Context(), req.UserID).id
	if userID == "" {
		return errorf(http.StatusBadRequest, "User ID is required")
	}
	m := s.memoryModel()
	if req.Model != "" {
		// A scripted model reads a file on the server: not a caller's choice.
		if strings.HasPrefix(req.Model, "scripted:") {
			return errorf(http.StatusBadRequest, "model %q: the scripted provider cannot be chosen over HTTP", req.Model)
		}
		if m, err = modelspec.New(req.Model, modelspec.Options{}); err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
	}
	if m == nil {
		return errorf(http.StatusBadRequest, "no memory model is configured: name one in \"model\" (\"provider:model_id\") or set memory_model")
	}
	apply := req.Apply == nil || *req.Apply
	mgr := &memory.Manager{DB: d, Model: m}
	out, err := mgr.Optimize(r.Context(), memory.Target{UserID: userID}, apply)
	switch {
	case errors.Is(err, memory.ErrNoMemories):
		return errorf(http.StatusNotFound, "No memories found for user %s", userID)
	case errors.Is(err, memory.ErrTooManyMemories):
		return errorf(http.StatusUnprocessableEntity, "User %s has more than %d memories, more than one optimization combines; nothing was changed", userID, memory.MaxOptimizeMemories)
	case errors.Is(err, memory.ErrMemoriesChanged):
		return errorf(http.StatusConflict, "The user's memories changed while they were being optimized; nothing was changed. Optimize again.")
	case errors.Is(err, memory.ErrMalformedUpdates):
		s.log.WarnContext(r.Context(), "agentos: optimize memories: the model's answer is malformed", "user_id", userID, "error", err)
		return errorf(http.StatusInternalServerError, "Failed to optimize memories: the model's answer is malformed; nothing was changed")
	case err != nil:
		return err
	}
	resp := optimizeMemoriesResponse{Memories: make([]memoryView, 0, len(out.After)), MemoriesBefore: len(out.Before),
		MemoriesAfter: len(out.After), TokensBefore: out.TokensBefore, TokensAfter: out.TokensAfter}
	for i := range out.After {
		resp.Memories = append(resp.Memories, newMemoryView(&out.After[i]))
	}
	resp.TokensSaved = max(out.TokensBefore-out.TokensAfter, 0)
	if out.TokensBefore > 0 {
		resp.ReductionPercentage = math.Round(float64(resp.TokensSaved)/float64(out.TokensBefore)*1000) / 10
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
