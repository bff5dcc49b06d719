package db_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// A run whose writes ctx vouches are fenced on its attempt (the durable
// queue's job fence, WithRunFenced) gets no journal fence on top; any other
// run, attempt, or a ctx without a write fence still gets the journal's.
func TestWithRunFenced_TheJournalAddsNoFenceOfItsOwn(t *testing.T) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	// A newer attempt (3) holds the run's journal: the journal's own fence
	// refuses attempt 2's writes.
	if err := j.Fence(ctx, "r1", 3); err != nil {
		t.Fatal(err)
	}
	var outerCalls int
	outer := db.WithWriteFence(ctx, func(context.Context, *sql.Tx) error { outerCalls++; return nil })
	save := func(ctx context.Context) error {
		row, err := db.RunFromOutput(&run.Output{RunID: "r1", SessionID: "s1", AgentID: "a", Status: run.StatusRunning, CreatedAt: 1, UpdatedAt: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = d.SaveRun(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "a"}, row)
		return err
	}

	// The write fence in ctx vouches for r1 at attempt 2: the journal is not
	// asked, so its newer attempt does not refuse; the vouching fence runs.
	vouched := db.WithRunFenced(outer, "r1", 2)
	fctx, ok := db.WithTxFence(vouched, j, d, "r1", 2)
	if !ok || fctx != vouched {
		t.Fatalf("WithTxFence on a vouched run: ok %v, ctx changed %v; want ctx as is, ok", ok, fctx != vouched)
	}
	if err := save(fctx); err != nil {
		t.Fatalf("vouched save: %v", err)
	}
	if outerCalls != 1 {
		t.Fatalf("the vouching fence ran %d times, want 1", outerCalls)
	}

	// Not vouched for: the journal's fence is added and refuses attempt 2.
	for _, c := range []struct {
		what string
		ctx  context.Context
	}{
		{"another attempt", db.WithRunFenced(outer, "r1", 1)},
		{"another run", db.WithRunFenced(outer, "r9", 2)},
		{"no write fence in ctx", db.WithRunFenced(ctx, "r1", 2)},
		{"no vouching", outer},
	} {
		fctx, ok := db.WithTxFence(c.ctx, j, d, "r1", 2)
		if !ok || fctx == c.ctx {
			t.Fatalf("%s: ok %v, ctx unchanged %v; want the journal's fence added", c.what, ok, fctx == c.ctx)
		}
		if err := save(fctx); !errors.Is(err, run.ErrFenced) {
			t.Errorf("%s: save of attempt 2 = %v, want run.ErrFenced from the journal (attempt 3 holds it)", c.what, err)
		}
	}
}

// WithTxFenceAfter's journal fence runs after the fence ctx carries (a
// team member's under its team's job fence: the job row is locked first),
// where WithTxFence's runs before it; a vouched run still gets none.
func TestWithTxFenceAfter_RunsAfterTheFenceInCtx(t *testing.T) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	// Attempt 3 holds the member's journal: its fence refuses attempt 2.
	if err := j.Fence(ctx, "m1", 3); err != nil {
		t.Fatal(err)
	}
	errOuter := errors.New("the outer fence refused")
	outer := db.WithWriteFence(ctx, func(context.Context, *sql.Tx) error { return errOuter })
	save := func(ctx context.Context) error {
		row, err := db.RunFromOutput(&run.Output{RunID: "m1", SessionID: "s1", AgentID: "a", Status: run.StatusRunning, CreatedAt: 1, UpdatedAt: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = d.SaveRun(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "a"}, row)
		return err
	}
	fctx, ok := db.WithTxFenceAfter(outer, j, d, "m1", 2)
	if !ok {
		t.Fatal("WithTxFenceAfter: not ok")
	}
	if err := save(fctx); !errors.Is(err, errOuter) || errors.Is(err, run.ErrFenced) {
		t.Errorf("save = %v, want the outer fence's refusal (it runs first)", err)
	}
	bctx, _ := db.WithTxFence(outer, j, d, "m1", 2)
	if err := save(bctx); !errors.Is(err, run.ErrFenced) {
		t.Errorf("WithTxFence's save = %v, want the journal's refusal (it runs first)", err)
	}
	// Alone, the journal's fence refuses.
	actx, ok := db.WithTxFenceAfter(ctx, j, d, "m1", 2)
	if err := save(actx); !ok || !errors.Is(err, run.ErrFenced) {
		t.Errorf("the journal's fence alone: ok %v, save = %v; want run.ErrFenced", ok, err)
	}
	// Vouched for: nothing is added.
	vouched := db.WithRunFenced(db.WithWriteFence(ctx, func(context.Context, *sql.Tx) error { return nil }), "m1", 2)
	if vctx, ok := db.WithTxFenceAfter(vouched, j, d, "m1", 2); !ok || vctx != vouched {
		t.Errorf("vouched: ok %v, ctx changed %v; want ctx as is", ok, vctx != vouched)
	}
}
