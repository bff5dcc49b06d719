package migratetest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"
)

// Session is one 2.x sessions row.
type Session struct {
	SessionID   string
	SessionType string // agent, team or workflow
	AgentID     string
	TeamID      string
	WorkflowID  string
	UserID      string
	CreatedAt   int64
	// Runs is the logical content of the runs column: nil is SQL NULL;
	// otherwise JSON text ("null", "[]", "[{…}]", "{…}") or, for a broken row,
	// text that is not JSON. Insert encodes it as each dialect's writer did.
	Runs []byte
}

// Encode returns the runs column value as Agno's writer for the dialect
// stores it: on SQLite a JSON string holding ASCII-escaped JSON text; on
// Postgres and MySQL the JSON itself, or, for text that is not JSON (which
// those column types reject), a JSON string holding it.
func Encode(dialect string, runs []byte) any {
	if runs == nil {
		return nil
	}
	if dialect == "sqlite" {
		if !json.Valid(runs) {
			return string(runs)
		}
		return pyString(asciiJSON(runs))
	}
	if !json.Valid(runs) {
		b, _ := json.Marshal(string(runs))
		return string(b)
	}
	return string(runs)
}

// Insert writes sessions in multi-row statements, one transaction per 200.
func Insert(ctx context.Context, db *sql.DB, l Layout, sessions iter.Seq[Session]) error {
	l = l.withDefaults()
	cols := []string{"session_id", "session_type", "agent_id", "team_id", "workflow_id", "user_id", "session_data", "runs", "created_at", "updated_at"}
	flush := func(batch []Session) error {
		if len(batch) == 0 {
			return nil
		}
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
		q := "INSERT INTO " + l.table(l.SessionsTable) + " (" + strings.Join(cols, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", len(batch)), ", ")
		args := make([]any, 0, len(batch)*len(cols))
		for _, s := range batch {
			data := fmt.Sprintf(`{"session_name": %q}`, "session "+s.SessionID)
			args = append(args, s.SessionID, s.SessionType, null(s.AgentID), null(s.TeamID), null(s.WorkflowID), null(s.UserID),
				Encode(l.Dialect, []byte(data)), Encode(l.Dialect, s.Runs), s.CreatedAt, s.CreatedAt+10)
		}
		_, err := db.ExecContext(ctx, rebind(l, q), args...)
		if err != nil {
			return fmt.Errorf("migratetest: insert sessions: %w", err)
		}
		return nil
	}
	var batch []Session
	size := 0
	for s := range sessions {
		batch = append(batch, s)
		size += len(s.Runs)
		if len(batch) == 200 || size > 2<<20 {
			if err := flush(batch); err != nil {
				return err
			}
			batch, size = batch[:0], 0
		}
	}
	return flush(batch)
}

// All adapts a slice for Insert.
func All(s []Session) iter.Seq[Session] { return slices.Values(s) }

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// asciiJSON escapes non-ASCII runes as \uXXXX, as Python's json.dumps does.
func asciiJSON(b []byte) string {
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r < utf8.RuneSelf {
			out.WriteByte(b[0])
		} else {
			writeU(&out, r)
		}
		b = b[n:]
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

// pyString is json.dumps(s) for an ASCII s.
func pyString(s string) string {
	var out bytes.Buffer
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&out, `\u%04x`, c)
			} else {
				out.WriteByte(c)
			}
		}
	}
	out.WriteByte('"')
	return out.String()
}
