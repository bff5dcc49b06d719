package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/internal/wirecheck"
)

// idArguments are the built-in tools' arguments naming a stored object.
var idArguments = []string{"session_id", "run_id", "user_id", "agent_id", "team_id", "workflow_id", "component_id", "db_id"}

// checkArguments refuses what the HTTP routes refuse before any work, with
// the same checks (wirecheck): a NUL anywhere in the arguments (Postgres
// stores none in text or jsonb, so a run would execute and then fail to be
// saved) and an id longer than wirecheck.MaxIDBytes or holding a control
// character. Arguments that are not JSON are left to the SDK, which reports
// them.
func checkArguments(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	if wirecheck.EscapesNUL(raw) {
		return fmt.Errorf("%w: arguments must not contain NUL characters", ErrInvalidInput)
	}
	m, _ := v.(map[string]any)
	for _, name := range idArguments {
		if s, ok := m[name].(string); ok {
			if err := wirecheck.CheckID(name, s); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidInput, err)
			}
		}
	}
	return nil
}

// checkMessage refuses a run without a message, as the run routes do.
func checkMessage(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return fmt.Errorf("%w: message is required", ErrInvalidInput)
	}
	return nil
}
