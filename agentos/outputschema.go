package agentos

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentryhq/agentry/internal/schemabound"
	"github.com/google/jsonschema-go/jsonschema"
)

// checkOutputSchema rejects an output_schema that is not a usable JSON Schema
// before anything runs (the agent would otherwise fail the run), and one
// whose validation would not end (schemabound.CheckParsed: as the agent's
// jsonschema-go reads it).
func checkOutputSchema(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(raw, &sch); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a JSON Schema: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
	}
	if _, err := sch.Resolve(nil); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a usable JSON Schema: " + err.Error(), Err: err}
	}
	if _, err := schemabound.CheckParsed(&sch); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a usable JSON Schema: " + err.Error(), Err: err}
	}
	return nil
}
