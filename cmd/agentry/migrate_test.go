package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// legacySQLite builds an Agno 2.x SQLite database (runs in the sessions table)
// from the canonical fixtures and returns its path.
func legacySQLite(t *testing.T) string {
	t.Helper()
	sqlDB, path := migratetest.SQLite(t)
	ctx := context.Background()
	l := migratetest.Layout{Dialect: "sqlite"}
	if err := migratetest.Create(ctx, sqlDB, l); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, sqlDB, l, migratetest.All(migratetest.Canonical())); err != nil {
		t.Fatal(err)
	}
	sqlDB.Close()
	return path
}

func TestMigrate_LegacyDatabaseFlow(t *testing.T) {
	t.Parallel()
	path := legacySQLite(t)
	wantRuns, wantBad := migratetest.Expected(migratetest.Canonical())

	// Before migrating, reads fail with the fix in the message.
	code, _, errOut := cli(t, "runs", "list", "--db", path, "--limit", "5")
	if code == 0 || !strings.Contains(errOut, "agentry migrate up") {
		t.Fatalf("runs list on 2.x db: code %d, stderr %q; want a MigrationRequired error naming the fix", code, errOut)
	}

	code, out, errOut := cli(t, "migrate", "status", "--db", path)
	if code != 0 || !strings.Contains(out, "agno_sessions") || !strings.Contains(out, "3.0.0") || !strings.Contains(out, "legacy runs column") {
		t.Fatalf("status: code %d out %q err %q", code, out, errOut)
	}

	// A dry run changes nothing: status afterwards still shows pending steps.
	code, out, _ = cli(t, "migrate", "up", "--db", path, "--dry-run")
	if !strings.Contains(out, "(dry run)") {
		t.Fatalf("dry run output %q (code %d)", out, code)
	}
	if code, _, errOut = cli(t, "runs", "list", "--db", path, "--limit", "5"); code == 0 {
		t.Fatalf("dry run migrated the database: %s", errOut)
	}

	// Up copies the runs; bad rows make the exit code 2 but never stop it.
	code, out, errOut = cli(t, "migrate", "up", "--db", path, "--json")
	var sum struct {
		RunsCopied  int64 `json:"runs_copied"`
		BadRowCount int64 `json:"bad_row_count"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("up --json output %q: %v (stderr %s)", out, err, errOut)
	}
	if sum.RunsCopied != int64(len(wantRuns)) || sum.BadRowCount != int64(len(wantBad)) {
		t.Fatalf("up copied %d runs with %d bad rows, want %d and %d", sum.RunsCopied, sum.BadRowCount, len(wantRuns), len(wantBad))
	}
	if wantCode := map[bool]int{true: 2, false: 0}[len(wantBad) > 0]; code != wantCode {
		t.Fatalf("up exit code %d, want %d (stderr %s)", code, wantCode, errOut)
	}

	// The 3.0 API now reads every copied run of a session.
	r := wantRuns[0]
	code, out, errOut = cli(t, "runs", "list", "--db", path, "--session", r.SessionID, "--limit", "100", "--json")
	if code != 0 || !strings.Contains(out, r.RunID) {
		t.Fatalf("runs list after up: code %d out %q err %q", code, out, errOut)
	}

	// Up again converges: nothing more to copy.
	if code, out, _ = cli(t, "migrate", "up", "--db", path); !strings.Contains(out, "nothing to do") {
		t.Fatalf("second up: code %d out %q", code, out)
	}

	// Status names the runs the runs table lacks (the bad rows); cleanup
	// refuses to drop them, with or without --force; only
	// --discard-uncopied-runs drops them, and says so.
	if code, out, _ = cli(t, "migrate", "status", "--db", path); code != 0 || !strings.Contains(out, "not in the runs table") {
		t.Fatalf("status after up: code %d out %q", code, out)
	}
	for _, args := range [][]string{nil, {"--force"}} {
		code, _, errOut = cli(t, append([]string{"migrate", "cleanup", "--db", path}, args...)...)
		if code == 0 || !strings.Contains(errOut, "not in the runs table") || !strings.Contains(errOut, "--discard-uncopied-runs") {
			t.Fatalf("cleanup %v: code %d stderr %q; want a refusal naming the uncopied runs", args, code, errOut)
		}
	}
	code, out, errOut = cli(t, "migrate", "cleanup", "--db", path, "--force", "--discard-uncopied-runs")
	if code != 0 || !strings.Contains(out, "dropped") || !strings.Contains(out, fmt.Sprintf("WARNING: discarded %d legacy runs", len(wantBad))) {
		t.Fatalf("cleanup --force --discard-uncopied-runs: code %d out %q err %q", code, out, errOut)
	}
	if code, out, _ = cli(t, "migrate", "cleanup", "--db", path); code != 0 || !strings.Contains(out, "already gone") {
		t.Fatalf("second cleanup: code %d out %q", code, out)
	}
}

func TestMigrate_DownNeedsTarget(t *testing.T) {
	t.Parallel()
	code, _, errOut := cli(t, "migrate", "down", "--db", legacySQLite(t))
	if code == 0 || !strings.Contains(errOut, "--to") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

func TestMigrate_UnreachableServerFailsFast(t *testing.T) {
	t.Parallel()
	code, _, errOut := cli(t, "migrate", "status", "--db", "postgres://nobody:secret@127.0.0.1:1/none")
	if code == 0 || !strings.Contains(errOut, "cannot connect") || strings.Contains(errOut, "secret") {
		t.Fatalf("code %d stderr %q: want a clear error without the password", code, errOut)
	}
}

// On a terminal the progress bar ends its line when it reaches 100 %, so
// the next line (a log line, the summary) starts on a line of its own, and
// finishing adds no blank line.
func TestMigrate_ProgressBarEndsItsLineAt100(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &progressReporter{w: &buf, tty: true}
	p.report(migrate.Progress{Step: "copy runs", Table: "agno_sessions", SessionsDone: 5, SessionsTotal: 10, RunsCopied: 7})
	if strings.HasSuffix(buf.String(), "\n") {
		t.Fatalf("the bar ended its line at 50 %%: %q", buf.String())
	}
	p.report(migrate.Progress{Step: "copy runs", Table: "agno_sessions", SessionsDone: 10, SessionsTotal: 10, RunsCopied: 14})
	if !strings.HasSuffix(buf.String(), "\n") || !strings.Contains(buf.String(), "100%") {
		t.Fatalf("the bar did not end its line at 100 %%: %q", buf.String())
	}
	n := buf.Len()
	p.finish()
	if buf.Len() != n {
		t.Errorf("finish wrote %q after a finished bar", buf.String()[n:])
	}
}

func TestPrintSummary_DownSaysWhichDeletedRunsItLeavesOut(t *testing.T) {
	for _, c := range []struct {
		dry  bool
		want string
	}{
		{true, "(dry run) down: would leave out 2 runs deleted after up copied them"},
		{false, "down: left out 2 runs deleted after up copied them"},
	} {
		var b bytes.Buffer
		printSummary(&b, "down", &migrate.Summary{DryRun: c.dry, SessionsRebuilt: 1, RunsRestored: 3, DeletedRunsLeftOut: 2})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("dry run %v: %q, want it to say %q", c.dry, b.String(), c.want)
		}
		b.Reset()
		printSummary(&b, "down", &migrate.Summary{DryRun: c.dry, SessionsRebuilt: 1, RunsRestored: 3})
		if strings.Contains(b.String(), "deleted") {
			t.Errorf("dry run %v, nothing left out: %q", c.dry, b.String())
		}
	}
}

// A step that only moves a table's version stamp says so; it printed
// "agno_memories 3.0.0 → 2.5.6: " with nothing after the colon.
func TestPrintSummary_StepWithoutActionsSaysItOnlyStamps(t *testing.T) {
	var b bytes.Buffer
	printSummary(&b, "down", &migrate.Summary{Steps: []migrate.Step{{Table: "agno_memories", From: "3.0.0", To: "2.5.6"}}})
	if want := "agno_memories 3.0.0 → 2.5.6: version stamp only (no change to the table)\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("summary %q, want it to contain %q", b.String(), want)
	}
}

// The text status names an interrupted down (runs written back, runs
// table dropped: the state a crash past the drop leaves) and the command
// that finishes it; a down then finishes it.
func TestMigrateStatus_SaysHowToFinishAnInterruptedDown(t *testing.T) {
	t.Parallel()
	path := legacySQLite(t)
	if code, _, errOut := cli(t, "migrate", "up", "--db", path); code != 0 && code != 2 {
		t.Fatalf("up: code %d, %s", code, errOut)
	}
	// What Down leaves when it stops right after the drop.
	d, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO agno_migration_progress (table_name, step, last_session_id, sessions_done, runs_copied, updated_at) VALUES ('agno_sessions', 'down 3.0.0: runs written back, dropping the runs table', '', 0, 0, 1)`,
		`DROP TABLE agno_runs`,
	} {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	d.Close()
	code, out, errOut := cli(t, "migrate", "status", "--db", path)
	if code != 0 || !strings.Contains(out, "interrupted down") || !strings.Contains(out, "agentry migrate down --to 2.5.6") {
		t.Fatalf("status: code %d out %q err %q; want the interrupted down and its command", code, out, errOut)
	}
	if code, _, errOut := cli(t, "migrate", "down", "--to", "2.5.6", "--db", path); code != 0 {
		t.Fatalf("down: code %d, %s", code, errOut)
	}
	if _, out, _ := cli(t, "migrate", "status", "--db", path); strings.Contains(out, "interrupted down") {
		t.Fatalf("status after the down: %q", out)
	}
}

// The commands migrate prints for the user to run next (cleanup's refusal
// before up, status's note on an interrupted copy) repeated the --db value
// with its password and left out --schema: run as printed, they migrated
// the default schema. They name the same database and schema, without the
// password, as the hint of a store that needs a migration does.
func TestMigrate_HintsKeepTheSchemaAndHideThePassword(t *testing.T) {
	t.Parallel()
	sqlDB, schema, base := migratetest.Postgres(t)
	ctx := context.Background()
	l := migratetest.Layout{Dialect: "postgres", Schema: schema}
	if err := migratetest.Create(ctx, sqlDB, l); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, sqlDB, l, migratetest.All(migratetest.Canonical()[:3])); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-hint-pw"
	u.User = url.UserPassword(u.User.Username(), secret) // trust auth ignores it
	dsnWithPW := u.String()
	check := func(what, text string) {
		t.Helper()
		if strings.Contains(text, secret) {
			t.Errorf("%s repeats the password: %q", what, text)
		}
		if !strings.Contains(text, "--schema "+schema) || !strings.Contains(text, "xxxxx") {
			t.Errorf("%s = %q, want a command with --schema %s and the password hidden", what, text, schema)
		}
	}
	code, _, errOut := cli(t, "migrate", "cleanup", "--db", dsnWithPW, "--schema", schema)
	if code == 0 || !strings.Contains(errOut, "agentry migrate up") {
		t.Fatalf("cleanup before up: code %d, stderr %q; want a refusal naming up", code, errOut)
	}
	check("cleanup's refusal", errOut)

	if code, _, errOut := cli(t, "migrate", "up", "--db", dsnWithPW, "--schema", schema); code != 0 && code != 2 {
		t.Fatalf("up: code %d, %s", code, errOut)
	}
	// What a copy interrupted after a batch leaves.
	if _, err := sqlDB.Exec(`INSERT INTO "` + schema + `".agno_migration_progress (table_name, step, last_session_id, sessions_done, runs_copied, updated_at) VALUES ('agno_sessions', '3.0.0', 'x', 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "migrate", "status", "--db", dsnWithPW, "--schema", schema)
	if code != 0 || !strings.Contains(out, "interrupted copy") {
		t.Fatalf("status: code %d out %q err %q; want the interrupted copy", code, out, errOut)
	}
	check("status's note", out)
}
