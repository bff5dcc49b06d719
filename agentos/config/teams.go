package config

import (
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/team"
)

// checkTeamMembers reports the teams' invalid modes and members: a member
// names an agent or another team (not both), teams do not contain
// themselves, and nesting stays within team.MaxNestingDepth.
func (c Config) checkTeamMembers(bad func(string, ...any), agents map[string]bool) {
	decl := make(map[string]*Team, len(c.Teams))
	for i := range c.Teams {
		decl[c.Teams[i].ID] = &c.Teams[i]
	}
	for i, t := range c.Teams {
		where := fmt.Sprintf("teams[%d]", i)
		mode, err := team.ParseMode(t.Mode)
		if err != nil {
			bad("%s.mode: %q is not a mode: want coordinate, route, broadcast or tasks", where, t.Mode)
		}
		if t.MaxIterations != 0 && mode != team.ModeTasks {
			bad("%s.max_iterations: applies to mode tasks only (this team's mode is %s)", where, mode)
		}
		if t.MaxIterations < 0 {
			bad("%s.max_iterations: must be positive", where)
		}
		if t.MaxConcurrentMembers < 0 {
			bad("%s.max_concurrent_members: must be 0 (no bound) or more", where)
		}
		if t.DetermineInputForMembers != nil && !*t.DetermineInputForMembers && mode == team.ModeTasks {
			bad("%s.determine_input_for_members: false applies to delegations, which mode tasks has none of (its members always get their task): remove it", where)
		}
		if t.NumTeamHistoryRuns < 0 {
			bad("%s.num_team_history_runs: must be 0 (the default, 3) or more", where)
		}
		if t.NumTeamHistoryRuns != 0 && !t.AddTeamHistoryToMembers {
			bad("%s.num_team_history_runs: applies with add_team_history_to_members: true only", where)
		}
		for _, m := range t.Members {
			switch _, isTeam := decl[m]; {
			case agents[m] && isTeam:
				bad("%s.members: %q names both an agent and a team; give them different ids", where, m)
			case !agents[m] && !isTeam:
				bad("%s.members: no agent or team with id %q", where, m)
			}
		}
		if path := teamCycle(decl, t.ID); path != nil {
			bad("%s.members: team %q contains itself: %s", where, t.ID, strings.Join(path, " → "))
		} else if d := teamDepth(decl, t.ID, map[string]bool{}); d > team.MaxNestingDepth {
			bad("%s.members: teams nest %d levels deep; the limit is %d", where, d, team.MaxNestingDepth)
		}
	}
}

// teamCycle returns the member path from start back to itself, nil when
// start is in no cycle (cycles elsewhere are reported for their own teams).
func teamCycle(decl map[string]*Team, start string) []string {
	seen := map[string]bool{}
	var walk func(id string, path []string) []string
	walk = func(id string, path []string) []string {
		path = append(path, id)
		for _, m := range decl[id].Members {
			switch {
			case decl[m] == nil:
			case m == start:
				return append(append([]string(nil), path...), m)
			case !seen[m]:
				seen[m] = true
				if c := walk(m, path); c != nil {
					return c
				}
			}
		}
		return nil
	}
	if decl[start] == nil {
		return nil
	}
	return walk(start, nil)
}

// teamDepth is how many team levels id spans (1: only agents as members);
// a member already on the path (a cycle) counts nothing more.
func teamDepth(decl map[string]*Team, id string, onPath map[string]bool) int {
	t := decl[id]
	if t == nil || onPath[id] {
		return 0
	}
	onPath[id] = true
	defer delete(onPath, id)
	depth := 1
	for _, m := range t.Members {
		if decl[m] != nil {
			depth = max(depth, 1+teamDepth(decl, m, onPath))
		}
	}
	return depth
}
