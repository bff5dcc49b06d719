package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/knowledge"
	"github.com/spf13/cobra"
)

func TestKnowledge_InsertThenSearchOfflineWithDefaults(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "agentry.db")
	data := filepath.Join(dir, "data")
	tea := filepath.Join(dir, "tea.md")
	os.WriteFile(tea, []byte("# Tea\n\nGreen tea is steeped at 80 degrees.\n"), 0o600)
	trains := filepath.Join(dir, "trains.txt")
	os.WriteFile(trains, []byte("Trains to Zurich leave hourly.\n"), 0o600)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte{0xff, 0xfe}, 0o600)

	code, out, errOut := cli(t, "knowledge", "insert", tea, trains, bad, "--db", dbPath, "--data-dir", data)
	if code == 0 || !strings.Contains(out, "completed  tea.md") || !strings.Contains(out, "FAILED     bad.txt") ||
		!strings.Contains(out, "2 inserted (2 chunks), 0 unchanged, 1 failed") {
		t.Fatalf("insert: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Count(errOut, "no embedder configured") != 1 {
		t.Fatalf("the defaults notice should appear once: %s", errOut)
	}
	code, out, _ = cli(t, "knowledge", "insert", tea, "--db", dbPath, "--data-dir", data)
	if code != 0 || !strings.Contains(out, "unchanged  tea.md") {
		t.Fatalf("re-insert: %d %s", code, out)
	}
	code, out, errOut = cli(t, "knowledge", "search", "green tea temperature", "--db", dbPath, "--data-dir", data)
	if code != 0 || !strings.HasPrefix(out, "1. tea.md  (score ") {
		t.Fatalf("search: %d\n%s\n%s", code, out, errOut)
	}
	// shared content (inserted without --user) is visible in every user's scope
	code, out, _ = cli(t, "knowledge", "search", "zurich", "--user", "alice", "--db", dbPath, "--data-dir", data)
	if code != 0 || !strings.Contains(out, "trains.txt") {
		t.Fatalf("scoped search of shared content: %d %s", code, out)
	}
}

// An insert stopped by Ctrl-C said "0 of N documents failed": the
// documents it did not try are now reported as such, with the reason.
func TestKnowledge_InsertInterruptedSaysSo(t *testing.T) {
	dir := t.TempDir()
	tea := filepath.Join(dir, "tea.md")
	os.WriteFile(tea, []byte("# Tea\n\nGreen tea is steeped at 80 degrees.\n"), 0o600)
	var f knowledgeFlags
	cmd := &cobra.Command{}
	cmd.Flags().StringVar(&f.dsn, "db", "", "")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", "")
	if err := cmd.Flags().Parse([]string{"--db", filepath.Join(dir, "agentry.db"), "--data-dir", filepath.Join(dir, "data")}); err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(context.Background())
	kb, done, err := openKB(cmd, &f)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the first document
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	err = insertWithProgress(cmd, kb, ctx, []knowledge.Content{{Path: tea}})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted: 1 of 1 documents not tried (0 failed)") {
		t.Fatalf("insert with a cancelled context: %v\n%s", err, out.String())
	}
}
