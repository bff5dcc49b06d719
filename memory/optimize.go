package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// DefaultOptimizePrompt is the model's system message for Optimize.
const DefaultOptimizePrompt = `You combine a user's memories into one comprehensive memory. Keep every distinct fact, ` +
	`preference and detail; drop repetition; write in the third person. ` +
	`Answer with only a JSON object: {"summary": "the combined memory", "topics": ["..."]}.`

// Optimized is the result of Optimize.
type Optimized struct {
	Before []db.Memory
	// After are the memories once optimized (stored when applied).
	After []db.Memory
	// TokensBefore and TokensAfter estimate the memories' size in tokens
	// (about four bytes a token; no tokenizer is bundled).
	TokensBefore, TokensAfter int
}

// ErrNoMemories: the user has no memories to optimize.
var ErrNoMemories = fmt.Errorf("memory: the user has no memories")

// MaxOptimizeMemories bounds the memories Optimize combines at once: all
// of them go into one model request.
const MaxOptimizeMemories = 10_000

// ErrTooManyMemories: the user has more than MaxOptimizeMemories
// memories; nothing was read into a model request or written.
var ErrTooManyMemories = fmt.Errorf("memory: the user has more than %d memories, more than Optimize combines at once", MaxOptimizeMemories)

// optimizable reads every memory of userID for Optimize (all of them, as
// Agno combines them all; not the manager's MaxMemories, which bounds what
// a turn shows the model), or ErrTooManyMemories.
func (m *Manager) optimizable(ctx context.Context, userID string) ([]db.Memory, error) {
	ms, err := Memories(ctx, m.DB, userID, MaxOptimizeMemories+1)
	if err != nil {
		return nil, fmt.Errorf("memory: read memories of user %s: %w", userID, err)
	}
	if len(ms) > MaxOptimizeMemories {
		return nil, ErrTooManyMemories
	}
	return ms, nil
}

// ErrMemoriesChanged: another writer changed or deleted the user's
// memories while Optimize waited for its model; nothing was written, and
// optimizing again works from the memories as they are now.
var ErrMemoriesChanged = errors.New("memory: the user's memories changed while they were being optimized; nothing was changed, try again")

// Optimize combines all the user's memories (at most MaxOptimizeMemories, else
// ErrTooManyMemories) into one (Agno's summarize
// strategy). With apply, the old memories are replaced by it in one
// transaction; without, nothing is written (a preview). When another
// writer changed one of them while the model worked, nothing is written
// and the error is ErrMemoriesChanged. The combined memory is t's agent's
// and team's, or, where t names none, the one its memories all name.
func (m *Manager) Optimize(ctx context.Context, t Target, apply bool) (*Optimized, error) {
	if err := m.check(t); err != nil {
		return nil, err
	}
	before, err := m.optimizable(ctx, t.UserID)
	if err != nil {
		return nil, err
	}
	if len(before) == 0 {
		return nil, ErrNoMemories
	}
	var b strings.Builder
	var topics []string
	for _, e := range before {
		b.WriteString("- " + e.Memory + "\n")
		for _, tp := range e.Topics {
			if !slices.Contains(topics, tp) {
				topics = append(topics, tp)
			}
		}
	}
	resp, err := m.Model.Invoke(ctx, &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: DefaultOptimizePrompt},
			{Role: model.RoleUser, Content: "Memories:\n" + b.String()},
		},
		ResponseFormat: summaryFormat,
	})
	if err != nil {
		return nil, fmt.Errorf("memory: memory model: %w", err)
	}
	sum, err := ParseSummary(resp.Message.Content)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedUpdates, err)
	}
	if len(sum.Topics) > 0 {
		topics = sum.Topics
	}
	if len(topics) > db.MaxMemoryTopics {
		topics = topics[:db.MaxMemoryTopics]
	}
	if len([]rune(sum.Summary)) > MaxMemoryChars {
		return nil, fmt.Errorf("%w: the combined memory is over %d characters", ErrMalformedUpdates, MaxMemoryChars)
	}
	// As Agno's summarize strategy, the combined memory keeps the agent
	// and team its memories name when they all name the same one.
	agentID, teamID := t.AgentID, t.TeamID
	if agentID == "" {
		agentID = sole(before, func(x db.Memory) string { return x.AgentID })
	}
	if teamID == "" {
		teamID = sole(before, func(x db.Memory) string { return x.TeamID })
	}
	combined := db.Memory{MemoryID: newID(), Memory: sum.Summary, Topics: topics, UserID: t.UserID, AgentID: agentID, TeamID: teamID}
	out := &Optimized{Before: before, After: []db.Memory{combined}, TokensBefore: tokens(before)}
	out.TokensAfter = tokens(out.After)
	if !apply {
		return out, nil
	}
	// The model took its time: a memory another run updated meanwhile
	// would be deleted under a combined memory written from its old text.
	if err := m.unchanged(ctx, t.UserID, before); err != nil {
		return nil, err
	}
	ch := db.MemoryChanges{UserID: t.UserID, Adds: []db.Memory{combined}}
	for _, e := range before {
		ch.Deletes = append(ch.Deletes, e.MemoryID)
	}
	ctx = db.WithUserScope(ctx, t.UserID)
	if err := m.DB.ApplyMemoryChanges(ctx, &ch); err != nil {
		return nil, fmt.Errorf("memory: apply optimization for user %s: %w", t.UserID, err)
	}
	stored, err := m.DB.GetMemory(ctx, combined.MemoryID)
	if err != nil {
		return nil, err
	}
	out.After = []db.Memory{*stored}
	return out, nil
}

// sole is the one non-empty value of field among ms, or "" when they have
// none or several.
func sole(ms []db.Memory, field func(db.Memory) string) string {
	one := ""
	for _, x := range ms {
		switch v := field(x); {
		case v == "" || v == one:
		case one == "":
			one = v
		default:
			return ""
		}
	}
	return one
}

func tokens(ms []db.Memory) int {
	n := 0
	for _, m := range ms {
		n += (len(m.Memory) + 3) / 4
	}
	return n
}

// unchanged reports ErrMemoriesChanged unless each memory of before is
// still the user's as it was read. It narrows the window to the time
// between this read and the write; closing it needs a delete conditional
// on updated_at, which db.MemoryChanges does not have.
func (m *Manager) unchanged(ctx context.Context, userID string, before []db.Memory) error {
	now, err := m.optimizable(ctx, userID)
	if err != nil {
		return err
	}
	cur := make(map[string]db.Memory, len(now))
	for _, x := range now {
		cur[x.MemoryID] = x
	}
	for _, e := range before {
		x, ok := cur[e.MemoryID]
		if !ok || x.UpdatedAt != e.UpdatedAt || x.Memory != e.Memory || !slices.Equal(x.Topics, e.Topics) {
			return ErrMemoriesChanged
		}
	}
	return nil
}
