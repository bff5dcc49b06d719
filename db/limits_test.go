package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

// TestWrites_RefuseUserIDsAndTopicsOverTheLimits: the front refuses what the
// SQL columns cannot hold (or no client should send) for every driver, before
// the driver sees it.
func TestWrites_RefuseUserIDsAndTopicsOverTheLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("", memory.New())
	long := strings.Repeat("u", db.MaxUserIDBytes+1)
	topics := make([]string, db.MaxMemoryTopics+1)
	for i := range topics {
		topics[i] = "t"
	}
	row, _ := db.RunFromOutput(&run.Output{RunID: "r", SessionID: "s", AgentID: "a", UserID: long, Status: run.StatusCompleted})
	tests := map[string]func() error{
		"session user_id": func() error {
			_, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, UserID: long})
			return err
		},
		"session user_id from the scope": func() error {
			_, err := d.UpsertSession(db.WithUserScope(ctx, long), &db.Session{SessionID: "s", SessionType: run.TypeAgent})
			return err
		},
		"run user_id": func() error { _, err := d.UpsertRun(ctx, row); return err },
		"run and session saved together": func() error {
			_, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}, row)
			return err
		},
		"memory user_id": func() error {
			_, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: "m", Memory: "x", UserID: long})
			return err
		},
		"memory topics": func() error {
			_, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: "m", Memory: "x", UserID: "u", Topics: topics})
			return err
		},
	}
	for name, write := range tests {
		if err := write(); !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("%s: err = %v, want ErrInvalidRecord", name, err)
		}
	}
	if _, total, err := d.ListSessions(ctx, db.SessionFilter{Limit: 1, Page: 1}); err != nil || total != 0 {
		t.Errorf("%d sessions stored (%v), want none", total, err)
	}
	if _, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: "m", Memory: "x", UserID: long[1:], Topics: topics[1:]}); err != nil {
		t.Errorf("a memory at the limits: %v", err)
	}
}
