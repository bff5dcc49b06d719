package migrate

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// MergeRuns returns a session's runs as reads see them until the legacy column
// is cleaned up: the legacy array in order, each element replaced by the runs
// table's row with the same run_id (the table wins), then the table's runs the
// array lacks, in the order given (run_index order). Legacy-only runs get their
// array position as RunIndex and their columns derived as the copy derives them.
// legacy is the raw column value (any encoding Agno wrote; nil for SQL NULL).
// A legacy value that cannot be decoded yields the table's runs and a
// *db.CorruptRowError; elements without run_id are left out. MergeRuns does
// not know which runs were deleted after the copy (Manager.MergedSessionRuns
// does): it shows them.
func MergeRuns(s *db.Session, legacy []byte, table []db.Run) ([]db.Run, error) {
	elems, kind, derr := decodeLegacyRuns(legacy, false)
	return mergeRuns(s, elems, kind, derr, table, nil)
}

// mergeRuns is MergeRuns over decoded elements, leaving out the runs gone
// says were deleted after the copy and not changed since.
func mergeRuns(s *db.Session, elems []json.RawMessage, kind string, derr error, table []db.Run, gone goneRuns) ([]db.Run, error) {
	var err error
	if kind != "" {
		err = &db.CorruptRowError{Table: "sessions", ID: s.SessionID, Err: fmt.Errorf("legacy runs column: %s: %w", kind, derr)}
	}
	byID := make(map[string]int, len(table))
	for i := range table {
		byID[table[i].RunID] = i
	}
	used := make([]bool, len(table))
	out := make([]db.Run, 0, len(elems)+len(table))
	ls := legacySession{SessionID: s.SessionID, UserID: s.UserID, CreatedAt: s.CreatedAt}
	seen := map[string]bool{}
	for i, e := range elems {
		r, bad, _ := elementToRun(ls, i, e)
		if bad != "" || seen[r.RunID] || gone.deleted(r) {
			continue
		}
		seen[r.RunID] = true
		if j, ok := byID[r.RunID]; ok {
			used[j] = true
			out = append(out, table[j])
			continue
		}
		out = append(out, r)
	}
	for j := range table {
		if !used[j] {
			out = append(out, table[j])
		}
	}
	return out, err
}

// MergedSessionRuns reads one session's legacy runs and its rows in the runs
// table and merges them (see MergeRuns), leaving out a run deleted from the
// runs table after the copy while its legacy element is the one copied
// (docs/adr/migrate-deleted-runs-stay-deleted.md). It returns db.ErrNotFound
// for an unknown session. Either source may be missing (before Up, after
// cleanup).
func (m *Manager) MergedSessionRuns(ctx context.Context, sessionID string) ([]db.Run, error) {
	cols, err := m.cat.columns(ctx, m.cfg.DB, m.tables.Sessions)
	if err != nil {
		return nil, err
	}
	legacyCol := "NULL"
	if _, ok := cols["runs"]; ok {
		legacyCol = m.jsonText(m.quote("runs"))
	}
	s := db.Session{SessionID: sessionID}
	var user sql.NullString
	var created sessionSeconds
	var legacy []byte
	q := fmt.Sprintf("SELECT user_id, created_at, %s FROM %s WHERE session_id = ?", legacyCol, m.qualify(m.tables.Sessions))
	err = m.cfg.DB.QueryRowContext(ctx, m.q(q), sessionID).Scan(&user, &created, &legacy)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", sessionID, db.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: read session %s: %w", sessionID, err)
	}
	s.UserID, s.CreatedAt = user.String, int64(created)
	elems, kind, derr := decodeLegacyRuns(legacy, false)
	var table []db.Run
	var gone goneRuns
	if ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Runs); err != nil {
		return nil, err
	} else if ok {
		if table, err = m.tableRuns(ctx, m.cfg.DB, sessionID); err != nil {
			return nil, err
		}
		if cands := legacyOnly(sessionID, elems, table); len(cands) > 0 {
			records, err := m.readLedger(ctx)
			if err != nil {
				return nil, err
			}
			if gone, err = m.goneAfterCopy(ctx, m.cfg.DB, records, cands); err != nil {
				return nil, err
			}
		}
	}
	return mergeRuns(&s, elems, kind, derr, table, gone)
}

// tableRuns reads a session's rows of the runs table in run_index order.
func (m *Manager) tableRuns(ctx context.Context, q queryer, sessionID string) ([]db.Run, error) {
	query := fmt.Sprintf(`SELECT run_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, run_index, %s, created_at, updated_at
FROM %s WHERE session_id = ? ORDER BY (run_index IS NULL), run_index, created_at`, m.jsonText("run_data"), m.qualify(m.tables.Runs))
	rows, err := q.QueryContext(ctx, m.q(query), sessionID)
	if err != nil {
		return nil, fmt.Errorf("migrate: read runs of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []db.Run
	for rows.Next() {
		r := db.Run{SessionID: sessionID}
		var agent, team, wf, user, parent, status sql.NullString
		var idx, updated sql.NullInt64
		var data []byte
		var runType string
		if err := rows.Scan(&r.RunID, &runType, &agent, &team, &wf, &user, &parent, &status, &idx, &data, &r.CreatedAt, &updated); err != nil {
			return nil, err
		}
		r.RunType = runTypeOf(runType)
		r.AgentID, r.TeamID, r.WorkflowID, r.UserID, r.ParentRunID = agent.String, team.String, wf.String, user.String, parent.String
		r.Status = statusOf(status.String)
		if idx.Valid {
			v := idx.Int64
			r.RunIndex = &v
		}
		r.UpdatedAt = updated.Int64
		if b, err := unwrapJSON(data); err == nil {
			data = b
		}
		r.RunData = json.RawMessage(data)
		out = append(out, r)
	}
	return out, rows.Err()
}

// encodeLegacyRuns renders run elements as the dialect's 2.x writer stored
// the legacy column: JSON, or where the dialect says StringEncodedJSON
// (SQLite) a JSON string holding the ASCII-escaped JSON text (as Python's
// json.dumps writes it), as does JSON text the column refuses (columnRefuses).
func (m *Manager) encodeLegacyRuns(elems []json.RawMessage) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(e)
	}
	b.WriteByte(']')
	if !m.sd.Migration.StringEncodedJSON {
		if m.columnRefuses(b.Bytes()) {
			// As a JSON string, the form the column held it in (the
			// copy kept such a run there): the column accepts that, and
			// the reads unwrap it.
			return pyJSONString(b.String())
		}
		return b.String()
	}
	return pyJSONString(asciiJSON(b.Bytes()))
}

// columnRefuses reports whether the dialect's JSON column refuses the JSON
// text b, valid as JSON text: an unpaired surrogate escape (Postgres jsonb,
// MariaDB's JSON_VALID) or, in binary JSON, \u0000.
func (m *Manager) columnRefuses(b []byte) bool {
	mt := m.sd.Migration
	return (mt.BinaryJSON != nil || mt.TypedJSON) && hasUnpairedSurrogate(b) || mt.BinaryJSON != nil && hasNULEscape(b)
}

// asciiJSON escapes every non-ASCII rune of valid JSON text as \uXXXX (only
// strings can hold them, so the result is equivalent JSON).
func asciiJSON(b []byte) string {
	var out bytes.Buffer
	out.Grow(len(b))
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			out.WriteByte(c)
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		writeU(&out, r)
	}
	return out.String()
}

func writeU(out *bytes.Buffer, r rune) {
	if r > 0xFFFF {
		r -= 0x10000
		fmt.Fprintf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		return
	}
	fmt.Fprintf(out, `\u%04x`, r)
}

// pyJSONString encodes s as a JSON string the way Python's json.dumps does.
func pyJSONString(s string) string {
	var out bytes.Buffer
	out.Grow(len(s) + len(s)/8 + 2)
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			out.WriteString(`\"`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\r':
			out.WriteString(`\r`)
		case r == '\t':
			out.WriteString(`\t`)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\f':
			out.WriteString(`\f`)
		case r < 0x20 || r >= utf8.RuneSelf:
			writeU(&out, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
	return out.String()
}

func runTypeOf(s string) run.Type { return run.Type(strings.ToLower(s)) }

func statusOf(s string) run.Status { return run.Status(strings.ToUpper(s)) }
