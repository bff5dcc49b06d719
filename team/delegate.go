package team

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/agent"
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

// tools are the leader's tools for the team's mode.
func (t *Team) tools() ([]tool.Tool, error) {
	if t.cfg.Mode == ModeTasks {
		return t.taskTools()
	}
	var tools []tool.Tool
	if t.cfg.Mode != ModeBroadcast {
		one, err := tool.Func(tool.FuncConfig{
			Name:          ToolDelegate,
			Description:   "Delegate a task to one member of the team and get its answer back.",
			StopAfterCall: t.cfg.Mode == ModeRoute || t.cfg.RespondDirectly,
			HonorsCancel:  true,
		}, t.delegate)
		if err != nil {
			return nil, fmt.Errorf("team: %w", err)
		}
		tools = append(tools, one)
	}
	if t.cfg.Mode == ModeBroadcast || t.cfg.DelegateToAllMembers {
		all, err := tool.Func(tool.FuncConfig{
			Name:          ToolDelegateAll,
			Description:   "Delegate the same task to every member of the team at once and get all their answers back.",
			StopAfterCall: t.cfg.RespondDirectly,
			HonorsCancel:  true,
		}, t.delegateAll)
		if err != nil {
			return nil, fmt.Errorf("team: %w", err)
		}
		tools = append(tools, all)
	}
	return tools, nil
}

// delegate runs one member in the team run's session, as a member run of it.
// A failed member run is a tool error the leader reads; the team run goes
// on. A member run that pauses pauses the team run.
func (t *Team) delegate(ctx context.Context, in delegateArgs) (string, error) {
	mi, ok := t.members[in.MemberID]
	if !ok {
		return "", fmt.Errorf("no member with id %q; members: %s", in.MemberID, strings.Join(t.memberIDs(), ", "))
	}
	var emit func(run.Event)
	if t.forwarding(ctx) {
		emit = func(e run.Event) { agent.Emit(ctx, e) }
	}
	out, err := t.runMember(ctx, mi, in.Task, "", emit)
	if err != nil {
		return "", err
	}
	return t.memberOutcome(ctx, mi, out)
}

// memberOutcome is what the leader reads of a finished member run; a PAUSED
// one pauses the team run with the member's requirements.
func (t *Team) memberOutcome(ctx context.Context, mi *memberInfo, out *run.Output) (string, error) {
	switch out.Status {
	case run.StatusCompleted:
		return out.ContentString(), nil
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
	results := make([]memberResult, len(t.order))
	t.fanOut(ctx, len(t.order), func(i int, emit func(run.Event)) {
		mi := t.order[i]
		out, err := t.runMember(ctx, mi, in.Task, mi.id, emit)
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
	for {
		select {
		case e := <-events:
			agent.Emit(ctx, e)
		case <-finished:
			close(done)
			return
		}
	}
}

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
// the team run's. The member's events go to emit when it is set.
//
// sub tells the member runs of one delegation call apart (the member id of
// a broadcast, the task id of a parallel task; "" for one member): in a
// durable team run the member run's id derives from the call and sub, and
// its steps are journaled with the team run's (see memberJournal).
func (t *Team) runMember(ctx context.Context, mi *memberInfo, task, sub string, emit func(run.Event)) (*run.Output, error) {
	rc, ok := agent.FromContext(ctx)
	if !ok {
		return nil, errors.New("team: delegation tool called outside a team run")
	}
	opts := []agent.RunOption{agent.WithSessionID(rc.SessionID), agent.WithUserID(rc.UserID), agent.WithParentRunID(rc.RunID), memberStorage(rc)}
	if rc.Dependencies != nil {
		opts = append(opts, agent.WithDependencies(rc.Dependencies))
	}
	if rc.Journal != nil {
		if step := run.IdempotencyKey(ctx); step != "" {
			opts = append(opts, agent.WithRunID(memberRunID(step, sub)), agent.WithJournal(journalFor(rc), rc.Attempt))
		}
	}
	if c, ok := ctx.Value(collectorKey{t}).(*collector); ok && c.sem != nil {
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if emit != nil {
		opts = append(opts, agent.WithEventFunc(emit))
	}
	var out *run.Output
	var err error
	rs := resumeFrom(ctx, t)
	if prev := rs.takeDone(mi.id); prev != nil {
		return prev, nil // completed before the team run paused
	}
	if paused := rs.takePaused(mi.id); paused != nil {
		out, err = mi.r.ContinueRun(ctx, paused, append(opts, rs.opts...)...)
	} else {
		out, err = mi.r.Run(ctx, run.TextInput(task), opts...)
	}
	if out == nil && errors.Is(err, agent.ErrStorage) {
		// The database's error may name its host and user: the leader's
		// model (and the stored team run) get a generic text.
		return nil, fmt.Errorf("member %s could not run: storage error: its session could not be read", mi.id)
	}
	if out == nil {
		return nil, fmt.Errorf("member %s could not run: %w", mi.id, err)
	}
	if c, ok := ctx.Value(collectorKey{t}).(*collector); ok {
		c.add(out)
	}
	return out, nil
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
// spirit of Agno's system message.
func (t *Team) prompt() string {
	var b strings.Builder
	switch t.cfg.Mode {
	case ModeRoute:
		b.WriteString("You are the router of a team of AI agents. Pick the one member best suited to the user's request and send it the request with the " + ToolDelegate + " tool; its answer is given to the user as is.\n\n")
	case ModeBroadcast:
		b.WriteString("You are the leader of a team of AI agents. Send the user's request to every member at once with the " + ToolDelegateAll + " tool, then answer the user from all their answers.\n\n")
	case ModeTasks:
		b.WriteString("You are the leader of a team of AI agents working from a task list. Break the user's goal into tasks with " + toolCreateTask + ", run each with " + toolExecuteTask + " (it goes to a member) or several independent ones at once with " + toolExecuteTasks + ", track them with " + toolUpdateTask + " and " + toolListTasks + ", and call " + toolMarkComplete + " with a summary when the goal is reached.\n\n")
	default:
		b.WriteString("You are the leader of a team of AI agents. You cannot do the members' work yourself: delegate tasks to the members best suited to them with the " + ToolDelegate + " tool, read their answers, then answer the user.\n\n")
	}
	b.WriteString("<team_members>\n")
	for _, mi := range t.order {
		fmt.Fprintf(&b, "- member_id: %s\n", mi.id)
		if mi.name != "" {
			fmt.Fprintf(&b, "  name: %s\n", mi.name)
		}
		if mi.description != "" {
			fmt.Fprintf(&b, "  role: %s\n", mi.description)
		}
		for _, s := range mi.tools {
			fmt.Fprintf(&b, "  tool: %s\n", s)
		}
	}
	b.WriteString("</team_members>\n\n<how_to_respond>\n")
	b.WriteString("- Give each member a complete task: it does not see the conversation.\n")
	if t.cfg.Mode == ModeCoordinate && t.cfg.DelegateToAllMembers {
		b.WriteString("- Use " + ToolDelegateAll + " to ask every member at once.\n")
	}
	if t.cfg.Mode == ModeCoordinate {
		b.WriteString("- Check the members' answers; delegate again if they are not good enough.\n")
		b.WriteString("- Answer the user yourself, from the members' answers.\n")
	}
	b.WriteString("</how_to_respond>")
	return b.String()
}
