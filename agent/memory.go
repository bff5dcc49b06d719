package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// MemoryConfig holds what an agent (or a team's leader) remembers across
// runs, with Agno 3.0's parameter names. Memories and past sessions are per
// user: a run without a user id stores no memory and reads none, and its
// past-session tools see nothing. Everything here needs Config.DB.
type MemoryConfig struct {
	// UpdateMemoryOnRun asks MemoryModel, after each completed run, which of
	// the user's memories the run's user messages add, change or delete,
	// and applies the answer to agno_memories in one transaction
	// (MemoryUpdateStarted / MemoryUpdateCompleted events). A failed or
	// malformed answer changes nothing; it is logged and the run still
	// completes, as in Agno.
	UpdateMemoryOnRun bool
	// EnableAgenticMemory gives the model the update_user_memory tool, which
	// hands a task ("remember that …") to the memory manager.
	EnableAgenticMemory bool
	// AddMemoriesToContext puts the user's memories in the system message
	// (the most recent first, at most memory.ContextMemories of them and
	// memory.ContextChars characters). Nil means on when UpdateMemoryOnRun
	// or EnableAgenticMemory is, as Agno.
	AddMemoriesToContext *bool
	// MemoryModel answers the memory manager; nil means Model.
	MemoryModel model.Model

	// EnableSessionSummaries folds each completed run into the session's
	// summary (the summary column, Agno's SessionSummary shape) with
	// SessionSummaryModel (SessionSummaryStarted / SessionSummaryCompleted).
	EnableSessionSummaries bool
	// AddSessionSummaryToContext puts the session's summary in the system
	// message. Nil means on when EnableSessionSummaries is, as Agno.
	AddSessionSummaryToContext *bool
	// SessionSummaryModel writes summaries; nil means Model.
	SessionSummaryModel model.Model

	// SearchPastSessions gives the model search_past_sessions and
	// read_past_session over the user's other sessions with this agent
	// (or team). NumPastSessionsToSearch (default 20) bounds the sessions
	// listed, NumPastSessionRunsInSearch (default 3) the runs previewed per
	// session, as Agno.
	SearchPastSessions         bool
	NumPastSessionsToSearch    int
	NumPastSessionRunsInSearch int
}

func (c *MemoryConfig) memoriesInContext() bool {
	if c.AddMemoriesToContext != nil {
		return *c.AddMemoriesToContext
	}
	return c.UpdateMemoryOnRun || c.EnableAgenticMemory
}

func (c *MemoryConfig) summaryInContext() bool {
	if c.AddSessionSummaryToContext != nil {
		return *c.AddSessionSummaryToContext
	}
	return c.EnableSessionSummaries
}

// memoryParts are the memory machinery New builds from MemoryConfig.
type memoryParts struct {
	manager    *memory.Manager
	summarizer *memory.Summarizer
	tools      []tool.Tool
}

// newMemoryParts checks MemoryConfig and builds its manager, summarizer and
// tools for agent a (whose memoryCaller gives the tools their caller).
func newMemoryParts(c *Config, a *Agent) (*memoryParts, error) {
	mc := &c.MemoryConfig
	on := mc.UpdateMemoryOnRun || mc.EnableAgenticMemory || mc.memoriesInContext() || mc.EnableSessionSummaries ||
		mc.summaryInContext() || mc.SearchPastSessions
	if !on {
		return nil, nil
	}
	if c.DB == nil {
		return nil, errors.New("agent: memories, session summaries and past-session search need Config.DB")
	}
	if mc.NumPastSessionsToSearch < 0 || mc.NumPastSessionRunsInSearch < 0 {
		return nil, errors.New("agent: NumPastSessionsToSearch and NumPastSessionRunsInSearch must not be negative")
	}
	caller := memory.CallerFunc(a.memoryCaller)
	mp := &memoryParts{}
	mm := mc.MemoryModel
	if mm == nil {
		mm = c.Model
	}
	mp.manager = &memory.Manager{DB: c.DB, Model: mm}
	sm := mc.SessionSummaryModel
	if sm == nil {
		sm = c.Model
	}
	mp.summarizer = &memory.Summarizer{Model: sm}
	if mc.EnableAgenticMemory {
		mp.tools = append(mp.tools, memory.UpdateTool(mp.manager, caller))
	}
	if mc.SearchPastSessions {
		ps := memory.PastSessions{DB: c.DB, Sessions: mc.NumPastSessionsToSearch, Runs: mc.NumPastSessionRunsInSearch}
		mp.tools = append(mp.tools, ps.Tools(caller)...)
	}
	for _, t := range c.Tools {
		n := t.Definition().Name
		if slices.ContainsFunc(mp.tools, func(m tool.Tool) bool { return m.Definition().Name == n }) {
			return nil, fmt.Errorf("agent: a tool is named %q, which the memory settings add; rename it", n)
		}
	}
	return mp, nil
}

// memoryCaller is the caller of the agent's memory tools: the run's user and
// session, the agent's component.
func (a *Agent) memoryCaller(ctx context.Context) memory.Caller {
	rc, _ := FromContext(ctx)
	return memory.Caller{UserID: rc.UserID, SessionID: rc.SessionID, Component: a.Component()}
}

// loadMemories reads the user's memories for the system message.
func (st *state) loadMemories() error {
	if st.a.mem == nil || !st.a.conf().memoriesInContext() || st.out.UserID == "" {
		return nil
	}
	ms, err := memory.Memories(st.ctx, st.a.conf().DB, st.out.UserID, memory.ContextMemories)
	if err != nil {
		return fmt.Errorf("%w: load memories of user %s: %w", ErrStorage, st.out.UserID, err)
	}
	x := st.extras()
	x.memories, x.memoriesLoaded = ms, true
	return nil
}

// memoryContext is the system message's memory and summary sections.
func (st *state) memoryContext() string {
	var s string
	if st.ext != nil && st.ext.memoriesLoaded {
		s = memory.ContextBlock(st.ext.memories, st.a.conf().EnableAgenticMemory)
	}
	if st.a.mem != nil && st.a.conf().summaryInContext() && st.session != nil {
		if sum := memory.SummaryBlock(memory.DecodeSummary(st.session.Summary)); sum != "" {
			if s != "" {
				s += "\n\n"
			}
			s += sum
		}
	}
	return s
}

// afterRun updates the user's memories and the session summary once the
// run completed, before it is stored and RunCompleted is sent (Agno's
// order). Failures are logged; the run's answer stands.
func (st *state) afterRun() {
	mp := st.a.mem
	if mp == nil {
		return
	}
	c := st.a.conf()
	if c.UpdateMemoryOnRun && st.out.UserID != "" {
		st.updateMemories(mp)
	}
	if c.EnableSessionSummaries && st.out.ParentRunID == "" {
		st.summarize(mp)
	}
}

func (st *state) updateMemories(mp *memoryParts) {
	if st.sink.on() {
		st.emit(st.ev(run.EventMemoryUpdateStarted))
	}
	t := memory.Target{UserID: st.out.UserID}
	if st.p.comp.Type == run.TypeTeam {
		t.TeamID = st.p.comp.ID
	} else {
		t.AgentID = st.p.comp.ID
	}
	res, err := mp.manager.Update(st.ctx, t, st.msgs)
	if res != nil {
		st.usage.Add(res.Usage)
		st.account("memory_model", mp.manager.Model.Info(), res.Usage)
	}
	if err != nil {
		slog.WarnContext(st.ctx, "agent: memory update failed; no memory was changed", "run_id", st.out.RunID, "user_id", st.out.UserID, "error", err)
	}
	if st.sink.on() {
		e := st.ev(run.EventMemoryUpdateCompleted)
		if ms, err := memory.Memories(context.WithoutCancel(st.ctx), st.a.conf().DB, st.out.UserID, 0); err == nil {
			e.Memories = memory.Dicts(ms)
		}
		st.emit(e)
	}
}

func (st *state) summarize(mp *memoryParts) {
	if st.sink.on() {
		st.emit(st.ev(run.EventSessionSummaryStarted))
	}
	var prev *memory.Summary
	if st.session != nil {
		prev = memory.DecodeSummary(st.session.Summary)
	}
	sum, usage, err := mp.summarizer.Summarize(st.ctx, prev, st.msgs)
	st.usage.Add(usage)
	st.account("session_summary_model", mp.summarizer.Model.Info(), usage)
	if err != nil {
		slog.WarnContext(st.ctx, "agent: session summary failed; the session keeps its summary", "run_id", st.out.RunID, "session_id", st.out.SessionID, "error", err)
	} else {
		st.extras().summary, _ = json.Marshal(sum)
	}
	if st.sink.on() {
		e := st.ev(run.EventSessionSummaryCompleted)
		if st.ext != nil && st.ext.summary != nil {
			e.SessionSummary = st.ext.summary
		} else if st.session != nil && len(st.session.Summary) > 0 {
			// A copy: the session may be the store's own (ReadOnlySession).
			e.SessionSummary = bytes.Clone(st.session.Summary)
		}
		st.emit(e)
	}
}

// sessionSummary is the session row's summary as this run leaves it.
func (st *state) sessionSummary(old *db.Session) json.RawMessage {
	if st.ext != nil && st.ext.summary != nil {
		return st.ext.summary
	}
	if old != nil {
		return old.Summary
	}
	return nil
}
