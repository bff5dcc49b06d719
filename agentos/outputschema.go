package agentos

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentryhq/agentry/agent"
)

// checkOutputSchema rejects an output_schema that is not a usable JSON Schema
// before anything runs (the agent would otherwise fail the run, a
// background one after its 202), and one whose validation would not end
// (agent.CheckSchema).
func checkOutputSchema(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if err := agent.CheckSchema(raw, "output_schema"); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: strings.TrimPrefix(err.Error(), agent.ErrInvalidSchema.Error()+": "), Err: err}
	}
	return nil
}
