package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// TestRunsList_ReadsEveryAgnoRunShape: after migrating a 2.x database with
// Agno-shaped runs, `runs list` previews every run (a workflow run with a
// plain string input included) and --status takes every status Agno writes.
func TestRunsList_ReadsEveryAgnoRunShape(t *testing.T) {
	t.Parallel()
	sessions, err := migratetest.FromRunFiles(filepath.Join("..", "..", "run", "testdata", "agno"))
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, path := migratetest.SQLite(t)
	ctx := context.Background()
	l := migratetest.Layout{Dialect: "sqlite"}
	if err := migratetest.Create(ctx, sqlDB, l); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, sqlDB, l, migratetest.All(sessions)); err != nil {
		t.Fatal(err)
	}
	sqlDB.Close()
	if code, out, errOut := cli(t, "migrate", "up", "--db", path); code != 0 {
		t.Fatalf("migrate up: code %d out %q err %q", code, out, errOut)
	}

	code, out, errOut := cli(t, "runs", "list", "--db", path, "--limit", "100")
	if code != 0 || strings.Contains(out, "corrupt") || !strings.Contains(out, "# Solid-state batteries in 2025") ||
		!strings.Contains(out, "wf-run-okr-7") {
		t.Errorf("runs list: code %d\n%s\n%s", code, out, errOut)
	}

	for _, st := range []string{"REGENERATED", "regenerated", "PAUSED", "ERROR"} {
		code, out, errOut := cli(t, "runs", "list", "--db", path, "--limit", "100", "--status", st)
		if code != 0 || !strings.Contains(out, strings.ToUpper(st)) {
			t.Errorf("--status %s: code %d\n%s\n%s", st, code, out, errOut)
		}
	}
	code, _, errOut = cli(t, "runs", "list", "--db", path, "--limit", "100", "--status", "DONE")
	if code == 0 || !strings.Contains(errOut, "REGENERATED") {
		t.Errorf("--status DONE: code %d, stderr %q; want an error listing the statuses", code, errOut)
	}
}
