package team

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// sawImage reports whether a request's user message carries an image part
// with data.
func sawImage(req []model.Message, data []byte) bool {
	for _, m := range req {
		for _, p := range m.Parts {
			if m.Role == "user" && p.Type == model.PartImage && bytes.Equal(p.Data, data) {
				return true
			}
		}
	}
	return false
}

// TestDelegate_MembersGetTheTeamRunsInputMedia: the images (and other
// media) of a team run's input go with every member run's task, as Agno's
// delegation passes them: a vision member asked to describe the user's
// picture sees it, in every mode, through a member team, and in a member
// run a continued team run starts.
func TestDelegate_MembersGetTheTeamRunsInputMedia(t *testing.T) {
	t.Parallel()
	img := []byte("\x89PNG the user's picture")
	input := run.Input{InputContent: "what is in this picture?", Images: []run.Media{{Content: img, MIMEType: "image/png"}}}
	cases := map[string]struct {
		mode   Mode
		leader func() *scripted.Model
		nested bool
	}{
		"coordinate": {ModeCoordinate, func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "vision", "task": "describe the picture"}), answer("a cat"))
		}, false},
		"broadcast": {ModeBroadcast, func() *scripted.Model {
			return script(call(ToolDelegateAll, map[string]any{"task": "describe the picture"}), answer("a cat"))
		}, false},
		"tasks": {ModeTasks, func() *scripted.Model {
			return script(call(toolCreateTask, map[string]any{"title": "describe the picture", "assignee": "vision"}),
				call(toolExecuteTasks, map[string]any{"task_ids": []string{"t1"}}), call(toolMarkComplete, map[string]any{"summary": "a cat"}), answer("a cat"))
		}, false},
		"nested": {ModeCoordinate, func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "sub", "task": "describe the picture"}), answer("a cat"))
		}, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			seen := &recorder{Model: scripted.Reply("a cat")}
			vision := mustAgent(t, agent.Config{ID: "vision", Model: seen, DB: d})
			cfg := Config{ID: "t", Mode: c.mode, Model: c.leader(), Members: []*agent.Agent{vision}, DB: d}
			if c.nested {
				sub := mustTeam(t, Config{ID: "sub", Model: script(call(ToolDelegate, map[string]any{"member_id": "vision", "task": "describe it"}), answer("a cat")),
					Members: []*agent.Agent{vision}, DB: d})
				cfg.Members, cfg.Teams = nil, []*Team{sub}
			}
			out, err := mustTeam(t, cfg).Run(context.Background(), input, agent.WithSessionID("s"))
			if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("run: %v, %v", out.Status, err)
			}
			reqs := seen.requests()
			if len(reqs) != 1 || !sawImage(reqs[0], img) {
				t.Fatalf("the member's model did not get the user's picture: %+v", reqs)
			}
			for _, r := range rowsOf(t, d, "s") {
				if r.AgentID != "vision" {
					continue
				}
				m, _ := r.Output()
				if m.Input == nil || len(m.Input.Images) != 1 || !bytes.Equal(m.Input.Images[0].Content, img) {
					t.Errorf("the member run's stored input has no picture: %+v", m.Input)
				}
			}
		})
	}
	t.Run("continued", func(t *testing.T) {
		t.Parallel()
		d := openDB(t)
		var ran int32
		seen := &recorder{Model: scripted.Reply("a cat")}
		vision := mustAgent(t, agent.Config{ID: "vision", Model: seen, DB: d})
		leader := script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}),
			call(ToolDelegate, map[string]any{"member_id": "vision", "task": "describe the picture"}), answer("a cat"))
		tm := opsTeam(t, d, ModeCoordinate, &ran, leader, vision)
		paused, err := tm.Run(context.Background(), input, agent.WithSessionID("s"))
		if err != nil || paused.Status != run.StatusPaused {
			t.Fatalf("first leg: %v, %v", paused.Status, err)
		}
		row, err := d.GetRun(context.Background(), paused.RunID)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := row.Output() // as a restarted process reads it
		out, err := tm.ContinueRun(context.Background(), stored, agent.WithRequirements(confirmAll(stored.Requirements)))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("continued: %v, %v", out.Status, err)
		}
		if reqs := seen.requests(); len(reqs) != 1 || !sawImage(reqs[0], img) {
			t.Fatalf("the member the continued run delegated to did not get the user's picture: %+v", reqs)
		}
	})
}
