package agentos

import (
	"encoding/json"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// runView is a stored run as the runs routes answer it: every member of its
// run_data in Agno's current shape (nothing the stored run holds is dropped but a paused workflow's
// resume journal,
// unlike AgentOS's RunSchema, TeamRunSchema and WorkflowRunSchema, which
// keep a fixed subset), with the members those schemas add or compute on
// top: run_input, run_response_format, input_media, created_at as an ISO
// time, the row's status, and null for schema fields the run lacks.
type runView map[string]json.RawMessage

// runViewNullable are the schema fields written as null when the run lacks them.
var runViewNullable = []string{"parent_run_id", "agent_id", "user_id", "content", "reasoning_content", "reasoning_steps",
	"metrics", "messages", "tools", "events", "references", "citations", "reasoning_messages", "session_state",
	"images", "videos", "audio", "files", "response_audio"}

var jsonNull = json.RawMessage("null")

func newRunView(row *db.Run) (runView, error) {
	o, err := row.Output()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var v runView
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	set := func(k string, val any) error {
		raw, err := json.Marshal(val)
		v[k] = raw
		return err
	}
	status := row.Status
	if status == "" {
		status = o.Status
	}
	format := "text"
	if o.ContentType != "" && o.ContentType != "str" {
		format = "json"
	}
	for k, val := range map[string]any{"status": status, "run_input": storedRunInput(o), "run_response_format": format,
		"created_at": isoTime(row.CreatedAt), "input_media": inputMedia(o)} {
		if err := set(k, val); err != nil {
			return nil, err
		}
	}
	// A paused workflow's journal (with its paused agent and team runs) is
	// Agentry's resume state, not a field of Agno's run schema.
	delete(v, workflow.JournalKey)
	for _, k := range runViewNullable {
		if _, ok := v[k]; !ok {
			v[k] = jsonNull
		}
	}
	return v, nil
}

// storedRunInput is what the run was asked, as Agno's get_run_input finds it: the
// input's content; for a workflow without one, its first step's user message;
// else the run's last user message.
func storedRunInput(o *run.Output) string {
	if o.Input != nil && o.Input.InputContent != nil {
		return runInputText(o.Input.InputContent)
	}
	if o.Type() == run.TypeWorkflow && len(o.StepExecutorRuns) > 0 {
		var first run.Output
		if json.Unmarshal(o.StepExecutorRuns[0], &first) == nil {
			if s, ok := lastUserMessage(&first); ok {
				return s
			}
		}
	}
	s, _ := lastUserMessage(o)
	return s
}

// runInputText renders input content as Agno's stringify_input_content does: a
// string as is, a list of messages as its first user message's content, an
// object as indented JSON, anything else as JSON.
func runInputText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		if len(c) > 0 {
			if m, ok := c[0].(map[string]any); ok && m["role"] == "user" {
				if s, ok := m["content"].(string); ok {
					return s
				}
			}
		}
	case map[string]any:
		if b, err := json.MarshalIndent(c, "", "  "); err == nil {
			return string(b)
		}
	}
	return run.ContentText(v)
}

func lastUserMessage(o *run.Output) (string, bool) {
	for i := len(o.Messages) - 1; i >= 0; i-- {
		if o.Messages[i].Role == "user" {
			return o.Messages[i].Content, true
		}
	}
	return "", false
}

// inputMedia is AgentOS's input_media: the input's media by kind.
func inputMedia(o *run.Output) map[string][]run.Media {
	m := map[string][]run.Media{"images": {}, "videos": {}, "audios": {}, "files": {}}
	if in := o.Input; in != nil {
		m["images"] = append(m["images"], in.Images...)
		m["videos"] = append(m["videos"], in.Videos...)
		m["audios"] = append(m["audios"], in.Audio...)
		m["files"] = append(m["files"], in.Files...)
	}
	return m
}
