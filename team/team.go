package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"iter"
	"sync"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Config configures a Team. Field names follow Agno's team parameters; zero
// values take the documented defaults. Model and Members are required.
type Config struct {
	// ID identifies the team (team_id). Default: Name lower-cased with spaces
	// as dashes; with no Name, a random UUID.
	ID          string
	Name        string
	Description string
	// Model is the leader's model; it sees the delegation tools only.
	Model model.Model
	// Members are the agents the leader delegates to, addressed by their IDs.
	Members []*agent.Agent
	// Tools are given to the leader besides the delegation tools (for
	// instance CodeMode's execute and restart).
	Tools []tool.Tool
	// Instructions for the leader, added after the team prompt.
	Instructions agent.Instructions
	// DB stores the team's sessions and runs; nil means nothing is persisted.
	// Members store their runs in their own DB.
	DB *db.DB
	// AddHistoryToContext adds the team's last NumHistoryRuns runs of the
	// session (never member runs) to the leader's context.
	AddHistoryToContext bool
	NumHistoryRuns      int
	// DelegateToAllMembers adds delegate_task_to_members, which sends one task
	// to every member at once (Agno's delegate_to_all_members).
	DelegateToAllMembers bool
	// Metadata is copied into every team run's metadata.
	Metadata map[string]any
	// StoreEvents records the leader's events in the stored team run.
	StoreEvents bool
	// OffloadToolResults and MediaStorage are the leader's (see
	// agent.Config): oversized results of the leader's own tools are
	// offloaded and the team run's media are stored as references. Members
	// offload by their own configuration before their runs are stored.
	OffloadToolResults *offload.Config
	MediaStorage       media.Storage

	// MemoryConfig is the leader's (see agent.MemoryConfig; Agno's team has
	// the same parameters): memories are written with the team's id
	// (team_id), summaries go to the team session, past-session tools list
	// the user's sessions with this team. Members keep their own.
	agent.MemoryConfig
}

// Team is a leader and its members. It is safe for concurrent use.
type Team struct {
	cfg     Config
	leader  *agent.Agent
	members map[string]*agent.Agent
}

// New validates cfg and builds the team's leader.
func New(cfg Config) (*Team, error) {
	if cfg.Model == nil {
		return nil, errors.New("team: Config.Model is required (the leader's model)")
	}
	if len(cfg.Members) == 0 {
		return nil, errors.New("team: Config.Members is empty; a team needs at least one member agent")
	}
	t := &Team{members: make(map[string]*agent.Agent, len(cfg.Members))}
	for i, m := range cfg.Members {
		if m == nil {
			return nil, fmt.Errorf("team: Members[%d] is nil", i)
		}
		if _, dup := t.members[m.ID()]; dup {
			return nil, fmt.Errorf("team: two members share id %q; member ids must be unique", m.ID())
		}
		t.members[m.ID()] = m
	}
	cfg.ID = agent.DefaultID(cfg.ID, cfg.Name)
	t.cfg = cfg
	tools, err := t.tools()
	if err != nil {
		return nil, err
	}
	tools = append(tools, cfg.Tools...)
	// The leader is an agent composed with the team's identity (its runs,
	// sessions and events are the team's) and a hook that stores the member
	// runs it delegated to with the team run.
	t.leader, err = agent.New(agent.Config{
		Component:   run.Component{Type: run.TypeTeam, ID: cfg.ID, Name: cfg.Name},
		Description: cfg.Description, Model: cfg.Model, Tools: tools,
		Instructions: cfg.Instructions, AdditionalContext: t.prompt(), DB: cfg.DB,
		AddHistoryToContext: cfg.AddHistoryToContext, NumHistoryRuns: cfg.NumHistoryRuns,
		Metadata: cfg.Metadata, StoreEvents: cfg.StoreEvents,
		OffloadToolResults: cfg.OffloadToolResults, MediaStorage: cfg.MediaStorage,
		BeforeStore:  storeMemberResponses,
		MemoryConfig: cfg.MemoryConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("team: leader: %w", err)
	}
	return t, nil
}

// ID returns the team id (team_id).
func (t *Team) ID() string { return t.cfg.ID }

// Component returns the identity the team's runs are stamped with.
func (t *Team) Component() run.Component { return t.leader.Component() }

// Name returns the team name.
func (t *Team) Name() string { return t.cfg.Name }

// Config returns a copy of the configuration (after defaults).
func (t *Team) Config() Config { return t.cfg }

// Metadata returns Config.Metadata, copied into every run's metadata.
func (t *Team) Metadata() map[string]any { return t.cfg.Metadata }

// DB returns the team's database, nil when team runs are not persisted.
func (t *Team) DB() *db.DB { return t.cfg.DB }

// ModelInfo names the leader's model.
func (t *Team) ModelInfo() model.Info { return t.leader.ModelInfo() }

// Members returns the member agents in configuration order.
func (t *Team) Members() []*agent.Agent { return t.cfg.Members }

// Run executes one team run and returns it, like agent.Agent.Run: the
// leader's run, stored as a team run, with member_responses holding the
// member runs it delegated to (each also stored as its own run).
func (t *Team) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	return t.leader.Run(withCollector(ctx), input, opts...)
}

// Stream executes one team run and yields the leader's events, named with
// run.TeamEvent (TeamRunStarted, TeamToolCallStarted, …, TeamRunCompleted)
// and carrying team_id/team_name. Member runs execute inside the delegation
// tool calls; their events are not forwarded.
func (t *Team) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		for ev, err := range t.leader.Stream(withCollector(ctx), input, opts...) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// CancelRun cancels a team run in progress in this process (and the member
// runs it is waiting for). It reports whether the run was found.
func (t *Team) CancelRun(runID string) bool { return t.leader.CancelRun(runID) }

// collector gathers the member runs of one team run.
type collector struct {
	mu   sync.Mutex
	runs []json.RawMessage
}

type collectorKey struct{}

func withCollector(ctx context.Context) context.Context {
	return context.WithValue(ctx, collectorKey{}, &collector{})
}

func (c *collector) add(out *run.Output) {
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.runs = append(c.runs, b)
	c.mu.Unlock()
}

// storeMemberResponses is the leader's BeforeStore hook: the team run's
// member_responses are the member runs it collected.
func storeMemberResponses(ctx context.Context, out *run.Output) {
	c, ok := ctx.Value(collectorKey{}).(*collector)
	if !ok {
		out.MemberResponses = nil
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out.MemberResponses = append([]json.RawMessage(nil), c.runs...)
}

var _ agent.Runner = (*Team)(nil)
