package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Delegation tool names, as in Agno.
const (
	ToolDelegate    = "delegate_task_to_member"
	ToolDelegateAll = "delegate_task_to_members"
)

type delegateArgs struct {
	MemberID string `json:"member_id" jsonschema:"the id of the member to delegate the task to"`
	Task     string `json:"task" jsonschema:"a clear description of the task for the member, with everything it needs"`
}

type delegateAllArgs struct {
	Task string `json:"task" jsonschema:"a clear description of the task for every member"`
}

// The leader's tools are built once per process, not per team: their
// functions find the team whose leader calls them in the run's context
// (runningTeam), so New only picks the set for the mode.

type runningTeamKey struct{}

// runningTeam is the team whose leader's tool call ctx belongs to (the
// innermost team run: a member team's run shadows its parent's).
func runningTeam(ctx context.Context) (*Team, error) {
	t, ok := ctx.Value(runningTeamKey{}).(*Team)
	if !ok {
		return nil, errors.New("team: a team tool was called outside a team run")
	}
	return t, nil
}

// teamTool makes a leader tool that calls method on the running team.
func teamTool[In any](cfg tool.FuncConfig, method func(*Team, context.Context, In) (string, error)) tool.Tool {
	cfg.HonorsCancel = true
	return tool.MustFunc(cfg, func(ctx context.Context, in In) (string, error) {
		t, err := runningTeam(ctx)
		if err != nil {
			return "", err
		}
		return method(t, ctx, in)
	})
}

// toolSets are the leader's tool lists: [mode tasks], or for the other
// modes indexed by (delegate one, stop after it, delegate to all, stop after
// it). Each list is full (len == cap) so that appending copies it.
var toolSets = sync.OnceValue(func() map[toolSetKey][]tool.Tool {
	sets := map[toolSetKey][]tool.Tool{}
	tasks := []tool.Tool{
		teamTool(tool.FuncConfig{Name: toolCreateTask, Description: "Create a new task for the team to work on."}, (*Team).createTask),
		teamTool(tool.FuncConfig{Name: toolUpdateTask, Description: "Update the status of a task. Use it to mark tasks you handle yourself as completed."}, (*Team).updateTask),
		teamTool(tool.FuncConfig{Name: toolListTasks, Description: "List all tasks with their status, assignees and dependencies."}, (*Team).listTasks),
		teamTool(tool.FuncConfig{Name: toolExecuteTask, Description: "Execute a task by delegating it to a member; the member gets the task's title and description and its result is recorded on the task."}, (*Team).executeTask),
		teamTool(tool.FuncConfig{Name: toolExecuteTasks, Description: "Execute several independent tasks at once, each by its assigned member; all results come back together, in the order given."}, (*Team).executeTasksParallel),
		teamTool(tool.FuncConfig{Name: toolAddNote, Description: "Add a note to a task to track progress or pass on context."}, (*Team).addNote),
		teamTool(tool.FuncConfig{Name: toolMarkComplete, Description: "Signal that the overall goal has been achieved. Call it when all tasks are done."}, (*Team).markComplete),
	}
	sets[toolSetKey{tasks: true}] = tasks[:len(tasks):len(tasks)]
	for _, stopOne := range []bool{false, true} {
		for _, stopAll := range []bool{false, true} {
			one := teamTool(tool.FuncConfig{Name: ToolDelegate,
				Description: "Delegate a task to one member of the team and get its answer back.", StopAfterCall: stopOne}, (*Team).delegate)
			all := teamTool(tool.FuncConfig{Name: ToolDelegateAll,
				Description: "Delegate the same task to every member of the team at once and get all their answers back.", StopAfterCall: stopAll}, (*Team).delegateAll)
			sets[toolSetKey{one: true, stopOne: stopOne}] = []tool.Tool{one}
			sets[toolSetKey{all: true, stopAll: stopAll}] = []tool.Tool{all}
			sets[toolSetKey{one: true, stopOne: stopOne, all: true, stopAll: stopAll}] = []tool.Tool{one, all}
		}
	}
	return sets
})

type toolSetKey struct{ tasks, one, stopOne, all, stopAll bool }

// tools are the leader's tools for the team's mode (shared, read-only).
func (t *Team) tools() []tool.Tool {
	if t.cfg.Mode == ModeTasks {
		return toolSets()[toolSetKey{tasks: true}]
	}
	var k toolSetKey
	if t.cfg.Mode != ModeBroadcast {
		k.one, k.stopOne = true, t.cfg.Mode == ModeRoute || t.cfg.RespondDirectly
	}
	if t.cfg.Mode == ModeBroadcast || t.cfg.DelegateToAllMembers {
		k.all, k.stopAll = true, t.cfg.RespondDirectly
	}
	return toolSets()[k]
}

// delegate runs one member in the team run's session, as a member run of it.
// A failed member run is a tool error the leader reads; the team run goes
// on. A member run that pauses pauses the team run.
func (t *Team) delegate(ctx context.Context, in delegateArgs) (string, error) {
	mi, ok := t.members[in.MemberID]
	if !ok {
		return "", t.noMember(in.MemberID)
	}
	if err := checkTask(in.Task); err != nil {
		return "", err
	}
	var emit func(run.Event)
	if t.forwarding(ctx) {
		emit = func(e run.Event) { agent.Emit(ctx, e) }
	}
	out, err := t.runMember(ctx, mi, in.Task, "", true, emit)
	if err != nil {
		return "", err
	}
	// The delegation's tool execution names the member run, as Agno's.
	agent.SetChildRunID(ctx, out.RunID)
	return t.memberOutcome(ctx, mi, out)
}

// memberOutcome is what the leader reads of a finished member run; a PAUSED
// one pauses the team run with the member's requirements.
func (t *Team) memberOutcome(ctx context.Context, mi *memberInfo, out *run.Output) (string, error) {
	switch out.Status {
	case run.StatusCompleted:
		if c := out.ContentString(); c != "" || len(out.Tools) > 0 {
			return c, nil
		}
		// As Agno: the leader is told, not handed an empty string.
		return noMemberResponse, nil
	case run.StatusPaused:
		agent.PauseToolCall(ctx, memberRequirements(mi, out))
		return fmt.Sprintf("Member %s requires human input before continuing.", mi.id), nil
	}
	return "", fmt.Errorf("member %s ended %s: %s", mi.id, out.Status, out.ContentString())
}

// memberRequirements are a paused member run's requirements as the team run
// carries them: naming the member and its run (Agno's member_agent_id,
// member_agent_name, member_run_id).
func memberRequirements(mi *memberInfo, out *run.Output) []run.Requirement {
	reqs := make([]run.Requirement, len(out.Requirements))
	for i, r := range out.Requirements {
		r.MemberAgentID, r.MemberAgentName, r.MemberRunID = mi.id, mi.name, out.RunID
		reqs[i] = r
	}
	return reqs
}

// delegateAll runs every member concurrently on one task and answers with
// their results in member order. Member events are forwarded from this
// call's goroutine, one at a time.
func (t *Team) delegateAll(ctx context.Context, in delegateAllArgs) (string, error) {
	if err := checkTask(in.Task); err != nil {
		return "", err
	}
	results := make([]memberResult, len(t.order))
	t.fanOut(ctx, len(t.order), func(i int, emit func(run.Event)) {
		mi := t.order[i]
		out, err := t.runMember(ctx, mi, in.Task, mi.id, true, emit)
		results[i] = memberResult{out, err}
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var b strings.Builder
	var errs []error
	for i, mi := range t.order {
		r := results[i]
		content, err := r.content(ctx, t, mi)
		if err != nil {
			errs = append(errs, err)
			content = "Error - " + err.Error()
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "Agent %s: %s", mi.label(), content)
	}
	if len(errs) == len(t.order) {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}

// fanOut calls fn(i, emit) for i in [0, n) concurrently and returns when
// all returned. emit (nil when member events are not forwarded) hands a
// member event to this call's goroutine, which forwards them one at a time
// (agent.Emit) as they come.
func (t *Team) fanOut(ctx context.Context, n int, fn func(i int, emit func(run.Event))) {
	var events chan run.Event
	if t.forwarding(ctx) {
		events = make(chan run.Event)
	}
	done := make(chan struct{})
	var emit func(run.Event)
	if events != nil {
		emit = func(e run.Event) {
			select {
			case events <- e:
			case <-done:
			}
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i, emit) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	// A stream consumer's loop body may run in agent.Emit, on this
	// goroutine: its panic unwinds this call, and the members, their
	// events no longer taken, must not be left blocked handing them over.
	defer close(done)
	for {
		select {
		case e := <-events:
			agent.Emit(ctx, e)
		case <-finished:
			return
		}
	}
}

// noMemberResponse is what the leader reads of a member run that completed
// with no content and no tool call (Agno's words).
const noMemberResponse = "No response from the member agent."

type memberResult struct {
	out *run.Output
	err error
}

func (r memberResult) content(ctx context.Context, t *Team, mi *memberInfo) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	return t.memberOutcome(ctx, mi, r.out)
}

func (mi *memberInfo) label() string {
	if mi.name != "" {
		return mi.name
	}
	return mi.id
}

// forwarding reports whether member events go to the team's stream.
func (t *Team) forwarding(ctx context.Context) bool {
	if f := t.cfg.StreamMemberEvents; f != nil && !*f {
		return false
	}
	return agent.StreamingEvents(ctx)
}

// runMember runs (or, when the team run is being continued, continues) one
// member as a member run of the team run: same session and user, parent run
// the team run's; a new member run gets the team run's input media with its
// task (memberInput). The member's events go to emit when it is set.
//
// sub tells the member runs of one delegation call apart (the member id of
// a broadcast, the task id of a parallel task; "" for one member): in a
// durable team run the member run's id derives from the call and sub, and
// its steps are journaled with the team run's (see memberJournal).
func (t *Team) runMember(ctx context.Context, mi *memberInfo, task, sub string, delegated bool, emit func(run.Event)) (*run.Output, error) {
	rc, ok := agent.FromContext(ctx)
	if !ok {
		return nil, errors.New("team: delegation tool called outside a team run")
	}
	opts := []agent.RunOption{agent.WithSessionID(rc.SessionID), agent.WithUserID(rc.UserID), agent.WithParentRunID(rc.RunID), agent.WithMemberHistory(), memberStorage(rc)}
	if rc.Dependencies != nil {
		opts = append(opts, agent.WithDependencies(rc.Dependencies))
	}
	// A new member run of a durable team run gets the id derived from the
	// delegation step (the same on every attempt); a continued one keeps
	// its paused run's (a continue refuses another).
	var durableID string
	if rc.Journal != nil {
		if step := run.IdempotencyKey(ctx); step != "" {
			durableID = memberRunID(step, sub)
			opts = append(opts, agent.WithJournal(journalFor(rc), rc.Attempt))
		}
	}
	c, _ := ctx.Value(collectorKey{t}).(*collector)
	if c != nil {
		if c.filters != nil && mi.filters {
			opts = append(opts, agent.WithKnowledgeFilters(c.filters))
		}
		if c.metadata != nil {
			opts = append(opts, agent.WithMetadata(c.metadata))
		}
		if c.sem != nil {
			select {
			case c.sem <- struct{}{}:
				defer func() { <-c.sem }()
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if emit != nil {
		opts = append(opts, agent.WithEventFunc(emit))
	}
	var out *run.Output
	var err error
	// given is the text the member run got (its task after the shared
	// context blocks); a run resumed from an earlier attempt got its
	// stored input.
	given := ""
	rs := resumeFrom(ctx, t)
	if prev := rs.takeDone(mi.id, task); prev != nil {
		return prev, nil // completed before the team run paused
	}
	if ended := rs.takeEnded(mi.id, task); ended != nil {
		out = ended // ended on its own while the team run was paused on it
	} else if paused, resolved := rs.takePaused(mi.id, task); paused != nil {
		out, err = callMember(func() (*run.Output, error) { return mi.r.ContinueRun(ctx, paused, append(opts, resolved...)...) })
		if out == nil && errors.Is(err, agent.ErrRequirementUnresolved) {
			// This continue did not resolve the member's requirements: its
			// run is unchanged and still PAUSED, and so the team run pauses
			// on it again (it must not go on, and complete, without it).
			return paused, nil
		}
		var pe panicError
		if out == nil && errors.As(err, &pe) {
			// The continue stopped halfway (its confirmed tool may have
			// run): the member run ends ERROR, as a failed run does, and
			// cannot be continued a second time.
			out = mi.endPaused(context.WithoutCancel(ctx), paused, run.StatusError, err.Error())
		}
	} else {
		if durableID != "" {
			opts = append(opts, agent.WithRunID(durableID))
		}
		text, terr := t.memberTask(ctx, c, mi, task, delegated)
		if terr != nil {
			return nil, fmt.Errorf("member %s could not run: %w", mi.id, terr)
		}
		given = text
		out, err = callMember(func() (*run.Output, error) { return mi.r.Run(ctx, c.memberInput(text), opts...) })
	}
	if out == nil && errors.Is(err, agent.ErrStorage) {
		// The database's error may name its host and user: the leader's
		// model (and the stored team run) get a generic text.
		return nil, fmt.Errorf("member %s could not run: storage error: its session could not be read", mi.id)
	}
	if out == nil {
		return nil, fmt.Errorf("member %s could not run: %w", mi.id, err)
	}
	if c != nil {
		c.add(out)
		if t.cfg.ShareMemberInteractions {
			// As Agno's, the interaction's task is what the member was
			// given (the user's input with DetermineInputForMembers
			// false; with the earlier blocks when the team shares them).
			if given == "" && out.Input != nil {
				given = out.Input.Text()
			}
			c.addInteraction(mi, cmp.Or(given, task), out)
		}
	}
	if out.Status == run.StatusCancelled && ctx.Err() == nil {
		// The member run was cancelled on its own (its runner's CancelRun,
		// AgentOS's cancel route given its run id), not by the team run's
		// end: as in Agno, the team run is cancelled with it, and its other
		// member runs with it. The leader must not go on without the work
		// it delegated, or delegate it again.
		run.CancelRun(run.DefaultRegistry(), t.Component(), rc.RunID,
			fmt.Errorf("%w: member %s's run %s was cancelled", ErrMemberCancelled, mi.id, out.RunID))
	}
	return out, nil
}

// ErrMemberCancelled is the cause of a team run cancelled because one of
// its member runs was cancelled on its own.
var ErrMemberCancelled = errors.New("team: a member run was cancelled")

// callMember runs a member, turning its panic (a bug of its model or of
// a member team's code) into the member's error: a broadcast's or a
// parallel task's member runs on a goroutine of its own, where a panic
// would end the process; the leader reads the error as for any failed
// member (a panicked continue also ends the paused member run ERROR: see
// runMember).
func callMember(f func() (*run.Output, error)) (out *run.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, panicError{p}
		}
	}()
	return f()
}

// panicError is the error of a member run that panicked.
type panicError struct{ p any }

func (e panicError) Error() string { return fmt.Sprintf("it panicked: %v", e.p) }

// maxEchoedID bounds how much of an unknown member id a tool error repeats
// to the model (a model can send an id of any length).
const maxEchoedID = 128

// noMember is the tool error for a member id the team does not have.
func (t *Team) noMember(id string) error {
	return fmt.Errorf("no member with id %q; members: %s", clip.Mark(id, maxEchoedID, "…"), strings.Join(t.memberIDs(), ", "))
}

// checkTask refuses a delegation without a task: the member would run on
// an empty input and answer nothing useful to it.
func checkTask(task string) error {
	if strings.TrimSpace(task) == "" {
		return errors.New("task is empty: describe what the member should do, with everything it needs")
	}
	return nil
}

func (t *Team) memberIDs() []string {
	ids := make([]string, 0, len(t.members))
	for id := range t.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// prompt is the leader's team prompt (after Description and Instructions):
// who the members are and how to work with them in the team's mode, in the
// spirit of Agno's system message. It is built in one allocation (New runs
// it on every construction).
func (t *Team) prompt() string {
	var intro string
	switch t.cfg.Mode {
	case ModeRoute:
		intro = promptRoute
	case ModeBroadcast:
		intro = promptBroadcast
	case ModeTasks:
		intro = promptTasks
	default:
		intro = promptCoordinate
	}
	var askAll, check, answer string
	if t.cfg.Mode == ModeCoordinate && t.cfg.DelegateToAllMembers {
		askAll = promptAskAll
	}
	if t.cfg.Mode == ModeCoordinate {
		check, answer = promptCheck, promptAnswer
	}
	var b strings.Builder
	size := 0
	// Pass 0 counts the bytes, pass 1 writes them into one allocation.
	for pass := range 2 {
		w := func(ss ...string) {
			for _, s := range ss {
				if pass == 0 {
					size += len(s)
				} else {
					b.WriteString(s)
				}
			}
		}
		if pass == 1 {
			b.Grow(size)
		}
		w(intro, "<team_members>\n")
		for _, mi := range t.order {
			w("- member_id: ", mi.id, "\n")
			if mi.name != "" {
				w("  name: ", mi.name, "\n")
			}
			if mi.description != "" {
				w("  role: ", mi.description, "\n")
			}
			if mi.agent != nil {
				for _, s := range mi.agent.Tools() {
					w("  tool: ", s.Name, "\n")
				}
			}
		}
		w("</team_members>\n\n<how_to_respond>\n", promptComplete)
		w(askAll, check, answer, "</how_to_respond>")
	}
	return b.String()
}

const (
	promptRoute      = "You are the router of a team of AI agents. Pick the one member best suited to the user's request and send it the request with the " + ToolDelegate + " tool; its answer is given to the user as is.\n\n"
	promptBroadcast  = "You are the leader of a team of AI agents. Send the user's request to every member at once with the " + ToolDelegateAll + " tool, then answer the user from all their answers.\n\n"
	promptTasks      = "You are the leader of a team of AI agents working from a task list. Break the user's goal into tasks with " + toolCreateTask + ", run each with " + toolExecuteTask + " (it goes to a member) or several independent ones at once with " + toolExecuteTasks + ", track them with " + toolUpdateTask + " and " + toolListTasks + ", and call " + toolMarkComplete + " with a summary when the goal is reached.\n\n"
	promptCoordinate = "You are the leader of a team of AI agents. You cannot do the members' work yourself: delegate tasks to the members best suited to them with the " + ToolDelegate + " tool, read their answers, then answer the user.\n\n"
	promptComplete   = "- Give each member a complete task: it does not see the conversation.\n"
	promptAskAll     = "- Use " + ToolDelegateAll + " to ask every member at once.\n"
	promptCheck      = "- Check the members' answers; delegate again if they are not good enough.\n"
	promptAnswer     = "- Answer the user yourself, from the members' answers.\n"
)
