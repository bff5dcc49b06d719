package dbtest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// overlong is longer than any bounded text column of a backend (MySQL's
// VARCHAR(255)); ids stay under the front's own 255-byte bounds where it
// has them, so the backend's column decides.
var overlong = strings.Repeat("x", 300)

// overlongCase writes a record with overlong in one bounded column and
// reads that column back.
type overlongCase struct {
	write func(d *db.DB) error
	read  func(d *db.DB) (string, error)
}

var overlongCases = map[string]overlongCase{
	"UpsertSession agent_id": {
		write: func(d *db.DB) error {
			_, err := d.UpsertSession(bg, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: overlong})
			return err
		},
		read: func(d *db.DB) (string, error) {
			s, err := d.GetSession(bg, "s1")
			if err != nil {
				return "", err
			}
			return s.AgentID, nil
		},
	},
	"UpsertSession session_id": {
		write: func(d *db.DB) error {
			_, err := d.UpsertSession(bg, &db.Session{SessionID: overlong, SessionType: run.TypeAgent})
			return err
		},
		read: func(d *db.DB) (string, error) {
			// A cut id would be found under its first 255 characters.
			if _, err := d.GetSession(bg, overlong[:255]); !errors.Is(err, db.ErrNotFound) {
				return "", errors.New("the session is stored under a cut id")
			}
			s, err := d.GetSession(bg, overlong)
			if err != nil {
				return "", err
			}
			return s.SessionID, nil
		},
	},
	"UpsertMemory agent_id": {
		write: func(d *db.DB) error {
			_, err := d.UpsertMemory(bg, &db.Memory{MemoryID: "m1", Memory: "likes tea", UserID: "u", AgentID: overlong})
			return err
		},
		read: func(d *db.DB) (string, error) {
			m, err := d.GetMemory(bg, "m1")
			if err != nil {
				return "", err
			}
			return m.AgentID, nil
		},
	},
	"ApplyMemoryChanges agent_id": {
		write: func(d *db.DB) error {
			return d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u", Adds: []db.Memory{{MemoryID: "m2", Memory: "likes tea", AgentID: overlong}}})
		},
		read: func(d *db.DB) (string, error) {
			m, err := d.GetMemory(bg, "m2")
			if err != nil {
				return "", err
			}
			return m.AgentID, nil
		},
	},
	"UpsertLearning namespace": {
		write: func(d *db.DB) error {
			_, err := d.UpsertLearning(bg, &db.Learning{LearningID: "l1", LearningType: db.EntityLearningType, Namespace: overlong,
				Content: json.RawMessage(`{"facts":["x"]}`)})
			return err
		},
		read: func(d *db.DB) (string, error) {
			l, err := d.GetLearning(bg, "l1")
			if err != nil {
				return "", err
			}
			return l.Namespace, nil
		},
	},
	"CreateEvalRun name": {
		write: func(d *db.DB) error {
			_, err := d.CreateEvalRun(bg, &db.EvalRun{RunID: "e1", EvalType: "accuracy", EvalData: json.RawMessage(`{}`), Name: overlong})
			return err
		},
		read: func(d *db.DB) (string, error) {
			e, err := d.GetEvalRun(bg, "e1")
			if err != nil {
				return "", err
			}
			return e.Name, nil
		},
	},
	"InsertKnowledgeContent name": {
		write: func(d *db.DB) error {
			_, err := d.InsertKnowledgeContent(bg, &db.KnowledgeContent{ID: "k1", Name: overlong})
			return err
		},
		read: func(d *db.DB) (string, error) {
			c, err := d.GetKnowledgeContent(bg, "k1")
			if err != nil {
				return "", err
			}
			return c.Name, nil
		},
	},
	"CreateApproval tool_name": {
		write: func(d *db.DB) error {
			a := approval("ap1", "r1", "alice", 100)
			a.ToolName = overlong
			return d.CreateApproval(bg, a)
		},
		read: func(d *db.DB) (string, error) {
			a, err := d.GetApproval(bg, "ap1")
			if err != nil {
				return "", err
			}
			return a.ToolName, nil
		},
	},
	"CreateScheduleRun run_id": {
		write: func(d *db.DB) error {
			if _, err := d.CreateSchedule(bg, schedule("sch1", "nightly", "alice", 100)); err != nil {
				return err
			}
			_, err := d.CreateScheduleRun(bg, &db.ScheduleRun{ID: "sr1", ScheduleID: "sch1", Status: db.ScheduleRunRunning, RunID: overlong,
				UserID: "alice", CreatedAt: 101})
			return err
		},
		read: func(d *db.DB) (string, error) {
			r, err := d.GetScheduleRun(bg, "sr1")
			if err != nil {
				return "", err
			}
			return r.RunID, nil
		},
	},
	"UpsertToolResult tool_name": {
		write: func(d *db.DB) error {
			r := toolResult("res1", "s1", "alice")
			r.ToolName = overlong
			return d.UpsertToolResult(bg, r)
		},
		read: func(d *db.DB) (string, error) {
			r, err := d.GetToolResult(bg, "res1")
			if err != nil {
				return "", err
			}
			return r.ToolName, nil
		},
	},
	"WriteTraces name": {
		write: func(d *db.DB) error {
			tr := traceRow("t1", "alice", "s1", time.Unix(1_700_000_000, 0), 5)
			tr.Name = overlong
			return d.WriteTraces(bg, []db.Trace{tr}, nil)
		},
		read: func(d *db.DB) (string, error) {
			tr, err := d.GetTrace(bg, "t1", "")
			if err != nil {
				return "", err
			}
			return tr.Name, nil
		},
	},
}

var overlongTests = map[string]func(t *testing.T, d *db.DB){
	// A backend whose column is shorter than a value refuses the write with
	// db.ErrInvalidRecord and stores nothing; one without a bound stores
	// the value whole. No backend cuts it (MySQL's INSERT IGNORE did: it
	// turns every error into a warning).
	"OverlongValues_AreStoredWholeOrRefused": func(t *testing.T, d *db.DB) {
		for name, c := range overlongCases {
			err := c.write(d)
			if errors.Is(err, db.ErrUnsupportedDriver) || errors.Is(err, db.ErrUnsupported) || errors.Is(err, db.ErrNoKnowledge) {
				continue // the driver does not store this kind of record
			}
			got, rerr := c.read(d)
			switch {
			case err == nil && rerr != nil:
				t.Errorf("%s: written, then read: %v", name, rerr)
			case err == nil && got != overlong:
				t.Errorf("%s: written without an error, read back as %d characters, want %d", name, len(got), len(overlong))
			case err != nil && !errors.Is(err, db.ErrInvalidRecord):
				t.Errorf("%s: refused with %v, want db.ErrInvalidRecord", name, err)
			case err != nil && !errors.Is(rerr, db.ErrNotFound):
				t.Errorf("%s: refused, yet read back: %d characters (%v)", name, len(got), rerr)
			}
		}
	},
}
