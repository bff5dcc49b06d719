package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// The benchmarks mirror Agno 3.0's performance suite with a mocked (scripted)
// model: construction, a single-turn run, a run with one tool call, and 5- and
// 25-turn conversations in memory and persisted to SQLite (file, WAL).

type weatherArgs struct {
	City string `json:"city"`
}

func weatherTool() tool.Tool {
	return tool.MustFunc(tool.FuncConfig{Name: "get_weather", Description: "Returns the weather in a city."},
		func(_ context.Context, in weatherArgs) (string, error) { return "It is sunny in " + in.City + ".", nil })
}

var benchSink *Agent

func BenchmarkAgentConstruction(b *testing.B) {
	m := scripted.Reply("hi")
	tools := []tool.Tool{weatherTool()}
	b.ReportAllocs()
	for b.Loop() {
		a, err := New(Config{Name: "Weather Agent", Model: m, Tools: tools})
		if err != nil {
			b.Fatal(err)
		}
		benchSink = a
	}
}

func BenchmarkRunSingleTurn(b *testing.B) {
	a := mustAgent(b, Config{Name: "Bench", Model: scripted.Reply("The weather is sunny today."), Tools: []tool.Tool{weatherTool()}})
	ctx := context.Background()
	in := run.TextInput("What is the weather like?")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunOneToolCall(b *testing.B) {
	a := mustAgent(b, Config{Name: "Bench", Model: script(b,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "get_weather", Args: map[string]any{"city": "Paris"}}}},
		scripted.Turn{Content: "It is sunny in Paris."},
	), Tools: []tool.Tool{weatherTool()}})
	ctx := context.Background()
	in := run.TextInput("What is the weather in Paris?")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// conversation runs turns sequential runs in one new session per op, with
// history (the last 3 runs) added to the context, as Agno's suite does.
func conversation(b *testing.B, store *db.DB, turns int) {
	conversationHistory(b, store, turns, 0)
}

// conversationHistory is conversation with the last history runs in the
// context (0: Agno's default of 3).
func conversationHistory(b *testing.B, store *db.DB, turns, history int) {
	a := mustAgent(b, Config{Name: "Bench", DB: store, AddHistoryToContext: true, NumHistoryRuns: history, Model: script(b,
		scripted.Turn{Content: "Noted. Tell me more about it and I will remember."},
	), Tools: []tool.Tool{weatherTool()}})
	ctx := context.Background()
	inputs := make([]run.Input, turns)
	for i := range inputs {
		inputs[i] = run.TextInput(fmt.Sprintf("This is message number %d of our conversation.", i))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		sid := fmt.Sprintf("bench-session-%d", n)
		for _, in := range inputs {
			if _, err := a.Run(ctx, in, WithSessionID(sid)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkConversation5Turns(b *testing.B) {
	conversation(b, db.New("", memory.New()), 5)
}

func BenchmarkConversation25Turns(b *testing.B) {
	conversation(b, db.New("", memory.New()), 25)
}

// BenchmarkConversation25TurnsWhole keeps the whole history in the context.
func BenchmarkConversation25TurnsWhole(b *testing.B) {
	conversationHistory(b, db.New("", memory.New()), 25, 26)
}

func BenchmarkConversation25TurnsSQLite(b *testing.B) {
	conversationHistory(b, benchSQLite(b), 25, 0)
}

// BenchmarkConversation25TurnsSQLiteWhole keeps the whole history in the context.
func BenchmarkConversation25TurnsSQLiteWhole(b *testing.B) {
	conversationHistory(b, benchSQLite(b), 25, 26)
}

// BenchmarkConversation25TurnsSQLiteExclusive is the SQLite conversation
// (last 3 runs) with the opt-in Config.Exclusive: the file is the process's
// alone, so transactions take no file locks and the WAL index is in memory.
func BenchmarkConversation25TurnsSQLiteExclusive(b *testing.B) {
	conversationHistory(b, benchSQLiteWith(b, sqlite.Config{Exclusive: true}), 25, 0)
}

// BenchmarkConversation25TurnsSQLiteExclusiveWhole keeps the whole history
// in the context, on an exclusive file.
func BenchmarkConversation25TurnsSQLiteExclusiveWhole(b *testing.B) {
	conversationHistory(b, benchSQLiteWith(b, sqlite.Config{Exclusive: true}), 25, 26)
}

// BenchmarkConversation25TurnsPostgres is the 25-turn conversation (last 3
// runs) stored in Postgres over loopback (AGENTRY_TEST_POSTGRES_DSN or the
// local test server; fails when it is down).
func BenchmarkConversation25TurnsPostgres(b *testing.B) {
	conversationHistory(b, testdbs.Postgres(b), 25, 0)
}

// BenchmarkConversation25TurnsMySQL is the 25-turn conversation (last 3
// runs) stored in MariaDB/MySQL over loopback (AGENTRY_TEST_MYSQL_DSN or the
// local test server; fails when it is down). No target of its own: it shows
// what the front's deadline queue and the shared sqlstore paths give the
// third backend.
func BenchmarkConversation25TurnsMySQL(b *testing.B) {
	conversationHistory(b, testdbs.MySQL(b), 25, 0)
}

// BenchmarkConversation25TurnsPostgresAsyncCommit is the Postgres
// conversation with the opt-in synchronous_commit=off: COMMIT does not wait
// for the WAL flush (docs/hotpath.md, "synchronous_commit (opt-in)": a
// server crash can lose the last ~0.6 s of commits).
func BenchmarkConversation25TurnsPostgresAsyncCommit(b *testing.B) {
	conversationHistory(b, testdbs.PostgresConfig(b, postgres.Config{SynchronousCommit: "off"}), 25, 0)
}

func benchSQLite(b testing.TB) *db.DB { return benchSQLiteWith(b, sqlite.Config{}) }

// benchSQLiteWith opens cfg on a new file of the benchmark's.
func benchSQLiteWith(b testing.TB, cfg sqlite.Config) *db.DB {
	cfg.Path = filepath.Join(b.TempDir(), "bench.db")
	store, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}
