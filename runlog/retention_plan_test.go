package runlog

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// Retention runs every minute on a table that holds a day of every
// background run's events: its statement reaches rows through the
// created_at index and the primary key, never by scanning the table (a
// GROUP BY run_id over all of it read every event at each pass).
// The durable queue's jobs (whose queued or running runs keep their logs)
// are read by their key too.
func TestDeleteBefore_PlanUsesTheIndexes_SQLite(t *testing.T) {
	ctx := context.Background()
	d := testdbs.SQLite(t)
	if _, err := queue.Open(ctx, d, queue.Config{}, func(context.Context, *queue.Job) (run.Status, error) {
		return run.StatusCompleted, nil
	}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := l.hasJobs(ctx)
	if err != nil || !jobs {
		t.Fatalf("the queue's jobs table is not seen: %v", err)
	}
	stmt := l.expiredSQL(jobs)
	if !strings.Contains(stmt, sqlstore.JobsTable) {
		t.Fatalf("retention does not read the jobs: %s", stmt)
	}
	args := make([]any, strings.Count(stmt, "?"))
	for i := range args {
		args[i] = 1
	}
	rows, err := l.w.QueryContext(ctx, `EXPLAIN QUERY PLAN `+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// A SCAN of the table (or of an alias of it), with or without a
	// covering index, reads every row; SEARCH reads a range.
	scan := regexp.MustCompile(`^SCAN (` + Table + `|e|m|` + sqlstore.JobsTable + `|j)\b`)
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, line := range plan {
		if scan.MatchString(line) {
			t.Fatalf("retention scans the whole table (%q); plan:\n%s", line, strings.Join(plan, "\n"))
		}
	}
	t.Logf("plan:\n%s", strings.Join(plan, "\n"))
}

// On MySQL and MariaDB the same: the table is read in the created_at
// range of old events and by run id, never whole (type ALL or index) nor
// in the range of recent events (the bulk of it).
func TestDeleteBefore_PlanUsesTheIndexes_MySQL(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, testdbs.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	// MariaDB's costs pick a scan on a near-empty table: the table holds
	// 200 runs of 100 events, a tenth of them a day old, and is analysed.
	evs := make([]Pending, 100)
	for i := range evs {
		evs[i] = Pending{Event: "RunContent", Data: []byte(`{}`), Final: i == len(evs)-1}
	}
	for i := range 200 {
		if err := l.Append(ctx, fmt.Sprintf("run-%03d", i), 1, evs, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.w.ExecContext(ctx, `UPDATE `+l.table+` SET created_at = created_at - 86400 WHERE run_id < 'run-020'`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.w.ExecContext(ctx, `ANALYZE TABLE `+l.table); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	stmt := l.expiredSQL(false) // the durable queue does not run on MySQL
	rows, err := l.w.QueryContext(ctx, `EXPLAIN `+stmt, now-3600, now-3600, now-7*3600, retentionBatch)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var plan []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		plan = append(plan, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The candidates are a range of the created_at index; every other
	// access to the table is a lookup by run id (type ref or eq_ref).
	for _, row := range plan {
		table, typ := row["table"], row["type"]
		switch {
		case strings.HasPrefix(table, "<"): // a derived table
		case table == Table && typ == "range" && row["key"] == createdAtIndex:
		case typ != "ref" && typ != "eq_ref":
			t.Fatalf("retention reads %s by %s (key %q), not by run id; plan:\n%v", table, typ, row["key"], plan)
		}
	}
	t.Logf("plan: %v", plan)
}
