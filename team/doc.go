// Package team runs a team: a leader model that works with member agents or
// member teams through tools, in Agno's modes (coordinate, route, broadcast,
// tasks). A team run is stored as one team run plus one run per member call
// (parent_run_id = the team run), listed in its member_responses; member
// events are forwarded on the team's stream; a member that pauses pauses the
// team run, and ContinueRun continues the member; a member run cancelled
// cancels the team run, as a team run cancelled cancels its member runs. In
// tasks mode, execute_tasks_parallel runs independent tasks concurrently. A
// durable team run (agent.WithJournal) journals its members' model and tool
// calls under its own run id, with member run ids derived from the
// delegation, so a resumed run repeats nothing a member completed
// (docs/adr/team-member-journal.md).
// A run's options are its leader's, except knowledge filters, which go to
// the members with a knowledge base (member runs also get the team run's
// metadata, dependencies and input media). A member that adds history to its
// context reads its own earlier runs in the team's session, member runs
// included (agent.WithMemberHistory), as Agno's members do; the leader's
// history is the team's own runs. What else a member's task carries is
// Agno's: the team's last runs (AddTeamHistoryToMembers), the run's earlier
// member answers (ShareMemberInteractions), or the user's input instead of
// the leader's task (DetermineInputForMembers false). An option the team cannot
// honour is refused (agent.ErrUnsupportedOption,
// docs/adr/run-option-refusal.md).
package team
