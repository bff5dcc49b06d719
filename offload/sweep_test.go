package offload_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/offload"
)

// agnoRow inserts an expired agno_tool_results row the way another writer
// sharing the database (a Python Agno process) may: with a namespace or
// path db.DeleteFile refuses as a key Agentry never writes (empty, or
// longer than db.MaxFileNamespace / db.MaxFilePath), and its agno_fs file.
func agnoRow(t *testing.T, d *db.DB, id, namespace, path string, expires int64) {
	t.Helper()
	wp, q, bind := rawSQL(d)
	now := time.Now().Unix()
	if _, err := wp.DB.Exec(bind("INSERT INTO "+q("agno_tool_results")+" (result_id, namespace, path, session_id, size_bytes, line_count, created_at, expires_at) VALUES (?, ?, ?, 's1', 5, 1, ?, ?)"),
		id, namespace, path, now, expires); err != nil {
		t.Fatal(err)
	}
	if _, err := wp.DB.Exec(bind("INSERT INTO "+q("agno_fs")+" (namespace, path, content, size_bytes, version, created_at, updated_at) VALUES (?, ?, ?, 5, 1, ?, ?)"),
		namespace, path, []byte("hello"), now, now); err != nil {
		t.Fatal(err)
	}
}

// A row Agentry cannot address through db.DeleteFile (another writer's key)
// used to stop Sweep at itself: ordered oldest first, it came first at every
// sweep, which failed there, and no result expired after it was ever
// deleted again. The sweep deletes it (file and index row) and goes on.
func TestSweep_ARowWithAnotherWritersKeyDoesNotStopIt(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			o := newOffloader(t, d, offload.Config{TTL: offload.Duration(time.Second)})
			out, err := o.Offload(ctx, call, bigResult(800, 40))
			if err != nil || !out.Stored {
				t.Fatal(out, err)
			}
			old := time.Now().Unix() - 3600
			theirs := map[string]string{"": "results/a"} // namespace → path
			if name != "mysql" {                         // MySQL's column holds MaxFileNamespace bytes
				theirs[strings.Repeat("n", db.MaxFileNamespace+1)] = strings.Repeat("p", db.MaxFilePath+1)
			}
			i := 0
			for ns, p := range theirs {
				agnoRow(t, d, fmt.Sprintf("agno_%d", i), ns, p, old+int64(i))
				i++
			}
			offload.SetClock(o, 5)
			n, err := o.Sweep(ctx, 100)
			if err != nil || n != len(theirs)+1 {
				t.Fatalf("sweep = %d, %v; want the other writer's %d rows and ours deleted", n, err, len(theirs))
			}
			rows, err := d.ExpiredToolResults(ctx, time.Now().Unix()+10, 100)
			if err != nil || len(rows) != 0 {
				t.Fatalf("expired rows left: %+v, %v", rows, err)
			}
			if files := countRows(t, d, "agno_fs"); files != 0 {
				t.Fatalf("%d files left", files)
			}
			if results := countRows(t, d, "agno_tool_results"); results != 0 {
				t.Fatalf("%d index rows left", results)
			}
		})
	}
}

// rawSQL is d's writer pool, its table quoting and its placeholder binding.
func rawSQL(d *db.DB) (db.WriterPool, func(string) string, func(string) string) {
	wp := d.Driver().(db.SQLWriter).SQLWriter()
	q := func(name string) string {
		if wp.Dialect == "mysql" {
			return "`" + name + "`"
		}
		if wp.Schema != "" {
			return `"` + wp.Schema + `"."` + name + `"`
		}
		return `"` + name + `"`
	}
	bind := func(s string) string {
		if wp.Dialect != "postgres" {
			return s
		}
		for i := 1; strings.Contains(s, "?"); i++ {
			s = strings.Replace(s, "?", fmt.Sprintf("$%d", i), 1)
		}
		return s
	}
	return wp, q, bind
}

// countRows counts a table's rows.
func countRows(t *testing.T, d *db.DB, table string) int {
	t.Helper()
	wp, q, _ := rawSQL(d)
	var n int
	if err := wp.DB.QueryRow("SELECT count(*) FROM " + q(table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A row Sweep cannot delete at all (a namespace that is not UTF-8, which
// SQLite keeps as it was given) is passed over with its error: the rows
// that expired after it are deleted.
func TestSweep_PassesOverARowItCannotDelete(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	o := newOffloader(t, d, offload.Config{TTL: offload.Duration(time.Second)})
	out, err := o.Offload(ctx, call, bigResult(800, 40))
	if err != nil || !out.Stored {
		t.Fatal(out, err)
	}
	agnoRow(t, d, "agno_bad", "\xff", "results/a", time.Now().Unix()-3600)
	offload.SetClock(o, 5)
	n, err := o.Sweep(ctx, 100)
	if n != 1 || err == nil || !strings.Contains(err.Error(), "agno_bad") || !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("sweep = %d, %v; want ours deleted and the bad row's error", n, err)
	}
	if files := countRows(t, d, "agno_tool_results"); files != 1 {
		t.Fatalf("%d index rows left; want the bad row alone", files)
	}
}

// SweepEvery with an interval that is not positive reports it and returns:
// it panicked in time.NewTicker, taking down the process it ran in (as
// agentfs's SweepEvery did before).
func TestSweepEvery_RefusesANonPositiveInterval(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	for _, interval := range []time.Duration{0, -1} {
		var got error
		o.SweepEvery(context.Background(), interval, func(err error) { got = err })
		if got == nil {
			t.Fatalf("interval %d: no error reported", interval)
		}
	}
}
