package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func openBenchSQLite(b *testing.B) *db.DB {
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// storedBytes sums what the runs, the file table and the offload index hold.
func storedBytes(b *testing.B, d *db.DB) int64 {
	st, _ := sqlstore.FromDB(d)
	var n int64
	for _, q := range []string{"SELECT COALESCE(SUM(LENGTH(run_data)), 0) FROM agno_runs", "SELECT COALESCE(SUM(LENGTH(content)), 0) FROM agno_fs",
		"SELECT COALESCE(SUM(LENGTH(preview)), 0) FROM agno_tool_results"} {
		var v int64
		if err := st.SQL().QueryRow(q).Scan(&v); err != nil {
			b.Fatal(err)
		}
		n += v
	}
	return n
}

func contextChars(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, p := range m.Parts {
			n += len(p.Text) + len(p.Data)
		}
	}
	return n
}

// BenchmarkOffload50Turns: a 50-run conversation (history on, Agno's default
// 3 runs) in which a tool returns 100 KB every turn, with and without
// offloading; it reports the characters sent to the model on turn 50 and the
// bytes stored.
func BenchmarkOffload50Turns(b *testing.B) {
	big := tool.MustFunc(tool.FuncConfig{Name: "dump_logs", Description: "Returns the logs."}, func(context.Context, struct{}) (string, error) {
		var sb strings.Builder
		for i := 0; sb.Len() < 100_000; i++ {
			fmt.Fprintf(&sb, "2026-12-01T10:00:%02d level=info request=%06d path=/api/items status=200 took=12ms\n", i%60, i)
		}
		return sb.String(), nil
	})
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var turn50, stored int64
			for b.Loop() {
				d := openBenchSQLite(b)
				rec := &recorder{Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{{Name: "dump_logs"}}}, {Content: "No errors in the logs."}}})}
				cfg := Config{ID: "ops", Model: rec, DB: d, Tools: []tool.Tool{big}, AddHistoryToContext: true}
				if mode == "on" {
					cfg.OffloadToolResults = &offload.Config{}
				}
				a := mustAgent(b, cfg)
				for i := range 50 {
					if _, err := a.Run(context.Background(), run.TextInput(fmt.Sprintf("check the logs, turn %d", i+1)), WithSessionID("s")); err != nil {
						b.Fatal(err)
					}
				}
				reqs := rec.requests()
				turn50 = int64(contextChars(reqs[len(reqs)-1]))
				stored = storedBytes(b, d)
			}
			b.ReportMetric(float64(turn50), "turn50-context-chars")
			b.ReportMetric(float64(stored), "db-bytes")
		})
	}
}

// BenchmarkMediaRunData: the stored run_data of one user message carrying a
// 113 KB JPEG, inline (no media storage) and as a reference (local storage).
func BenchmarkMediaRunData(b *testing.B) {
	img := jpeg(113 << 10)
	for _, mode := range []string{"inline", "reference"} {
		b.Run(mode, func(b *testing.B) {
			d := openBenchSQLite(b)
			cfg := Config{ID: "viewer", Model: scripted.Reply("a cat"), DB: d}
			if mode == "reference" {
				s, err := local.New(filepath.Join(b.TempDir(), "media"))
				if err != nil {
					b.Fatal(err)
				}
				cfg.MediaStorage = s
			}
			a := mustAgent(b, cfg)
			var size, refSize int
			b.ReportAllocs()
			for b.Loop() {
				out, err := a.Run(context.Background(), run.Input{InputContent: "what is this?", Images: []run.Media{{Content: img, MIMEType: "image/jpeg", Name: "cat.jpg"}}})
				if err != nil {
					b.Fatal(err)
				}
				row, err := d.GetRun(context.Background(), out.RunID)
				if err != nil {
					b.Fatal(err)
				}
				size = len(row.RunData)
				if i := strings.Index(string(row.RunData), `"media_reference":`); i >= 0 {
					end := strings.Index(string(row.RunData[i:]), "}")
					refSize = end + 1 - len(`"media_reference":`)
				}
			}
			b.ReportMetric(float64(size), "run_data-bytes")
			b.ReportMetric(float64(refSize), "reference-bytes")
		})
	}
}
