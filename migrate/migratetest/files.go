package migratetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// FromRunFiles builds 2.x sessions from files of run_data (one run per
// file, as Agno's to_dict writes it): one session per session_id, typed by
// its runs' ids (agent_id, else team_id, else workflow_id) and owned by their
// user_id, holding its runs in created_at order. It reads dir/*.json.
func FromRunFiles(dir string) ([]Session, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("migratetest: no run files in %s (%v)", dir, err)
	}
	type stored struct {
		data                                           json.RawMessage
		SessionID, AgentID, TeamID, WorkflowID, UserID string
		CreatedAt                                      float64
	}
	bySession := map[string][]stored{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r struct {
			SessionID  string  `json:"session_id"`
			AgentID    string  `json:"agent_id"`
			TeamID     string  `json:"team_id"`
			WorkflowID string  `json:"workflow_id"`
			UserID     string  `json:"user_id"`
			CreatedAt  float64 `json:"created_at"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.SessionID == "" {
			return nil, fmt.Errorf("migratetest: %s: not run_data with a session_id (%v)", p, err)
		}
		bySession[r.SessionID] = append(bySession[r.SessionID], stored{b, r.SessionID, r.AgentID, r.TeamID, r.WorkflowID, r.UserID, r.CreatedAt})
	}
	var out []Session
	for sid, runs := range bySession {
		slices.SortStableFunc(runs, func(a, b stored) int { return cmp.Compare(a.CreatedAt, b.CreatedAt) })
		first := runs[0]
		s := Session{SessionID: sid, UserID: first.UserID, CreatedAt: int64(first.CreatedAt)}
		switch {
		case first.AgentID != "":
			s.SessionType, s.AgentID = "agent", first.AgentID
		case first.TeamID != "":
			s.SessionType, s.TeamID = "team", first.TeamID
		default:
			s.SessionType, s.WorkflowID = "workflow", first.WorkflowID
		}
		elems := make([]json.RawMessage, len(runs))
		for i, r := range runs {
			elems[i] = r.data
		}
		s.Runs = mustJSON(elems)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.SessionID, b.SessionID) })
	return out, nil
}
