package team

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// agnoEventNames are the event names Agno 3.0's readers know
// (RUN_EVENT_TYPE_REGISTRY for agent events, TEAM_RUN_EVENT_TYPE_REGISTRY
// for team events; run/agent.py and run/team.py).
var agnoEventNames = strings.Fields(`RunStarted RunContent RunContentCompleted RunIntermediateContent
	RunCompleted RunError RunCancelled RunPaused RunContinued PreHookStarted PreHookCompleted
	PostHookStarted PostHookCompleted ReasoningStarted ReasoningStep ReasoningContentDelta
	ReasoningCompleted MemoryUpdateStarted MemoryUpdateCompleted SessionSummaryStarted
	SessionSummaryCompleted ToolCallStarted ToolCallCompleted ToolCallError
	ParserModelResponseStarted ParserModelResponseCompleted OutputModelResponseStarted
	OutputModelResponseCompleted ModelRequestStarted ModelRequestCompleted CompressionStarted
	CompressionCompleted FollowupsStarted FollowupsCompleted`)

var agnoTeamOnly = []string{"TeamTaskIterationStarted", "TeamTaskIterationCompleted", "TeamTaskStateUpdated", "TeamTaskCreated", "TeamTaskUpdated"}

// agnoReadsEvent applies TeamRunOutput.from_dict's rule to one stored event:
// with an agent_id key it is parsed as an agent event, else as a team event;
// an unknown name is an error there.
func agnoReadsEvent(e map[string]any) bool {
	name, _ := e["event"].(string)
	if _, ok := e["agent_id"]; ok {
		return slices.Contains(agnoEventNames, name)
	}
	return slices.Contains(agnoTeamOnly, name) || (strings.HasPrefix(name, "Team") && slices.Contains(agnoEventNames, strings.TrimPrefix(name, "Team")))
}

// TestStoreEvents_MemberEventsStoredInlineAsAgno: with StoreEvents a
// streamed team run stores the members' forwarded events inline in its
// events, in stream order, as Agno's team does (handle_event on member
// events, default events_to_skip: no content deltas); the member runs keep
// their own rows. An Agno reader's rule parses every stored event.
func TestStoreEvents_MemberEventsStoredInlineAsAgno(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	writer := mustAgent(t, agent.Config{ID: "writer", Name: "Writer", Model: scripted.Reply("a short poem"), DB: d})
	leader := script(
		call(toolCreateTask, map[string]any{"title": "Poem", "assignee": "writer"}),
		call(toolExecuteTasks, map[string]any{"task_ids": []string{"t1"}}),
		call(toolMarkComplete, map[string]any{"summary": "done"}),
		answer("here it is"))
	tm := mustTeam(t, Config{ID: "studio", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{writer}, DB: d, StoreEvents: true})
	evs := collect(t, tm.Stream(context.Background(), run.TextInput("a poem"), agent.WithSessionID("s")))
	teamRunID := evs[0].RunID
	var streamed []string
	for _, e := range evs {
		if e.Event != "TeamRunContent" && e.Event != run.EventRunContent {
			streamed = append(streamed, string(e.Event)+"/"+e.AgentID)
		}
	}
	row, err := d.GetRun(context.Background(), teamRunID)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(row.RunData, &data); err != nil {
		t.Fatal(err)
	}
	var stored []string
	var memberRunID string
	for _, e := range data.Events {
		if !agnoReadsEvent(e) {
			t.Errorf("an Agno reader cannot parse stored event %v", e)
		}
		id, _ := e["agent_id"].(string)
		stored = append(stored, e["event"].(string)+"/"+id)
		if id == "writer" {
			if e["parent_run_id"] != teamRunID {
				t.Errorf("stored member event %v: parent_run_id is not the team run's", e["event"])
			}
			memberRunID, _ = e["run_id"].(string)
		}
	}
	if !slices.Equal(stored, streamed) {
		t.Errorf("stored events\n %v\nstreamed (without content deltas)\n %v", stored, streamed)
	}
	for _, want := range []string{"RunStarted/writer", "RunCompleted/writer", "TeamTaskUpdated/", "TeamTaskCreated/"} {
		if !slices.Contains(stored, want) {
			t.Errorf("stored events lack %s: %v", want, stored)
		}
	}
	if slices.Contains(stored, "RunContent/writer") {
		t.Error("a member's content delta was stored")
	}
	// The member run is still its own row, parented to the team run.
	mrow, err := d.GetRun(context.Background(), memberRunID)
	if err != nil || mrow.ParentRunID != teamRunID || mrow.AgentID != "writer" {
		t.Fatalf("member row %+v, %v", mrow, err)
	}
	// The run as Go reads it has them too.
	out, _ := row.Output()
	if len(out.Events) != len(data.Events) {
		t.Errorf("Output().Events %d, stored %d", len(out.Events), len(data.Events))
	}
}
