package team

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// defaultTeamHistoryRuns is Agno's num_team_history_runs default.
const defaultTeamHistoryRuns = 3

// checkMemberContext validates the member context settings of cfg (whose
// mode is mode) and applies their defaults.
func checkMemberContext(cfg *Config, mode Mode) error {
	switch {
	case cfg.DetermineInputForMembers != nil && !*cfg.DetermineInputForMembers && mode == ModeTasks:
		return errors.New("team: Config.DetermineInputForMembers false applies to delegations, which tasks mode has none of (its members always get their task): leave it unset")
	case cfg.NumTeamHistoryRuns < 0:
		return fmt.Errorf("team: Config.NumTeamHistoryRuns is %d; want 0 (the default, %d) or more", cfg.NumTeamHistoryRuns, defaultTeamHistoryRuns)
	case cfg.AddTeamHistoryToMembers && cfg.DB == nil:
		return errors.New("team: Config.AddTeamHistoryToMembers needs Config.DB: the team's history is read from its stored runs")
	case cfg.NumTeamHistoryRuns == 0:
		cfg.NumTeamHistoryRuns = defaultTeamHistoryRuns
	}
	return nil
}

// interaction is a member run of the team run, as ShareMemberInteractions
// shows it to the next members.
type interaction struct {
	member, task, answer string
}

// addInteraction records a member run that ended (ShareMemberInteractions).
// Its answer is its content or, without any, its tool results joined by
// commas (as Agno's).
func (c *collector) addInteraction(mi *memberInfo, task string, out *run.Output) {
	it := newInteraction(cmp.Or(mi.name, mi.id), task, out)
	c.mu.Lock()
	c.interactions = append(c.interactions, it)
	c.mu.Unlock()
}

func newInteraction(member, task string, out *run.Output) interaction {
	answer := out.ContentString()
	if answer == "" {
		results := make([]string, 0, len(out.Tools))
		for _, te := range out.Tools {
			results = append(results, te.Result)
		}
		answer = strings.Join(results, ",")
	}
	return interaction{member: member, task: task, answer: answer}
}

// priorInteractions are the interactions of the member runs a continued
// team run made before it paused (prior, in the order they ended), so the
// members it runs now are shown them too; a member run still PAUSED is
// shown once it ends.
func priorInteractions(prior []json.RawMessage) []interaction {
	var out []interaction
	for _, raw := range prior {
		var o run.Output
		if json.Unmarshal(raw, &o) != nil || o.Status == run.StatusPaused {
			continue
		}
		member := cmp.Or(o.AgentName, o.AgentID)
		if o.Type() == run.TypeTeam {
			member = cmp.Or(o.TeamName, o.TeamID)
		}
		task := ""
		if o.Input != nil {
			task = o.Input.Text()
		}
		out = append(out, newInteraction(member, task, &o))
	}
	return out
}

// interactionsBlock is Agno's <member_interaction_context> block of the
// member runs recorded so far ("" when none).
func (c *collector) interactionsBlock() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.interactions) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<member_interaction_context>\nSee below interactions with other team members.\n")
	for _, it := range c.interactions {
		b.WriteString("Member: " + it.member + "\nTask: " + it.task + "\nResponse: " + it.answer + "\n\n")
	}
	b.WriteString("</member_interaction_context>\n")
	return b.String()
}

// memberTask is the text a member run gets for task: the leader's task, or
// the team run's input (DetermineInputForMembers false, for a delegation),
// after the member interactions and the team history blocks the team
// shares (ShareMemberInteractions, AddTeamHistoryToMembers), each followed
// by a blank line, as Agno's format_member_agent_task lays them out.
func (t *Team) memberTask(ctx context.Context, c *collector, mi *memberInfo, task string, delegated bool) (string, error) {
	if c == nil {
		return task, nil
	}
	if delegated && t.cfg.DetermineInputForMembers != nil && !*t.cfg.DetermineInputForMembers && c.input != "" {
		task = c.input
	}
	var interactions, history string
	if t.cfg.ShareMemberInteractions {
		interactions = c.interactionsBlock()
	}
	if t.cfg.AddTeamHistoryToMembers {
		// A member team gets its own runs, an agent the team's (Agno's
		// get_team_history_context with the member team's id).
		id := t.ID()
		if _, ok := mi.r.(*Team); ok {
			id = mi.id
		}
		var err error
		if history, err = t.teamHistory(ctx, c, id); err != nil {
			return "", err
		}
	}
	if interactions == "" && history == "" {
		return task, nil
	}
	var b strings.Builder
	for _, s := range []string{interactions, history} {
		if s != "" {
			b.WriteString(s + "\n\n")
		}
	}
	b.WriteString(task)
	return b.String(), nil
}

// errTeamHistory is the error of a team history that could not be read
// (the database's own error may name its host and user: it is not passed
// on to the leader's model).
var errTeamHistory = errors.New("storage error: the team's history could not be read")

// teamHistory is the <team_history_context> block of team id's last
// NumTeamHistoryRuns completed runs of the run's session, oldest first ("" when
// there are none), read once per team run and team id.
func (t *Team) teamHistory(ctx context.Context, c *collector, id string) (string, error) {
	c.mu.Lock()
	h, ok := c.histories[id]
	c.mu.Unlock()
	if ok {
		return h, nil
	}
	rc, ok := agent.FromContext(ctx)
	if !ok {
		return "", nil
	}
	rows, _, err := t.cfg.DB.GetRuns(ctx, db.RunFilter{SessionID: rc.SessionID, TeamID: id, RunType: run.TypeTeam,
		Statuses: []run.Status{run.StatusCompleted}, Limit: t.cfg.NumTeamHistoryRuns, Page: 1, SortBy: "run_index", SortOrder: db.Desc})
	if err != nil {
		slog.WarnContext(ctx, "team: reading the team's history for a member failed", "run_id", rc.RunID, "error", err)
		return "", errTeamHistory
	}
	var b strings.Builder
	n := 0
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].RunID == rc.RunID {
			continue
		}
		o, err := rows[i].Output()
		if err != nil {
			continue // a corrupt stored run must not break new runs
		}
		if n == 0 {
			b.WriteString("<team_history_context>\n")
		}
		n++
		b.WriteString("[run-" + strconv.Itoa(n) + "]\n")
		// A run stored without an input (an older or Python-written
		// row) is shown with its answer only.
		if o.Input != nil {
			if in := o.Input.Text(); in != "" {
				b.WriteString("input: " + in + "\n")
			}
		}
		if out := o.ContentString(); out != "" {
			b.WriteString("response: " + out + "\n")
		}
		b.WriteString("\n")
	}
	if n > 0 {
		b.WriteString("</team_history_context>\n")
	}
	h = b.String()
	c.mu.Lock()
	if c.histories == nil {
		c.histories = make(map[string]string)
	}
	c.histories[id] = h
	c.mu.Unlock()
	return h, nil
}
