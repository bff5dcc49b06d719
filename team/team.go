package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"iter"
	"slices"
	"sync"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Config configures a Team. Field names follow Agno's team parameters; zero
// values take the documented defaults. Model and Members (or Teams) are
// required.
type Config struct {
	// ID identifies the team (team_id). Default: Name lower-cased with spaces
	// as dashes; with no Name, a random UUID.
	ID          string
	Name        string
	Description string
	// Mode is how the leader works with the members (Agno's TeamMode):
	// coordinate (the default), route, broadcast or tasks.
	Mode Mode
	// Model is the leader's model; it sees the delegation tools only.
	Model model.Model
	// Members are the agents the leader delegates to, addressed by their IDs.
	Members []*agent.Agent
	// Teams are member teams, after Members (nesting: a member team delegates
	// to its own members). Ids are unique among Members and Teams. A team
	// nests at most MaxNestingDepth levels deep.
	Teams []*Team
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
	// AddTeamHistoryToMembers puts the team's last NumTeamHistoryRuns
	// completed runs of the session (each one's input and answer, in
	// Agno's <team_history_context> block) before every member's task, as
	// Agno's add_team_history_to_members; a member team gets its own runs
	// instead. Needs DB. NumTeamHistoryRuns defaults to 3 (Agno's
	// num_team_history_runs); negative is an error.
	AddTeamHistoryToMembers bool
	NumTeamHistoryRuns      int
	// ShareMemberInteractions puts the member runs the team run made
	// before (member, the task text it was given, answer; in Agno's
	// <member_interaction_context> block) before every member's task, as
	// Agno's share_member_interactions. Their media are not passed on.
	ShareMemberInteractions bool
	// DetermineInputForMembers: nil or true gives a member the task the
	// leader wrote (Agno's determine_input_for_members, default true); false
	// gives the delegated member the team run's own input instead (the
	// leader still chooses the member). Tasks mode, which delegates none,
	// refuses false.
	DetermineInputForMembers *bool
	// DelegateToAllMembers adds delegate_task_to_members, which sends one task
	// to every member at once (Agno's delegate_to_all_members); broadcast
	// mode implies it.
	DelegateToAllMembers bool
	// RespondDirectly makes a member's answer the team's answer (Agno's
	// respond_directly); route mode implies it.
	RespondDirectly bool
	// MaxIterations bounds the leader's iterations in tasks mode (default 10).
	MaxIterations int
	// MaxConcurrentMembers bounds how many member runs of one team run
	// execute at once: the members of a broadcast (delegate_task_to_members),
	// the tasks of one execute_tasks_parallel call, and delegations the
	// leader makes in one turn. 0 (the default) is no bound, as in Agno;
	// 1 runs them one after another. Negative is an error.
	MaxConcurrentMembers int
	// StreamMemberEvents: nil or true forwards the member runs' events on the
	// team's stream (Agno's stream_member_events, default true); false keeps
	// them off it.
	StreamMemberEvents *bool
	// StoreMemberResponses: nil or true stores the member runs in the stored
	// team run's member_responses (Agno's store_member_responses; Agno's
	// default is false, Agentry's true). The returned run always has them,
	// and a PAUSED team run always stores them: continuing it needs them.
	StoreMemberResponses *bool
	// Metadata is merged into every team run's metadata, over the run's
	// WithMetadata (the team's value wins a conflict; nested objects are
	// merged), as Agno does; member runs get the result as their call's
	// metadata.
	Metadata map[string]any
	// StoreEvents records the leader's events in the stored team run and,
	// as Agno does, the events forwarded on its stream: the members' (when
	// the run is streamed and StreamMemberEvents is not false) and the
	// TeamTask* events, inline in stream order, without content deltas
	// (RunContent, TeamRunContent, TeamRunIntermediateContent: Agno's default
	// events_to_skip). Member runs keep their own rows.
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

// MaxNestingDepth is how deep teams nest: a team whose member teams have
// member teams, … more than this many levels is refused by New.
const MaxNestingDepth = 4

// ErrNestingTooDeep is wrapped by New's error for a team nested too deep.
var ErrNestingTooDeep = errors.New("team: teams nested too deep")

// member is what a team delegates to: an agent or a team.
type member interface {
	agent.Runner
	ContinueRun(ctx context.Context, paused *run.Output, opts ...agent.RunOption) (*run.Output, error)
}

// memberInfo is one member and what the leader's prompt says of it.
type memberInfo struct {
	id, name, description string
	agent                 *agent.Agent // nil for a member team; its tools are listed
	r                     member
	// filters: the team run's knowledge filters are passed on to this
	// member (see takesFilters).
	filters bool
}

// Team is a leader and its members. It is safe for concurrent use.
type Team struct {
	cfg     Config
	leader  *agent.Agent
	order   []*memberInfo
	members map[string]*memberInfo
	depth   int
	// takesFilters: a member takes the run's knowledge filters.
	takesFilters bool
}

// New validates cfg and builds the team's leader.
func New(cfg Config) (*Team, error) {
	if cfg.Model == nil {
		return nil, errors.New("team: Config.Model is required (the leader's model)")
	}
	if len(cfg.Members)+len(cfg.Teams) == 0 {
		return nil, errors.New("team: Config.Members is empty; a team needs at least one member agent or team")
	}
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	if cfg.MaxConcurrentMembers < 0 {
		return nil, fmt.Errorf("team: Config.MaxConcurrentMembers is %d; want 0 (no bound) or more", cfg.MaxConcurrentMembers)
	}
	if err := checkMemberContext(&cfg, mode); err != nil {
		return nil, err
	}
	cfg.Mode = mode
	n := len(cfg.Members) + len(cfg.Teams)
	// One allocation for the members' infos, one for their order.
	infos := make([]memberInfo, 0, n)
	t := &Team{members: make(map[string]*memberInfo, n), order: make([]*memberInfo, 0, n), depth: 1}
	add := func(mi memberInfo) error {
		if _, dup := t.members[mi.id]; dup {
			return fmt.Errorf("team: two members share id %q; member ids must be unique", mi.id)
		}
		infos = append(infos, mi)
		p := &infos[len(infos)-1]
		t.members[mi.id] = p
		t.order = append(t.order, p)
		return nil
	}
	for i, m := range cfg.Members {
		if m == nil {
			return nil, fmt.Errorf("team: Members[%d] is nil", i)
		}
		// As Agno: the run's knowledge filters go to a member with a
		// knowledge base and no filters of its own.
		mc := m.Config()
		filters := mc.Knowledge != nil && len(mc.KnowledgeFilters) == 0
		if err := add(memberInfo{id: m.ID(), name: m.Name(), description: mc.Description, agent: m, r: m, filters: filters}); err != nil {
			return nil, err
		}
	}
	for i, sub := range cfg.Teams {
		if sub == nil {
			return nil, fmt.Errorf("team: Teams[%d] is nil", i)
		}
		if sub.depth+1 > MaxNestingDepth {
			return nil, fmt.Errorf("%w: member team %q nests %d levels, the limit is %d (MaxNestingDepth)", ErrNestingTooDeep, sub.ID(), sub.depth+1, MaxNestingDepth)
		}
		t.depth = max(t.depth, sub.depth+1)
		if err := add(memberInfo{id: sub.ID(), name: sub.Name(), description: sub.cfg.Description, r: sub, filters: sub.takesFilters}); err != nil {
			return nil, err
		}
	}
	for _, mi := range t.order {
		t.takesFilters = t.takesFilters || mi.filters
	}
	cfg.ID = agent.DefaultID(cfg.ID, cfg.Name)
	t.cfg = cfg
	tools := t.tools()
	if len(cfg.Tools) > 0 {
		tools = append(tools, cfg.Tools...) // the shared list is full: this copies
	}
	var iterate *agent.Iteration
	if cfg.Mode == ModeTasks {
		iterate = t.iteration()
	}
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
		BeforeStore: t.storeMemberResponses, MemberRuns: t.memberRuns, Iterate: iterate,
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

// ComponentData returns the team_data its runs write to their session's row
// (the leader's, which carries the team's identity). A session row created
// for one of its runs before the run starts (a background run's, at
// enqueue) carries it, so that the run's end need not rewrite an otherwise
// unchanged row. The caller must not modify it.
func (t *Team) ComponentData() json.RawMessage { return t.leader.ComponentData() }

// Name returns the team name.
func (t *Team) Name() string { return t.cfg.Name }

// Config returns a copy of the configuration (after defaults).
func (t *Team) Config() Config { return t.cfg }

// Metadata returns Config.Metadata, merged into every run's metadata.
func (t *Team) Metadata() map[string]any { return t.cfg.Metadata }

// DB returns the team's database, nil when team runs are not persisted.
func (t *Team) DB() *db.DB { return t.cfg.DB }

// ModelInfo names the leader's model.
func (t *Team) ModelInfo() model.Info { return t.leader.ModelInfo() }

// Members returns the member agents in configuration order.
func (t *Team) Members() []*agent.Agent { return t.cfg.Members }

// Teams returns the member teams in configuration order.
func (t *Team) Teams() []*Team { return t.cfg.Teams }

// Mode returns the team's mode.
func (t *Team) Mode() Mode { return t.cfg.Mode }

// Run executes one team run and returns it, like agent.Agent.Run: the
// leader's run, stored as a team run, with member_responses holding the
// member runs it delegated to (each also stored as its own run, with
// parent_run_id the team run's), also when the team has no DB.
//
// The options are the leader's, as for an agent's run (ids, session state,
// metadata, dependencies, output schema, add_history_to_context, journal,
// storage defaults, event function), except WithKnowledgeFilters, which
// goes, as in Agno, to the members with a knowledge base and no
// KnowledgeFilters of their own (member teams pass it on); a team with no
// such member refuses it. Member runs also get the team run's metadata,
// dependencies and input media (images, videos, audio, files), as in
// Agno. WithTools and WithRequirements are ContinueRun's. A refused option
// is an *agent.UnsupportedOptionError, before anything runs.
func (t *Team) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	co := agent.ResolveOptions(opts...)
	if err := t.refuse(co, false); err != nil {
		return nil, err
	}
	ctx, opts, err := t.withTasks(ctx, co, opts, nil)
	if err != nil {
		return nil, err
	}
	ctx, c := t.withCollector(ctx, nil)
	c.forMembers(co, t.runMetadata(co.Metadata), &input)
	out, err := t.leader.Run(ctx, input, opts...)
	t.finish(ctx, c, out)
	return out, err
}

// Stream executes one team run and yields the leader's events, named with
// run.TeamEvent (TeamRunStarted, TeamToolCallStarted, …, TeamRunCompleted)
// and carrying team_id/team_name, and, unless StreamMemberEvents is false,
// the member runs' events as they happen (RunStarted, RunContent, … with
// the member's agent_id, its run_id and parent_run_id the team run's).
func (t *Team) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		co := agent.ResolveOptions(opts...)
		if err := t.refuse(co, false); err != nil {
			yield(run.Event{}, err)
			return
		}
		ctx, opts, err := t.withTasks(ctx, co, opts, nil)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		ctx, c := t.withCollector(ctx, nil)
		c.forMembers(co, t.runMetadata(co.Metadata), &input)
		for ev, err := range t.leader.Stream(ctx, input, opts...) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// CheckOptions returns the error Run would refuse opts with, if any
// (agent.OptionChecker): the team's refusals, then its leader's (the
// leader's Run refuses WithAddHistoryToContext(true) on a team without a
// DB, for one).
func (t *Team) CheckOptions(opts ...agent.RunOption) error {
	if err := t.refuse(agent.ResolveOptions(opts...), false); err != nil {
		return err
	}
	return t.leader.CheckOptions(opts...)
}

// refuse returns the error of a run given an option the team cannot honour
// (nil when it honours them all). The leader, an agent, honours the run's
// own options (ids, session state, metadata, dependencies, output schema,
// add_history_to_context, journal, storage defaults, event function) or
// refuses them itself (add_history_to_context without a DB: CheckOptions
// asks it); knowledge filters go to the members that take them
// (takesFilters); the resolutions of paused tools (WithTools,
// WithRequirements) only to a continue.
func (t *Team) refuse(co agent.CallOptions, continuing bool) error {
	unsupported := func(option, reason string) error {
		return &agent.UnsupportedOptionError{Runner: t.Component(), Option: option, Reason: reason}
	}
	switch {
	case co.KnowledgeFilters != nil && !t.takesFilters:
		return unsupported("WithKnowledgeFilters", "no member has a knowledge base without knowledge filters of its own")
	case !continuing && co.Tools != nil:
		return unsupported("WithTools", "resolved tools are for ContinueRun")
	case !continuing && co.Requirements != nil:
		return unsupported("WithRequirements", "resolved requirements are for ContinueRun")
	}
	return nil
}

// CancelRun cancels a team run in progress in this process (and the member
// runs it is waiting for). It reports whether the run was found. A member
// run cancelled on its own (its runner's CancelRun) cancels the team run
// waiting for it too, as in Agno (cause ErrMemberCancelled).
func (t *Team) CancelRun(runID string) bool { return t.leader.CancelRun(runID) }

// collector gathers the member runs of one team run, in the order they
// finished; a continued member run replaces its paused version.
type collector struct {
	// sem bounds the member runs running at once (MaxConcurrentMembers).
	sem chan struct{}
	// filters are the run's knowledge filters (WithKnowledgeFilters), for
	// the members that take them, and metadata the team run's metadata,
	// for every member run (as Agno's delegation passes both); read-only
	// once the run started.
	filters, metadata map[string]any
	// media are the team run's input media (images, videos, audio,
	// files), which every member run gets with its task, as Agno's
	// delegation passes them; read-only once the run started. input is the
	// team run's input text (DetermineInputForMembers false).
	media run.Input
	input string
	mu    sync.Mutex
	runs  []json.RawMessage
	ids   []string
	// interactions are the member runs this team run made, in the order
	// they ended (ShareMemberInteractions); histories the team history
	// block per team id, read once per team run (AddTeamHistoryToMembers).
	interactions []interaction
	histories    map[string]string
}

type collectorKey struct{ t *Team }

// forMembers keeps what the team run hands on to its member runs: of its
// input, the media (see memberInput).
func (c *collector) forMembers(co agent.CallOptions, metadata map[string]any, in *run.Input) {
	c.filters, c.metadata = co.KnowledgeFilters, metadata
	if in != nil {
		c.input = in.Text()
		c.media = run.Input{Images: readable(in.Images), Videos: readable(in.Videos), Audio: readable(in.Audio), Files: readable(in.Files)}
	}
}

// readable are the media of ms a member run can read: those with their
// bytes, a URL or a path. A medium stored as a media_reference only (the
// input of a paused team run read back from a database, with media
// storage) is left out: a new run's input cannot resolve references.
func readable(ms []run.Media) []run.Media {
	var out []run.Media
	for _, m := range ms {
		if m.Content != nil || m.URL != "" || m.Filepath != "" {
			out = append(out, m)
		}
	}
	return out
}

// memberInput is the input of a member run given task: the task, with the
// team run's input media. Each member run gets lists of its own.
func (c *collector) memberInput(task string) run.Input {
	in := run.TextInput(task)
	if c != nil {
		in.Images, in.Videos = slices.Clone(c.media.Images), slices.Clone(c.media.Videos)
		in.Audio, in.Files = slices.Clone(c.media.Audio), slices.Clone(c.media.Files)
	}
	return in
}

// runMetadata is a team run's metadata as Agno resolves it, and as the
// leader stamps the team run: the run's (WithMetadata) with Config.Metadata
// merged over it, the team's value winning a conflict, nested objects
// merged (run.MergeMetadata). Member runs get it as their call's metadata,
// so that a member's own Config.Metadata wins there.
func (t *Team) runMetadata(md map[string]any) map[string]any {
	return run.MergeMetadata(md, t.cfg.Metadata)
}

func (t *Team) withCollector(ctx context.Context, prior []json.RawMessage) (context.Context, *collector) {
	ctx = context.WithValue(ctx, runningTeamKey{}, t)
	c := &collector{}
	if n := t.cfg.MaxConcurrentMembers; n > 0 {
		c.sem = make(chan struct{}, n)
	}
	for _, raw := range prior {
		var head struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(raw, &head)
		c.runs, c.ids = append(c.runs, raw), append(c.ids, head.RunID)
	}
	if t.cfg.ShareMemberInteractions {
		c.interactions = priorInteractions(prior)
	}
	return context.WithValue(ctx, collectorKey{t}, c), c
}

func (c *collector) add(out *run.Output) {
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range c.ids {
		if id == out.RunID {
			c.runs[i] = b
			return
		}
	}
	c.runs, c.ids = append(c.runs, b), append(c.ids, out.RunID)
}

func (c *collector) list() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.runs...)
}

// finish gives a returned team run its member runs and task list.
func (t *Team) finish(ctx context.Context, c *collector, out *run.Output) {
	if out == nil {
		return
	}
	out.MemberResponses = c.list()
	t.storeTasks(ctx, out, false)
}

// storeMemberResponses is the leader's BeforeStore hook: the stored team
// run's member_responses are the member runs it collected.
func (t *Team) storeMemberResponses(ctx context.Context, out *run.Output) {
	t.cancelUnreached(ctx, out)
	t.storeTasks(ctx, out, true)
	c, ok := ctx.Value(collectorKey{t}).(*collector)
	if !ok || (t.cfg.StoreMemberResponses != nil && !*t.cfg.StoreMemberResponses && out.Status != run.StatusPaused) {
		out.MemberResponses = nil
		return
	}
	out.MemberResponses = c.list()
}

// memberRuns is the leader's MemberRuns: every member run the team run
// collected, stored with it or not (StoreMemberResponses).
func (t *Team) memberRuns(ctx context.Context, out *run.Output) []json.RawMessage {
	if c, ok := ctx.Value(collectorKey{t}).(*collector); ok {
		return c.list()
	}
	return out.MemberResponses
}

var _ agent.Runner = (*Team)(nil)
