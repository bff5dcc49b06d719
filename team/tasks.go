package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
)

// Tasks mode: the leader's task list tools (Agno's names) and its iterations.
const (
	toolCreateTask   = "create_task"
	toolUpdateTask   = "update_task_status"
	toolListTasks    = "list_tasks"
	toolExecuteTask  = "execute_task"
	toolExecuteTasks = "execute_tasks_parallel"
	toolMarkComplete = "mark_all_complete"
	toolAddNote      = "add_task_note"

	// taskListKey is where the task list is kept in the run's session_state,
	// as Agno keeps it.
	taskListKey = "_team_tasks"
)

// Task statuses, as Agno names them.
const (
	taskPending    = "pending"
	taskInProgress = "in_progress"
	taskCompleted  = "completed"
	taskFailed     = "failed"
	taskBlocked    = "blocked"
)

// task is one task of the list, in Agno's stored shape.
type task struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Status       string   `json:"status"`
	Assignee     *string  `json:"assignee"`
	Dependencies []string `json:"dependencies"`
	Result       *string  `json:"result"`
	Notes        []string `json:"notes"`
	CreatedAt    float64  `json:"created_at"`
	ParentID     *string  `json:"parent_id"`
	// extra are the stored task's members this shape does not have (a
	// newer Agno's), written back as read.
	extra map[string]json.RawMessage
}

// taskFields are the JSON members of task.
var taskFields = []string{"id", "title", "description", "status", "assignee", "dependencies", "result", "notes", "created_at", "parent_id"}

// UnmarshalJSON reads a stored task, keeping the members it does not know.
func (tk *task) UnmarshalJSON(b []byte) error {
	type plain task
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range taskFields {
		delete(all, k)
	}
	*tk = task(p)
	if len(all) > 0 {
		tk.extra = all
	}
	return nil
}

// MarshalJSON writes the task with the unknown members it was read with.
func (tk *task) MarshalJSON() ([]byte, error) {
	type plain task
	b, err := json.Marshal((*plain)(tk))
	if err != nil || len(tk.extra) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range tk.extra {
		if _, known := all[k]; !known {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// taskList is one team run's task list. Task ids are t1, t2, … in creation
// order (Agno draws random ones), so a scripted leader can name them.
type taskList struct {
	mu                sync.Mutex
	Tasks             []*task `json:"tasks"`
	GoalComplete      bool    `json:"goal_complete"`
	CompletionSummary *string `json:"completion_summary"`
	// running holds the ids of the tasks a call of this run is executing:
	// a turn's tool calls run concurrently, and two of them naming one task
	// ran it twice (its member's tools with it).
	running map[string]bool
	// extra are the stored list's members this shape does not have.
	extra map[string]json.RawMessage
}

// errUnderWay is the tool error of a call naming a task another call of
// this turn is executing.
func errUnderWay(id string) error {
	return fmt.Errorf("task %s is under way in another call of this turn; wait for its result instead of executing it again", id)
}

// start marks ids running; the caller holds l.mu and checked none is.
func (l *taskList) start(ids ...string) {
	if l.running == nil {
		l.running = map[string]bool{}
	}
	for _, id := range ids {
		l.running[id] = true
	}
}

// stop unmarks ids.
func (l *taskList) stop(ids ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		delete(l.running, id)
	}
}

type taskKey struct{ t *Team }

// withTasks gives a tasks-mode team run its task list, as Agno loads it
// from the run's session_state: the paused run's when continuing (prior),
// else the one the call's WithSessionState sets, else the one stored in the
// session's state, so that tasks carry across the runs of a session. The
// returned options make the leader's run keep the list in its session state
// (storeTasks updates it there), which is written to the session row.
func (t *Team) withTasks(ctx context.Context, co agent.CallOptions, opts []agent.RunOption, prior *run.Output) (context.Context, []agent.RunOption, error) {
	if t.cfg.Mode != ModeTasks {
		return ctx, opts, nil
	}
	var (
		stored any
		found  bool
	)
	switch {
	case prior != nil:
		stored, found = prior.SessionState[taskListKey]
	case co.SessionState[taskListKey] != nil:
		stored, found = co.SessionState[taskListKey], true
	case t.cfg.DB != nil && co.SessionID != "":
		s, err := t.cfg.DB.GetSession(ctx, co.SessionID)
		switch {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			return nil, nil, fmt.Errorf("%w: team: load the task list of session %s: %w", agent.ErrStorage, co.SessionID, err)
		default:
			if st, ok := db.SessionStateOfStored(s.SessionData); ok {
				stored, found = st[taskListKey]
			}
		}
	}
	l := &taskList{}
	if found {
		l.load(stored)
	}
	state := maps.Clone(co.SessionState)
	if state == nil {
		state = map[string]any{}
	}
	state[taskListKey] = l.encode()
	opts = append(slices.Clone(opts), agent.WithSessionState(state))
	return context.WithValue(ctx, taskKey{t}, l), opts, nil
}

// load reads a stored task list (Agno's shape, also as a Python run wrote
// it), keeping the members it does not know, and brings the blocked
// statuses up to date, as Agno's TaskList.from_dict does. A list that is not
// one is read as empty.
func (l *taskList) load(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	var in struct {
		Tasks             []*task `json:"tasks"`
		GoalComplete      bool    `json:"goal_complete"`
		CompletionSummary *string `json:"completion_summary"`
	}
	if json.Unmarshal(b, &in) != nil {
		return
	}
	var extra map[string]json.RawMessage
	_ = json.Unmarshal(b, &extra)
	for _, k := range []string{"tasks", "goal_complete", "completion_summary"} {
		delete(extra, k)
	}
	l.Tasks, l.GoalComplete, l.CompletionSummary = slices.DeleteFunc(in.Tasks, func(tk *task) bool { return tk == nil }), in.GoalComplete, in.CompletionSummary
	if len(extra) > 0 {
		l.extra = extra
	}
	for _, tk := range l.Tasks {
		if tk.Status == "" {
			tk.Status = taskPending
		}
	}
	l.updateBlocked()
}

// encode is the list in its stored shape (nil if it cannot be encoded).
// The caller must not hold l.mu.
func (l *taskList) encode() map[string]any {
	l.mu.Lock()
	b, err := json.Marshal(l)
	extra := l.extra
	l.mu.Unlock()
	var v map[string]any
	if err != nil || json.Unmarshal(b, &v) != nil {
		return nil
	}
	for k, raw := range extra {
		var x any
		if _, known := v[k]; !known && json.Unmarshal(raw, &x) == nil {
			v[k] = x
		}
	}
	return v
}

func tasksFrom(ctx context.Context, t *Team) (*taskList, error) {
	l, ok := ctx.Value(taskKey{t}).(*taskList)
	if !ok {
		return nil, fmt.Errorf("team: task tool called outside a team run")
	}
	return l, nil
}

// storeTasks keeps the task list in the run's session_state. Before the
// leader's run is stored (inPlace), its state is a map of the run's own
// (withTasks gave it one), which the run writes to the session row: it is
// updated in place, so that the row gets the list too. Afterwards the run's
// events may have handed that map out: the output gets a copy.
func (t *Team) storeTasks(ctx context.Context, out *run.Output, inPlace bool) {
	l, ok := ctx.Value(taskKey{t}).(*taskList)
	if !ok {
		return
	}
	v := l.encode()
	if v == nil {
		return
	}
	if !inPlace {
		out.SessionState = maps.Clone(out.SessionState)
	}
	if out.SessionState == nil {
		out.SessionState = map[string]any{}
	}
	out.SessionState[taskListKey] = v
}

// newID is the id of a new task: t<n>, n the list's length plus one, or
// the next free one after it (a list read from the session may hold ids
// another run gave, Agno's random ones among them).
func (l *taskList) newID() string {
	for n := len(l.Tasks) + 1; ; n++ {
		if id := "t" + strconv.Itoa(n); l.find(id) == nil {
			return id
		}
	}
}

func (l *taskList) find(id string) *task {
	for _, tk := range l.Tasks {
		if tk.ID == id {
			return tk
		}
	}
	return nil
}

// summary renders the list for the leader, in the spirit of Agno's.
func (l *taskList) summary() string {
	if len(l.Tasks) == 0 {
		return "No tasks created yet."
	}
	counts := map[string]int{}
	var order []string
	for _, tk := range l.Tasks {
		if counts[tk.Status] == 0 {
			order = append(order, tk.Status)
		}
		counts[tk.Status]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tasks (%d total: %s):", len(l.Tasks), strings.Join(parts, ", "))
	for _, tk := range l.Tasks {
		assignee := " (unassigned)"
		if tk.Assignee != nil && *tk.Assignee != "" {
			assignee = " (assigned: " + *tk.Assignee + ")"
		}
		fmt.Fprintf(&b, "\n  [%s] %s - %s%s", tk.ID, tk.Title, strings.ToUpper(tk.Status), assignee)
		if len(tk.Dependencies) > 0 {
			fmt.Fprintf(&b, "\n      Depends on: %v", tk.Dependencies)
		}
		if tk.Result != nil {
			fmt.Fprintf(&b, "\n      Result: %s", clip.Mark(*tk.Result, 200, "..."))
		}
		for _, n := range tk.Notes[max(0, len(tk.Notes)-3):] {
			fmt.Fprintf(&b, "\n      Note: %s", n)
		}
	}
	if l.GoalComplete && l.CompletionSummary != nil {
		fmt.Fprintf(&b, "\n\nGoal marked complete: %s", *l.CompletionSummary)
	}
	return b.String()
}

// done reports whether the iterations end: the goal was marked complete, or
// every task finished and none failed.
func (l *taskList) done() bool {
	if l.GoalComplete {
		return true
	}
	for _, tk := range l.Tasks {
		if tk.Status != taskCompleted {
			return false
		}
	}
	return true
}

func (l *taskList) data() []run.TaskData {
	out := make([]run.TaskData, len(l.Tasks))
	for i, tk := range l.Tasks {
		out[i] = run.TaskData{ID: tk.ID, Title: tk.Title, Description: tk.Description, Status: tk.Status,
			Assignee: tk.Assignee, Dependencies: append([]string{}, tk.Dependencies...), Result: tk.Result}
	}
	return out
}

// blockedBy returns the dependencies of tk not completed yet.
func (l *taskList) blockedBy(tk *task) []string {
	var open []string
	for _, d := range tk.Dependencies {
		if dep := l.find(d); dep == nil || dep.Status != taskCompleted {
			open = append(open, d)
		}
	}
	return open
}

// taskEvent is a TeamTask* event of the team run ctx belongs to.
func (t *Team) taskEvent(ctx context.Context, typ run.EventType, te *run.TaskEvent) run.Event {
	e := run.Event{Event: typ, CreatedAt: time.Now().Unix(), TeamID: t.cfg.ID, TeamName: t.cfg.Name, TaskEvent: te}
	if rc, ok := agent.FromContext(ctx); ok {
		e.RunID, e.SessionID = rc.RunID, rc.SessionID
	}
	return e
}

// iteration is the leader's Config.Iterate in tasks mode.
func (t *Team) iteration() *agent.Iteration {
	return &agent.Iteration{
		Max: t.cfg.MaxIterations,
		Started: func(ctx context.Context, n, max int) {
			if agent.StreamingEvents(ctx) {
				agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskIterationStarted, &run.TaskEvent{Iteration: n, MaxIterations: max}))
			}
		},
		Completed: func(ctx context.Context, n, max int, _ string) (string, bool) {
			l, err := tasksFrom(ctx, t)
			if err != nil {
				return "", false
			}
			l.mu.Lock()
			summary, done := l.summary(), l.done()
			goal := l.GoalComplete
			state := &run.TaskEvent{TaskSummary: summary, GoalComplete: &goal, Tasks: l.data()}
			if l.CompletionSummary != nil {
				state.CompletionSummary = *l.CompletionSummary
			}
			l.mu.Unlock()
			if agent.StreamingEvents(ctx) {
				agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskStateUpdated, state))
				agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskIterationCompleted, &run.TaskEvent{Iteration: n, MaxIterations: max, TaskSummary: summary}))
			}
			if done {
				return "", false
			}
			return "<current_task_state>\n" + summary + "\n</current_task_state>\n\n" +
				"Continue working on the tasks. Create, execute, or update tasks as needed. " +
				"When all tasks are done, call `" + toolMarkComplete + "` with a summary.", true
		},
	}
}

type createTaskArgs struct {
	Title       string   `json:"title" jsonschema:"a short, actionable title for the task"`
	Description string   `json:"description,omitempty" jsonschema:"what needs to be done, in detail"`
	Assignee    string   `json:"assignee,omitempty" jsonschema:"the member_id to assign the task to"`
	DependsOn   []string `json:"depends_on,omitempty" jsonschema:"ids of tasks that must complete before this one can start"`
}

type updateTaskArgs struct {
	TaskID string `json:"task_id" jsonschema:"the id of the task"`
	Status string `json:"status" jsonschema:"the new status: pending, in_progress, completed or failed"`
	Result string `json:"result,omitempty" jsonschema:"the outcome of the task, when completing it"`
}

type executeTaskArgs struct {
	TaskID   string `json:"task_id" jsonschema:"the id of the task to execute"`
	MemberID string `json:"member_id" jsonschema:"the id of the member to execute it"`
}

type executeTasksArgs struct {
	TaskIDs []string `json:"task_ids" jsonschema:"the ids of independent tasks to execute concurrently; each must be assigned to a member and have no unfinished dependencies"`
}

type addNoteArgs struct {
	TaskID string `json:"task_id" jsonschema:"the id of the task"`
	Note   string `json:"note" jsonschema:"the note: progress or context for the task"`
}

type markCompleteArgs struct {
	Summary string `json:"summary" jsonschema:"a summary of the work done and the final outcome"`
}

func (t *Team) createTask(ctx context.Context, in createTaskArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	if in.Assignee != "" {
		if _, ok := t.members[in.Assignee]; !ok {
			return "", t.noMember(in.Assignee)
		}
	}
	l.mu.Lock()
	for _, tk := range l.Tasks {
		if strings.EqualFold(strings.TrimSpace(tk.Title), strings.TrimSpace(in.Title)) {
			l.mu.Unlock()
			return fmt.Sprintf("Task already exists: [%s] %s (status: %s). Use this task instead of creating a duplicate.", tk.ID, tk.Title, tk.Status), nil
		}
	}
	tk := &task{ID: l.newID(), Title: in.Title, Description: in.Description,
		Status: taskPending, Dependencies: append([]string{}, in.DependsOn...), Notes: []string{},
		CreatedAt: float64(time.Now().UnixNano()) / 1e9}
	if in.Assignee != "" {
		a := in.Assignee
		tk.Assignee = &a
	}
	l.Tasks = append(l.Tasks, tk)
	if len(l.blockedBy(tk)) > 0 {
		tk.Status = taskBlocked
	}
	ev := &run.TaskEvent{TaskID: tk.ID, Title: tk.Title, Description: tk.Description, Assignee: in.Assignee, Status: tk.Status, Dependencies: tk.Dependencies}
	var unknown []string
	for _, d := range tk.Dependencies {
		if l.find(d) == nil {
			unknown = append(unknown, d)
		}
	}
	l.mu.Unlock()
	agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskCreated, ev))
	msg := fmt.Sprintf("Task created: [%s] %s (status: %s)", tk.ID, tk.Title, tk.Status)
	if len(unknown) > 0 {
		// Blocked until tasks of those ids exist and complete, as Agno's
		// list treats them (fail-closed); the model is told why.
		msg += fmt.Sprintf(". It depends on %s, which no task has as its id yet: it stays blocked until such tasks exist and complete.",
			clip.Mark(strings.Join(unknown, ", "), maxEchoedID, "…"))
	}
	return msg, nil
}

// setStatus changes a task's status (and result) and emits TeamTaskUpdated.
func (t *Team) setStatus(ctx context.Context, l *taskList, tk *task, status string, result *string) {
	t.moveTask(ctx, l, tk, status, result, false)
}

// startTask sets a task in progress, unless it is already: its status is
// read under the list's lock, as another call of the turn may change it
// (update_task_status).
func (t *Team) startTask(ctx context.Context, l *taskList, tk *task) {
	t.moveTask(ctx, l, tk, taskInProgress, nil, true)
}

func (t *Team) moveTask(ctx context.Context, l *taskList, tk *task, status string, result *string, unlessAlready bool) {
	l.mu.Lock()
	if unlessAlready && tk.Status == status {
		l.mu.Unlock()
		return
	}
	ev := tk.move(status, result)
	follow := l.updateBlocked()
	l.mu.Unlock()
	agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskUpdated, ev))
	for _, f := range follow {
		agent.Emit(ctx, t.taskEvent(ctx, run.EventTeamTaskUpdated, f))
	}
}

// move sets tk's status (and result, when given) and returns the change as
// a TeamTaskUpdated event's data (the result only when the task ended).
// The list's mu is held.
func (tk *task) move(status string, result *string) *run.TaskEvent {
	ev := &run.TaskEvent{TaskID: tk.ID, Title: tk.Title, Status: status, PreviousStatus: tk.Status}
	tk.Status = status
	if tk.Assignee != nil {
		ev.Assignee = *tk.Assignee
	}
	if result != nil {
		tk.Result = result
		if status == taskCompleted || status == taskFailed {
			ev.Result = *result
		}
	}
	return ev
}

// dependencyFailed is the result of a task failed because a task it
// depends on failed (Agno's text).
const dependencyFailed = "Automatically failed: a dependency failed."

// updateBlocked brings the tasks waiting on others up to date after a
// change, as Agno's task list does: a blocked task one of whose
// dependencies failed fails too (nothing could ever run it, and the list
// would never end), one whose dependencies all completed is pending, and a
// pending task whose dependency is no longer completed (set back to
// pending, or failed) is blocked again. It returns the changes as events.
// l.mu is held.
func (l *taskList) updateBlocked() []*run.TaskEvent {
	var evs []*run.TaskEvent
	change := func(tk *task, status string, result *string) { evs = append(evs, tk.move(status, result)) }
	// Until nothing changes: a failure goes down a chain of dependents in
	// whatever order the list holds them.
	for pass, n := 0, -1; n != len(evs) && pass <= len(l.Tasks); pass++ {
		n = len(evs)
		for _, tk := range l.Tasks {
			switch tk.Status {
			case taskBlocked:
				if l.dependencyFailed(tk) {
					r := dependencyFailed
					change(tk, taskFailed, &r)
				} else if len(l.blockedBy(tk)) == 0 {
					change(tk, taskPending, nil)
				}
			case taskPending:
				if len(l.blockedBy(tk)) > 0 {
					change(tk, taskBlocked, nil)
				}
			}
		}
	}
	return evs
}

// dependencyFailed reports whether a task tk depends on failed.
func (l *taskList) dependencyFailed(tk *task) bool {
	for _, d := range tk.Dependencies {
		if dep := l.find(d); dep != nil && dep.Status == taskFailed {
			return true
		}
	}
	return false
}

func (t *Team) updateTask(ctx context.Context, in updateTaskArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	switch in.Status {
	case taskPending, taskInProgress, taskCompleted, taskFailed:
	case taskBlocked:
		return "", fmt.Errorf("cannot set status blocked: blocked is managed from the task's dependencies")
	default:
		return "", fmt.Errorf("invalid status %q: must be one of pending, in_progress, completed, failed", in.Status)
	}
	l.mu.Lock()
	tk := l.find(in.TaskID)
	l.mu.Unlock()
	if tk == nil {
		return "", fmt.Errorf("task with id %q not found", in.TaskID)
	}
	var result *string
	if in.Result != "" {
		result = &in.Result
	}
	t.setStatus(ctx, l, tk, in.Status, result)
	return fmt.Sprintf("Task [%s] '%s' updated to %s.", tk.ID, tk.Title, in.Status), nil
}

func (t *Team) listTasks(ctx context.Context, _ struct{}) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.summary(), nil
}

func (t *Team) addNote(ctx context.Context, in addNoteArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tk := l.find(in.TaskID)
	if tk == nil {
		return "", fmt.Errorf("task with id %q not found", in.TaskID)
	}
	tk.Notes = append(tk.Notes, in.Note)
	return fmt.Sprintf("Note added to task [%s].", tk.ID), nil
}

func (t *Team) markComplete(ctx context.Context, in markCompleteArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.GoalComplete, l.CompletionSummary = true, &in.Summary
	l.mu.Unlock()
	return "Goal marked as complete: " + in.Summary, nil
}

func (t *Team) executeTask(ctx context.Context, in executeTaskArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	mi, ok := t.members[in.MemberID]
	if !ok {
		return "", t.noMember(in.MemberID)
	}
	l.mu.Lock()
	tk := l.find(in.TaskID)
	var blocked []string
	underWay, completed := false, false
	if tk != nil {
		blocked = l.blockedBy(tk)
		underWay = l.running[tk.ID]
		// Read here, under the lock: another call of the turn may change
		// it (update_task_status).
		completed = tk.Status == taskCompleted
		// The member the task runs with is its assignee; a task that does
		// not run (blocked, completed already, under way) keeps its own.
		if len(blocked) == 0 && !completed && !underWay {
			id := in.MemberID
			tk.Assignee = &id
			l.start(tk.ID)
			defer l.stop(tk.ID)
		}
	}
	l.mu.Unlock()
	switch {
	case underWay:
		return "", errUnderWay(tk.ID)
	case tk == nil:
		return "", fmt.Errorf("task with id %q not found", in.TaskID)
	case len(blocked) > 0:
		return "", fmt.Errorf("task %s is blocked: it depends on %s, not completed yet", tk.ID, strings.Join(blocked, ", "))
	case completed:
		return fmt.Sprintf("Task [%s] is already completed.", tk.ID), nil
	}
	t.startTask(ctx, l, tk)
	prompt := tk.Title
	if tk.Description != "" {
		prompt += "\n\n" + tk.Description
	}
	var emit func(run.Event)
	if t.forwarding(ctx) {
		emit = func(e run.Event) { agent.Emit(ctx, e) }
	}
	out, err := t.runMember(ctx, mi, prompt, tk.ID, false, emit)
	if out != nil {
		agent.SetChildRunID(ctx, out.RunID) // as Agno's execute_task
	}
	status, content, err := t.taskOutcome(ctx, mi, out, err)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if status == taskInProgress {
		return content, nil // stays in progress until the member continues
	}
	t.setStatus(ctx, l, tk, status, &content)
	if err != nil {
		return "", fmt.Errorf("task %s failed: %w", tk.ID, err)
	}
	return fmt.Sprintf("Task [%s] completed by %s: %s", tk.ID, mi.id, content), nil
}

// taskOutcome is a task's new status after its member run: completed with
// the member's answer, failed with the error, or still in progress when the
// member paused (the team run pauses with it; content is then the text the
// leader would read).
func (t *Team) taskOutcome(ctx context.Context, mi *memberInfo, out *run.Output, err error) (status, content string, _ error) {
	if err == nil {
		content, err = t.memberOutcome(ctx, mi, out)
		if err == nil && out.Status == run.StatusPaused {
			return taskInProgress, content, nil
		}
		if err == nil {
			return taskCompleted, content, nil
		}
	}
	return taskFailed, err.Error(), err
}

// executeTasksParallel is Agno's execute_tasks_parallel: the tasks (each
// pending or in progress, assigned, not blocked) run concurrently, each by
// its assignee, as member runs of the team run. Events, in this order:
// TeamTaskUpdated (in_progress) for each task in task_ids order, the
// members' forwarded events as they happen, then TeamTaskUpdated
// (completed or failed) for each task in task_ids order, whatever order the
// members finished in (Agno emits those as they complete). The answer lists
// each task's outcome in task_ids order. A task completed already (by an
// earlier call, or before a pause of this one) is reported, not run again.
// A member that pauses pauses the team run; its task stays in progress. A
// cancel of the team run cancels every member run and fails no task.
func (t *Team) executeTasksParallel(ctx context.Context, in executeTasksArgs) (string, error) {
	l, err := tasksFrom(ctx, t)
	if err != nil {
		return "", err
	}
	if len(in.TaskIDs) == 0 {
		return "", fmt.Errorf("task_ids is empty: give the ids of the tasks to execute")
	}
	type job struct {
		tk   *task
		mi   *memberInfo
		done bool // completed before this call
	}
	jobs := make([]job, len(in.TaskIDs))
	seen := map[string]bool{}
	l.mu.Lock()
	for i, id := range in.TaskIDs {
		tk := l.find(id)
		var err error
		switch {
		case tk == nil:
			err = fmt.Errorf("task with id %q not found", id)
		case seen[id]:
			err = fmt.Errorf("task %s is listed twice in task_ids", id)
		case l.running[id]:
			err = errUnderWay(id)
		case tk.Status == taskCompleted:
			jobs[i] = job{tk: tk, done: true}
		case tk.Status == taskBlocked:
			err = fmt.Errorf("task %s is blocked, cannot execute it: only pending or in_progress tasks run (blocked by %s)", id, strings.Join(l.blockedBy(tk), ", "))
		case tk.Status != taskPending && tk.Status != taskInProgress:
			err = fmt.Errorf("task %s is %s: set it back to pending with %s to run it again", id, tk.Status, toolUpdateTask)
		case tk.Assignee == nil || *tk.Assignee == "":
			err = fmt.Errorf("task %s has no assignee: assign a member (create_task's assignee) or use %s", id, toolExecuteTask)
		case t.members[*tk.Assignee] == nil:
			err = fmt.Errorf("task %s is assigned to %q, which is not a member; members: %s", id, *tk.Assignee, strings.Join(t.memberIDs(), ", "))
		default:
			jobs[i] = job{tk: tk, mi: t.members[*tk.Assignee]}
		}
		if err != nil {
			l.mu.Unlock()
			return "", err // nothing ran
		}
		seen[id] = true
	}
	var toRun []int // the jobs to run, in task_ids order
	var ids []string
	for i, j := range jobs {
		if !j.done {
			toRun, ids = append(toRun, i), append(ids, j.tk.ID)
		}
	}
	l.start(ids...)
	l.mu.Unlock()
	defer l.stop(ids...)
	for _, i := range toRun {
		t.startTask(ctx, l, jobs[i].tk)
	}
	type result struct {
		status, content string
		err             error
	}
	results := make([]result, len(jobs))
	t.fanOut(ctx, len(toRun), func(k int, emit func(run.Event)) {
		j := jobs[toRun[k]]
		prompt := j.tk.Title
		if j.tk.Description != "" {
			prompt += "\n\n" + j.tk.Description
		}
		out, err := t.runMember(ctx, j.mi, prompt, j.tk.ID, false, emit)
		status, content, err := t.taskOutcome(ctx, j.mi, out, err)
		results[toRun[k]] = result{status, content, err}
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var b strings.Builder
	failed := 0
	for i, j := range jobs {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if j.done {
			l.mu.Lock()
			r := ""
			if j.tk.Result != nil {
				r = *j.tk.Result
			}
			l.mu.Unlock()
			fmt.Fprintf(&b, "Task [%s] completed. Result: %s", j.tk.ID, r)
			continue
		}
		r := results[i]
		switch r.status {
		case taskInProgress:
			fmt.Fprintf(&b, "Task [%s]: member %s requires human input. Task paused.", j.tk.ID, j.mi.id)
			continue
		case taskFailed:
			failed++
			fmt.Fprintf(&b, "Task [%s] failed: %s", j.tk.ID, r.content)
		default:
			fmt.Fprintf(&b, "Task [%s] completed. Result: %s", j.tk.ID, r.content)
		}
		content := r.content
		t.setStatus(ctx, l, j.tk, r.status, &content)
	}
	if failed > 0 && failed == len(jobs) {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}
