package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A team run pauses when a member run it delegated to pauses (HITL): the
// delegation call is stored without a result, the team run PAUSED with the
// member's requirements (naming the member and its run). Continuing the team
// run executes that call again, which continues the member run with the
// resolutions instead of starting a new one; members that had completed in
// the same call (broadcast) are not run again.

// resumeState is what a continued team run's delegation calls resume from.
// A member may hold several paused runs (two tasks of one
// execute_tasks_parallel call, two broadcasts in one turn): each delegation
// takes the one of its task, and each run gets only its own resolutions.
type resumeState struct {
	mu     sync.Mutex
	paused map[string][]*run.Output // member id → its paused runs
	// ended holds, by member id, the member runs the team run paused on
	// that ended on their own since (see resume): their delegations take
	// them as they are, without continuing them.
	ended map[string][]*run.Output
	done  map[string]*run.Output // doneKey → a completed run of a paused broadcast
	// The resolutions handed on to the members: in place in the paused
	// run's requirements, and given with the continue.
	inPlace, given []run.Requirement
	tools          []run.ToolExecution
}

type resumeKey struct{ t *Team }

func resumeFrom(ctx context.Context, t *Team) *resumeState {
	rs, _ := ctx.Value(resumeKey{t}).(*resumeState)
	return rs
}

func doneKey(memberID, task string) string { return memberID + "\x00" + task }

// inputText is the task a member run was given.
func inputText(o *run.Output) string {
	if o.Input == nil || o.Input.InputContent == nil {
		return ""
	}
	return run.ContentText(o.Input.InputContent)
}

// takeRun removes from runs[id] and returns the run given task, else the
// member's first (nil when it has none). rs.mu is held.
func takeRun(runs map[string][]*run.Output, id, task string) *run.Output {
	list := runs[id]
	if len(list) == 0 {
		return nil
	}
	i := slices.IndexFunc(list, func(o *run.Output) bool { return inputText(o) == task })
	if i < 0 {
		i = 0
	}
	out := list[i]
	runs[id] = slices.Delete(list, i, i+1)
	return out
}

// takeEnded returns the member run of member id for task that ended on its
// own while the team run was paused on it (nil when there is none).
func (rs *resumeState) takeEnded(id, task string) *run.Output {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return takeRun(rs.ended, id, task)
}

// takePaused returns the paused run of member id to continue for task (the
// one given that task, else the member's first), with the options that
// resolve it: the requirements naming that run, and those naming none.
func (rs *resumeState) takePaused(id, task string) (*run.Output, []agent.RunOption) {
	if rs == nil {
		return nil, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := takeRun(rs.paused, id, task)
	if out == nil {
		return nil, nil
	}
	reqs := append(resolutionsFor(out, rs.inPlace), resolutionsFor(out, rs.given)...)
	opts := []agent.RunOption{agent.WithRequirements(reqs)}
	if rs.tools != nil {
		opts = append(opts, agent.WithTools(rs.tools))
	}
	return out, opts
}

// resolutionsFor picks of reqs those for the paused member run out: those
// naming it, labelled as out's own requirements are (a nested team's
// requirements name its members' runs; the n-th with an id matches out's
// n-th with that id), and those naming no member run.
func resolutionsFor(out *run.Output, reqs []run.Requirement) []run.Requirement {
	var picked []run.Requirement
	seen := map[string]int{}
	for _, r := range reqs {
		switch r.MemberRunID {
		case "":
			picked = append(picked, r)
		case out.RunID:
			k := requirementKey(r)
			n := seen[k]
			seen[k]++
			for _, q := range out.Requirements {
				if requirementKey(q) != k {
					continue
				}
				if n == 0 {
					r.MemberAgentID, r.MemberAgentName, r.MemberRunID = q.MemberAgentID, q.MemberAgentName, q.MemberRunID
					break
				}
				n--
			}
			picked = append(picked, r)
		}
	}
	return picked
}

func requirementKey(r run.Requirement) string {
	if r.ToolExecution != nil {
		return r.ID + "\x00" + r.ToolExecution.ToolCallID
	}
	return r.ID
}

func (rs *resumeState) takeDone(id, task string) *run.Output {
	if rs == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k := doneKey(id, task)
	out := rs.done[k]
	delete(rs.done, k)
	return out
}

// ContinueRun resumes a PAUSED team run: the member runs that paused it are
// continued with the resolutions (given in place in paused.Requirements, or
// through agent.WithRequirements / agent.WithTools, matched by tool_call_id),
// then the leader goes on. A member run whose requirements the continue
// leaves unresolved stays PAUSED, and the team run pauses on it again. A
// member run that ended on its own while the team run was paused on it
// (continued or cancelled by its own id) is taken as its database has it,
// not continued again: a cancelled one cancels the team run.
// Continuing a run that is not PAUSED returns run.ErrNotContinuable.
func (t *Team) ContinueRun(ctx context.Context, paused *run.Output, opts ...agent.RunOption) (*run.Output, error) {
	ctx, c, opts, err := t.resume(ctx, paused, opts)
	if err != nil {
		return nil, err
	}
	out, err := t.leader.ContinueRun(ctx, leaderRun(paused), leaderOptions(paused, opts)...)
	t.cancelUnreached(ctx, out) // stored already, with a DB: see storeMemberResponses
	t.finish(ctx, c, out)
	return out, err
}

// ContinueStream is ContinueRun yielding events, starting with
// TeamRunContinued; member events are forwarded as in Stream.
func (t *Team) ContinueStream(ctx context.Context, paused *run.Output, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		ctx, _, opts, err := t.resume(ctx, paused, opts)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		for ev, err := range t.leader.ContinueStream(ctx, leaderRun(paused), leaderOptions(paused, opts)...) {
			if ev.Event == t.Component().EventName(run.EventRunCancelled) {
				t.cancelUnreached(ctx, &run.Output{Status: run.StatusCancelled})
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ContinueRunID loads a PAUSED team run from the team's DB and continues it.
func (t *Team) ContinueRunID(ctx context.Context, runID string, opts ...agent.RunOption) (*run.Output, error) {
	if t.cfg.DB == nil {
		return nil, fmt.Errorf("team: continuing a run by id needs Config.DB; pass the paused *run.Output instead")
	}
	row, err := t.cfg.DB.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("team: load run %s: %w", runID, err)
	}
	paused, err := row.Output()
	if err != nil {
		return nil, err
	}
	return t.ContinueRun(ctx, paused, opts...)
}

// resume prepares the context a continued team run executes in: its member
// runs so far, its task list, and the member runs to continue.
func (t *Team) resume(ctx context.Context, paused *run.Output, opts []agent.RunOption) (context.Context, *collector, []agent.RunOption, error) {
	if paused == nil {
		return nil, nil, nil, fmt.Errorf("team: ContinueRun needs the paused run")
	}
	// As an agent continues only its own runs: another team's paused run
	// would run this team's members and leader on it.
	if paused.AgentID != "" || (paused.TeamID != "" && paused.TeamID != t.ID()) {
		return nil, nil, nil, fmt.Errorf("team: run %s belongs to %s, not to team %q", paused.RunID, ownerOf(paused), t.ID())
	}
	co := agent.ResolveOptions(opts...)
	if err := t.refuse(co, true); err != nil {
		return nil, nil, nil, err
	}
	ctx, opts, err := t.withTasks(ctx, co, opts, paused)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, c := t.withCollector(ctx, paused.MemberResponses)
	// The continued team run keeps its paused run's metadata, with the
	// continue's resolved over it, as the leader's continue stamps it.
	c.forMembers(co, run.MergeMetadata(paused.Metadata, t.runMetadata(co.Metadata)), paused.Input)
	if paused.Status != run.StatusPaused {
		return ctx, c, opts, nil // the leader refuses it with run.ErrNotContinuable
	}
	members := make(map[string]*run.Output, len(paused.MemberResponses))
	var order []*run.Output
	for _, raw := range paused.MemberResponses {
		var o run.Output
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, nil, nil, fmt.Errorf("team: continue run %s: member_responses: %w", paused.RunID, err)
		}
		members[o.RunID] = &o
		order = append(order, &o)
	}
	rs := &resumeState{paused: map[string][]*run.Output{}, ended: map[string][]*run.Output{}, done: map[string]*run.Output{},
		inPlace: paused.Requirements, given: co.Requirements, tools: co.Tools}
	taken := map[string]bool{} // member run ids
	for _, r := range paused.Requirements {
		if r.MemberRunID == "" || taken[r.MemberRunID] {
			continue
		}
		taken[r.MemberRunID] = true
		mi, ok := t.members[r.MemberAgentID]
		if !ok {
			return nil, nil, nil, fmt.Errorf("team: continue run %s: requirement %s names member %q, which is not in the team: %w", paused.RunID, r.ID, r.MemberAgentID, run.ErrNotContinuable)
		}
		m := members[r.MemberRunID]
		if d := mi.r.DB(); d != nil {
			// The member's database has the member run as it is now: it
			// may have ended on its own since the team run paused
			// (continued or cancelled by its own id), its member_responses
			// copy still PAUSED. It is read also when the continue is
			// cancelled already: that ends the paused member runs
			// (cancelUnreached).
			row, err := d.GetRun(context.WithoutCancel(ctx), r.MemberRunID)
			switch {
			case err == nil:
				stored, err := row.Output()
				if err != nil {
					return nil, nil, nil, err
				}
				if m == nil || stored.Status != run.StatusPaused {
					m = stored
				}
			case m == nil || !errors.Is(err, db.ErrNotFound):
				return nil, nil, nil, fmt.Errorf("team: continue run %s: load member run %s: %w", paused.RunID, r.MemberRunID, err)
			}
		}
		if m == nil {
			return nil, nil, nil, fmt.Errorf("team: continue run %s: the paused run %s of member %s is neither in member_responses nor in its database: %w", paused.RunID, r.MemberRunID, mi.id, run.ErrNotContinuable)
		}
		if m.Status != run.StatusPaused {
			// Its delegation takes it as it ended: continuing it again
			// would run its confirmed tools a second time, or after its
			// cancel, and overwrite its row.
			rs.ended[mi.id] = append(rs.ended[mi.id], m)
			continue
		}
		rs.paused[mi.id] = append(rs.paused[mi.id], m)
	}
	// A broadcast call that paused: its members that completed are not run
	// again (the latest completed run of each member on the same task).
	for _, ex := range pendingCalls(paused) {
		if ex.ToolName != ToolDelegateAll {
			continue
		}
		var args delegateAllArgs
		if json.Unmarshal(ex.ToolArgs, &args) != nil {
			continue
		}
		for _, o := range order {
			if o.Status == run.StatusCompleted && inputText(o) == args.Task && !pausedOn(rs.paused[memberIDOf(o)], args.Task) {
				rs.done[doneKey(memberIDOf(o), args.Task)] = o
			}
		}
	}
	return context.WithValue(ctx, resumeKey{t}, rs), c, opts, nil
}

// pausedOn tells whether one of a member's paused runs was given task.
func pausedOn(runs []*run.Output, task string) bool {
	return slices.ContainsFunc(runs, func(o *run.Output) bool { return inputText(o) == task })
}

// pendingCalls are the paused run's tool calls without a result (those a
// member's pause left waiting).
func pendingCalls(out *run.Output) []run.ToolExecution {
	answered := map[string]bool{}
	for _, m := range out.Messages {
		if m.ToolCallID != "" && m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	var pending []run.ToolExecution
	for _, ex := range out.Tools {
		if !answered[ex.ToolCallID] {
			pending = append(pending, ex)
		}
	}
	return pending
}

func memberIDOf(o *run.Output) string {
	if o.AgentID != "" {
		return o.AgentID
	}
	return o.TeamID
}

// leaderOptions are the continue options for the leader: the resolutions of
// members' requirements are the members' (their tool call ids may equal the
// leader's own), the rest are the leader's.
func leaderOptions(paused *run.Output, opts []agent.RunOption) []agent.RunOption {
	if paused == nil {
		return opts
	}
	member := map[string]bool{}
	for _, r := range paused.Requirements {
		if r.MemberRunID != "" {
			member[r.ID] = true
			if r.ToolExecution != nil {
				member[r.ToolExecution.ToolCallID] = true
			}
		}
	}
	if len(member) == 0 {
		return opts
	}
	co := agent.ResolveOptions(opts...)
	var reqs []run.Requirement
	for _, r := range co.Requirements {
		if r.MemberRunID == "" && !member[r.ID] {
			reqs = append(reqs, r)
		}
	}
	var tools []run.ToolExecution
	for _, ex := range co.Tools {
		if !member[ex.ToolCallID] {
			tools = append(tools, ex)
		}
	}
	return append(opts[:len(opts):len(opts)], agent.WithRequirements(reqs), agent.WithTools(tools))
}

// leaderRun is the paused run as the leader continues it: without the
// members' requirements (resolved in place, they are the members').
func leaderRun(paused *run.Output) *run.Output {
	if paused == nil {
		return nil
	}
	cp := *paused
	cp.Requirements = nil
	for _, r := range paused.Requirements {
		if r.MemberRunID == "" {
			cp.Requirements = append(cp.Requirements, r)
		}
	}
	return &cp
}

// A continue cancelled before it reached a paused member run (its context
// already done, or cancelled while another call ran) ends the team run
// CANCELLED; the member runs its pause waited on end with it, stored
// CANCELLED and waiting for nothing, as the member runs of a team run
// cancelled while they work are. Left PAUSED, they could still be continued
// on their own, their tools running after the team run was cancelled.

// takeUnreached returns the paused member runs no delegation took, by
// member id, and forgets them.
func (rs *resumeState) takeUnreached() map[string][]*run.Output {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	left := rs.paused
	rs.paused = map[string][]*run.Output{}
	return left
}

// cancelUnreached cancels the paused member runs a CANCELLED continue out
// of the team run did not reach, and gives the team run's collector their
// cancelled versions. It does nothing for another status, or twice.
func (t *Team) cancelUnreached(ctx context.Context, out *run.Output) {
	rs := resumeFrom(ctx, t)
	if rs == nil || out == nil || out.Status != run.StatusCancelled {
		return
	}
	ctx = context.WithoutCancel(ctx)
	c, _ := ctx.Value(collectorKey{t}).(*collector)
	for id, runs := range rs.takeUnreached() {
		for _, o := range runs {
			cancelled := t.members[id].endPaused(ctx, o, run.StatusCancelled, "the team run it was paused in was cancelled")
			if c != nil {
				c.add(cancelled)
			}
		}
	}
}

// endPaused stores member mi's paused run o ended with status (CANCELLED,
// or ERROR) and why (in the member's database, when it has one) and
// returns it so; the runs a member team's pause waited on end with it.
func (mi *memberInfo) endPaused(ctx context.Context, o *run.Output, status run.Status, why string) *run.Output {
	var members map[string]*run.Output // run id → its ended version
	if sub, ok := mi.r.(*Team); ok {
		members = sub.endPausedMembers(ctx, o, status, why)
	}
	ended := endedRun(o, status, why, members)
	if d := mi.r.DB(); d != nil {
		stored := ended
		if row, err := d.GetRun(ctx, o.RunID); err == nil {
			if so, err := row.Output(); err == nil && so.Status == run.StatusPaused {
				stored = endedRun(so, status, why, members) // as stored: offloaded, media referenced
			}
		}
		if row, err := db.RunFromOutput(stored); err == nil {
			_, _ = d.UpsertRun(ctx, row)
		}
	}
	return ended
}

// endPausedMembers ends the member runs the paused team run o waits on and
// returns them by run id.
func (t *Team) endPausedMembers(ctx context.Context, o *run.Output, status run.Status, why string) map[string]*run.Output {
	byID := map[string]*run.Output{}
	for _, raw := range o.MemberResponses {
		var m run.Output
		if json.Unmarshal(raw, &m) == nil {
			byID[m.RunID] = &m
		}
	}
	out := map[string]*run.Output{}
	for _, r := range o.Requirements {
		mi, ok := t.members[r.MemberAgentID]
		if r.MemberRunID == "" || out[r.MemberRunID] != nil || !ok {
			continue
		}
		m := byID[r.MemberRunID]
		if m == nil && mi.r.DB() != nil {
			if row, err := mi.r.DB().GetRun(ctx, r.MemberRunID); err == nil {
				m, _ = row.Output()
			}
		}
		if m != nil && m.Status == run.StatusPaused {
			out[r.MemberRunID] = mi.endPaused(ctx, m, status, why)
		}
	}
	return out
}

// endedRun is the paused run o as a run ended with status is stored,
// waiting for nothing, its member_responses (a member team's) with the
// ended versions of members.
func endedRun(o *run.Output, status run.Status, why string, members map[string]*run.Output) *run.Output {
	cp := *o
	cp.Status = status
	verb := "was cancelled"
	if status == run.StatusError {
		verb = "failed"
	}
	cp.Content, cp.ContentType = fmt.Sprintf("run %s %s: %s", o.RunID, verb, why), "str"
	cp.Requirements = nil
	cp.UpdatedAt = time.Now().Unix()
	if len(members) > 0 {
		cp.MemberResponses = slices.Clone(o.MemberResponses)
		for i, raw := range cp.MemberResponses {
			var head struct {
				RunID string `json:"run_id"`
			}
			if json.Unmarshal(raw, &head) != nil || members[head.RunID] == nil {
				continue
			}
			if b, err := json.Marshal(members[head.RunID]); err == nil {
				cp.MemberResponses[i] = b
			}
		}
	}
	return &cp
}

// ownerOf names the component a run belongs to, for an error message.
func ownerOf(o *run.Output) string {
	if o.AgentID != "" {
		return fmt.Sprintf("agent %q", o.AgentID)
	}
	return fmt.Sprintf("team %q", o.TeamID)
}

// EndPaused ends CANCELLED the team's paused run o, which nobody will
// continue (the workflow run it paused a step of ended), with the member
// runs it waits on, in the team's database (and the members'), and returns
// it so. why says why, in the run's content.
func (t *Team) EndPaused(ctx context.Context, o *run.Output, why string) *run.Output {
	return (&memberInfo{id: t.ID(), r: t}).endPaused(context.WithoutCancel(ctx), o, run.StatusCancelled, why)
}
