package team

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Delegation tool names, as in Agno's coordinate mode.
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

func (t *Team) tools() ([]tool.Tool, error) {
	one, err := tool.Func(tool.FuncConfig{
		Name:        ToolDelegate,
		Description: "Delegate a task to one member of the team and get its answer back.",
	}, t.delegate)
	if err != nil {
		return nil, fmt.Errorf("team: %w", err)
	}
	tools := []tool.Tool{one}
	if t.cfg.DelegateToAllMembers {
		all, err := tool.Func(tool.FuncConfig{
			Name:        ToolDelegateAll,
			Description: "Delegate the same task to every member of the team and get all their answers back.",
		}, t.delegateAll)
		if err != nil {
			return nil, fmt.Errorf("team: %w", err)
		}
		tools = append(tools, all)
	}
	return tools, nil
}

// delegate runs one member in the team run's session, as a member run of it.
// A failed member run is a tool error the leader reads; the team run goes on.
func (t *Team) delegate(ctx context.Context, in delegateArgs) (string, error) {
	m, ok := t.members[in.MemberID]
	if !ok {
		return "", fmt.Errorf("no member with id %q; members: %s", in.MemberID, strings.Join(t.memberIDs(), ", "))
	}
	return t.runMember(ctx, m, in.Task)
}

func (t *Team) delegateAll(ctx context.Context, in delegateAllArgs) (string, error) {
	var b strings.Builder
	var errs []error
	for _, m := range t.cfg.Members {
		content, err := t.runMember(ctx, m, in.Task)
		if err != nil {
			errs = append(errs, err)
			content = "error: " + err.Error()
		}
		fmt.Fprintf(&b, "Member %s:\n%s\n\n", m.ID(), content)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if len(errs) == len(t.cfg.Members) {
		return "", errors.Join(errs...)
	}
	return strings.TrimSpace(b.String()), nil
}

func (t *Team) runMember(ctx context.Context, m *agent.Agent, task string) (string, error) {
	rc, ok := agent.FromContext(ctx)
	if !ok {
		return "", errors.New("team: delegation tool called outside a team run")
	}
	opts := []agent.RunOption{agent.WithSessionID(rc.SessionID), agent.WithUserID(rc.UserID), agent.WithParentRunID(rc.RunID)}
	if rc.Dependencies != nil {
		opts = append(opts, agent.WithDependencies(rc.Dependencies))
	}
	out, err := m.Run(ctx, run.TextInput(task), opts...)
	if out == nil && errors.Is(err, agent.ErrStorage) {
		// The database's error may name its host and user: the leader's
		// model (and the stored team run) get a generic text.
		return "", fmt.Errorf("member %s could not run: storage error: its session could not be read", m.ID())
	}
	if out == nil {
		return "", fmt.Errorf("member %s could not run: %w", m.ID(), err)
	}
	if c, ok := ctx.Value(collectorKey{}).(*collector); ok {
		c.add(out)
	}
	if out.Status != run.StatusCompleted {
		return "", fmt.Errorf("member %s ended %s: %s", m.ID(), out.Status, out.ContentString())
	}
	return out.ContentString(), nil
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
// who the members are and how to delegate, in the spirit of Agno's
// coordinate-mode system message.
func (t *Team) prompt() string {
	var b strings.Builder
	b.WriteString("You are the leader of a team of AI agents. You cannot do the members' work yourself: delegate tasks to the members best suited to them with the " + ToolDelegate + " tool, read their answers, then answer the user.\n\n<team_members>\n")
	for _, m := range t.cfg.Members {
		fmt.Fprintf(&b, "- member_id: %s\n", m.ID())
		if m.Name() != "" {
			fmt.Fprintf(&b, "  name: %s\n", m.Name())
		}
		if d := m.Config().Description; d != "" {
			fmt.Fprintf(&b, "  role: %s\n", d)
		}
		for _, s := range m.Tools() {
			fmt.Fprintf(&b, "  tool: %s\n", s.Name)
		}
	}
	b.WriteString("</team_members>\n\n<how_to_respond>\n")
	b.WriteString("- Give each member a complete task: it does not see the conversation.\n")
	if t.cfg.DelegateToAllMembers {
		b.WriteString("- Use " + ToolDelegateAll + " to ask every member at once.\n")
	}
	b.WriteString("- Check the members' answers; delegate again if they are not good enough.\n")
	b.WriteString("- Answer the user yourself, from the members' answers.\n</how_to_respond>")
	return b.String()
}
