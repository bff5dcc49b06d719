package db_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
)

// A page whose row offset, (page-1)*limit, is past the int64 range is an
// invalid filter at the front, for every list: a driver would wrap it to a
// negative OFFSET (an error on Postgres and MySQL, page 1's rows on SQLite,
// a panic in the memory driver). The last page whose offset fits is served.
func TestLists_APageWhoseOffsetOverflowsIsAnInvalidFilter(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]*db.DB{"memory": db.New("", memory.New()), "sqlite": testdbs.SQLite(t)} {
		t.Run(name, func(t *testing.T) { checkPageOffsets(t, d, name == "memory") })
	}
}

func checkPageOffsets(t *testing.T, d *db.DB, inMemory bool) {
	ctx := context.Background()
	const limit = 10
	lists := map[string]func(page int) error{
		"sessions": func(p int) error {
			_, _, err := d.ListSessions(ctx, db.SessionFilter{Limit: limit, Page: p})
			return err
		},
		"runs": func(p int) error { _, _, err := d.GetRuns(ctx, db.RunFilter{Limit: limit, Page: p}); return err },
		"memories": func(p int) error {
			_, _, err := d.ListMemories(ctx, db.MemoryFilter{Limit: limit, Page: p})
			return err
		},
		"memory stats": func(p int) error { _, _, err := d.UserMemoryStats(ctx, limit, p); return err },
		"evals":        func(p int) error { _, _, err := d.ListEvalRuns(ctx, db.EvalFilter{Limit: limit, Page: p}); return err },
		"knowledge": func(p int) error {
			_, _, err := d.ListKnowledgeContents(ctx, db.KnowledgeFilter{Limit: limit, Page: p})
			return err
		},
		"learnings": func(p int) error {
			_, _, err := d.ListLearnings(ctx, db.LearningFilter{Limit: limit, Page: p})
			return err
		},
		"learning users": func(p int) error { _, _, err := d.LearningUsers(ctx, "", "", limit, p); return err },
		"approvals": func(p int) error {
			_, _, err := d.ListApprovals(ctx, db.ApprovalFilter{Limit: limit, Page: p})
			return err
		},
		"components": func(p int) error {
			_, _, err := d.ListComponents(ctx, db.ComponentFilter{Limit: limit, Page: p})
			return err
		},
		"schedules": func(p int) error {
			_, _, err := d.ListSchedules(ctx, db.ScheduleFilter{Limit: limit, Page: p})
			return err
		},
		"schedule runs": func(p int) error {
			_, _, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{Limit: limit, Page: p})
			return err
		},
		"traces": func(p int) error { _, _, err := d.ListTraces(ctx, db.TraceFilter{Limit: limit, Page: p}); return err },
		"trace sessions": func(p int) error {
			_, _, err := d.TraceSessionStats(ctx, db.TraceStatsFilter{Limit: limit, Page: p})
			return err
		},
	}
	if inMemory {
		delete(lists, "knowledge") // the memory driver stores no knowledge
	}
	lastFitting := math.MaxInt64/limit + 1 // offset limit*(MaxInt64/limit) <= MaxInt64
	for name, list := range lists {
		if err := list(math.MaxInt64); !errors.Is(err, db.ErrInvalidFilter) {
			t.Errorf("%s, page MaxInt64: %v, want ErrInvalidFilter", name, err)
		}
		if err := list(lastFitting + 1); !errors.Is(err, db.ErrInvalidFilter) {
			t.Errorf("%s, the first page past int64: %v, want ErrInvalidFilter", name, err)
		}
		if err := list(lastFitting); err != nil {
			t.Errorf("%s, the last page whose offset fits: %v", name, err)
		}
	}
}
