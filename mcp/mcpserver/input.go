package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// maxIDBytes bounds an id argument, as the HTTP routes bound a form's ids.
const maxIDBytes = 255

// idArguments are the built-in tools' arguments naming a stored object.
var idArguments = []string{"session_id", "run_id", "user_id", "agent_id", "team_id", "workflow_id", "component_id", "db_id"}

// checkArguments refuses what the HTTP routes refuse before any work: a NUL
// anywhere in the arguments (Postgres stores none in text or jsonb, so a
// run would execute and then fail to be saved) and an id longer than
// maxIDBytes or holding a control character. Arguments that are not JSON
// are left to the SDK, which reports them.
func checkArguments(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	if hasNUL(v) {
		return fmt.Errorf("%w: arguments must not contain NUL characters", ErrInvalidInput)
	}
	m, _ := v.(map[string]any)
	for _, name := range idArguments {
		if s, ok := m[name].(string); ok && (len(s) > maxIDBytes || strings.ContainsFunc(s, unicode.IsControl)) {
			return fmt.Errorf("%w: %s must be at most %d bytes without control characters", ErrInvalidInput, name, maxIDBytes)
		}
	}
	return nil
}

// hasNUL reports whether a decoded JSON value holds a NUL in a string or a
// member name.
func hasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		for _, e := range x {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// checkMessage refuses a run without a message, as the run routes do.
func checkMessage(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return fmt.Errorf("%w: message is required", ErrInvalidInput)
	}
	return nil
}
