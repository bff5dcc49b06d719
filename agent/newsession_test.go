package agent

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func TestWithNewSession_StoresWithoutReadingFirst(t *testing.T) {
	t.Parallel()
	drv := &countingDriver{Driver: memory.New()}
	store := db.New("", drv)
	a := mustAgent(t, Config{Model: scripted.Reply("ok"), DB: store, AddHistoryToContext: true})
	ctx := context.Background()
	out, err := a.Run(ctx, run.TextInput("first"), WithNewSession("fresh"))
	if err != nil {
		t.Fatal(err)
	}
	if drv.getSession.Load() != 0 {
		t.Errorf("session reads before a new session's first run = %d, want 0", drv.getSession.Load())
	}
	if _, err := store.GetSession(ctx, "fresh"); err != nil {
		t.Fatalf("new session not stored: %v", err)
	}
	// The next run in that session reads it and its history.
	if _, err := a.Run(ctx, run.TextInput("second"), WithSessionID(out.SessionID)); err != nil {
		t.Fatal(err)
	}
	// Two session reads: the test's check above and the second run's.
	if drv.getSession.Load() != 2 || drv.history.Load() != 1 {
		t.Errorf("%d session reads, %d history reads, want 2 and 1", drv.getSession.Load(), drv.history.Load())
	}
}

func TestRun_GeneratedSessionIsNotRead(t *testing.T) {
	t.Parallel()
	drv := &countingDriver{Driver: memory.New()}
	a := mustAgent(t, Config{Model: scripted.Reply("ok"), DB: db.New("", drv)})
	if _, err := a.Run(context.Background(), run.TextInput("hi")); err != nil {
		t.Fatal(err)
	}
	if drv.getSession.Load() != 0 {
		t.Errorf("session reads = %d, want 0", drv.getSession.Load())
	}
}
