package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// readCounter counts a driver's session and history reads; on the SQL
// drivers each is one statement (a tie on run_index adds one).
type readCounter struct {
	db.Driver
	reads int
}

func (c *readCounter) GetSession(ctx context.Context, id string) (*db.Session, error) {
	c.reads++
	return c.Driver.GetSession(ctx, id)
}

func (c *readCounter) HistoryRuns(ctx context.Context, q db.HistoryQuery) ([]db.Run, error) {
	c.reads++
	return c.Driver.HistoryRuns(ctx, q)
}

func (c *readCounter) GetRun(ctx context.Context, id string) (*db.Run, error) {
	c.reads++
	return c.Driver.GetRun(ctx, id)
}

func (c *readCounter) SessionHistory(ctx context.Context, q db.HistoryQuery) (*db.Session, []db.Run, error) {
	c.reads++
	return c.Driver.(db.SessionHistoryReader).SessionHistory(ctx, q)
}

// TestRun_LoadsSessionAndHistoryInOneRead: a turn of a stored conversation
// reads its session and history runs with one driver call, one statement.
func TestRun_LoadsSessionAndHistoryInOneRead(t *testing.T) {
	t.Parallel()
	rc := &readCounter{Driver: benchSQLite(t).Driver()}
	a := mustAgent(t, Config{Name: "Bench", DB: db.New("", rc), AddHistoryToContext: true,
		Model: script(t, scripted.Turn{Content: "Noted."})})
	for i := range 5 {
		before := rc.reads
		_, err := a.Run(context.Background(), run.TextInput(fmt.Sprintf("message %d", i)), WithSessionID("s"))
		if err != nil {
			t.Fatal(err)
		}
		if got := rc.reads - before; got != 1 {
			t.Fatalf("turn %d read the store %d times, want 1 (session and history together)", i+1, got)
		}
	}
}
