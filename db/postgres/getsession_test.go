package postgres_test

import (
	"bytes"
	"database/sql"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// GetSession reads through pgx's own rows (the dialect's QueryRows): every
// column must come back as database/sql reads it from the same row: NULLs,
// JSONB as Postgres prints it (its key order and spacing, escapes, large
// numbers), and the user scope.
func TestGetSession_PgxRowsAsDatabaseSQL(t *testing.T) {
	t.Parallel()
	schema := randomName()
	d := openFresh(t, postgres.Config{Schema: schema})
	st, _ := sqlstore.FromDB(d)
	pool := st.SQL()
	table := st.SQLDialect().Quote(schema) + ".agno_sessions"
	rows := []struct {
		id   string
		vals []any // agent_id … updated_at, after session_id and session_type
	}{
		{"nulls", []any{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, 1, nil}},
		{"full", []any{"a1", "t1", "w1", "u1",
			`{"z":1,"a":{"名":"é ☃ \u001fx","n":123456789012345678901234567890,"f":1.5e300,"list":[1,{"c":null},"\"q\""]}}`,
			`{"name":"agent"}`, `[1,2,3]`, `{"w":true}`, `{"k":"v"}`, `{"summary":"s","topics":["a"]}`,
			1700000000, 1700000123}},
		{"empty", []any{"", "", "", "", `{}`, `[]`, `{}`, `{}`, `{}`, `{}`, 0, 0}},
	}
	for _, r := range rows {
		args := append([]any{r.id, "agent"}, r.vals...)
		if _, err := pool.ExecContext(ctx, `INSERT INTO `+table+` (session_id, session_type, agent_id, team_id, workflow_id, user_id,
			session_data, agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, args...); err != nil {
			t.Fatalf("%s: %v", r.id, err)
		}
	}
	for _, r := range rows {
		got, err := d.GetSession(ctx, r.id)
		if err != nil {
			t.Fatalf("%s: %v", r.id, err)
		}
		var (
			typ                           string
			agent, team, wf, user         sql.NullString
			sd, ad, td, wd, meta, summary []byte
			created                       int64
			updated                       sql.NullInt64
		)
		if err := pool.QueryRowContext(ctx, `SELECT session_type, agent_id, team_id, workflow_id, user_id, session_data, agent_data,
			team_data, workflow_data, metadata, summary, created_at, updated_at FROM `+table+` WHERE session_id = $1`, r.id).
			Scan(&typ, &agent, &team, &wf, &user, &sd, &ad, &td, &wd, &meta, &summary, &created, &updated); err != nil {
			t.Fatal(err)
		}
		if string(got.SessionType) != typ || got.AgentID != agent.String || got.TeamID != team.String || got.WorkflowID != wf.String ||
			got.UserID != user.String || got.CreatedAt != created || got.UpdatedAt != updated.Int64 {
			t.Errorf("%s: columns %+v, database/sql reads %q %v %v %v %v %d %v", r.id, got, typ, agent, team, wf, user, created, updated)
		}
		for _, c := range []struct {
			name      string
			got, want []byte
		}{{"session_data", got.SessionData, sd}, {"agent_data", got.AgentData, ad}, {"team_data", got.TeamData, td},
			{"workflow_data", got.WorkflowData, wd}, {"metadata", got.Metadata, meta}, {"summary", got.Summary, summary}} {
			if !bytes.Equal(c.got, c.want) || (c.got == nil) != (c.want == nil) {
				t.Errorf("%s %s: %q, database/sql reads %q", r.id, c.name, c.got, c.want)
			}
		}
	}
	if _, err := d.GetSession(db.WithUserScope(ctx, "u2"), "full"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("another user's session: %v, want db.ErrNotFound", err)
	}
	if got, err := d.GetSession(db.WithUserScope(ctx, "u1"), "full"); err != nil || got.UserID != "u1" {
		t.Errorf("the owner's session: %+v, %v", got, err)
	}
	if _, err := d.GetSession(ctx, "missing"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("a missing session: %v, want db.ErrNotFound", err)
	}
}
