package config

import (
	"context"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/tool"
)

// flatReview are Agno 2.x's human-in-the-loop keyword arguments, which Agno
// 3.0 grouped into one human_review object; in a config file they are
// errors naming the new form.
var flatReview = map[string]bool{
	"requires_confirmation": true, "confirmation_message": true, "requires_user_input": true,
	"user_input_message": true, "user_input_schema": true, "user_input_fields": true,
	"requires_output_review": true, "output_review_message": true, "requires_iteration_review": true,
	"iteration_review_message": true, "allow_multiple_selections": true, "on_reject": true,
	"on_timeout": true, "external_execution": true,
}

// checkFlatReview finds flat HITL keys outside a human_review mapping.
func checkFlatReview(n *yaml.Node, file, parentKey string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if freeForm[key.Value] {
				continue
			}
			if parentKey != "human_review" && flatReview[key.Value] {
				return &Error{File: file, Line: key.Line, Msg: fmt.Sprintf(
					"%q is an Agno 2.x keyword; Agno 3.0 groups human review in one object: write human_review: {%s: …} on the step or tool", key.Value, key.Value)}
			}
			if err := checkFlatReview(val, file, key.Value); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := checkFlatReview(c, file, parentKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// ToolReview is a tool's human_review in a config file: the call pauses the
// run until the caller confirms it, supplies its arguments, or executes it
// and returns the result (continued through the agent's continue route).
type ToolReview struct {
	RequiresConfirmation bool `yaml:"requires_confirmation"`
	RequiresUserInput    bool `yaml:"requires_user_input"`
	ExternalExecution    bool `yaml:"external_execution"`
}

func (r *ToolReview) decode(n *yaml.Node) error {
	fields, err := scalarFields(n, "human_review", "requires_confirmation", "requires_user_input", "external_execution")
	if err != nil {
		return err
	}
	for k, v := range fields {
		var b bool
		switch v {
		case "true":
			b = true
		case "false":
		default:
			return fmt.Errorf("line %d: human_review.%s must be true or false", n.Line, k)
		}
		switch k {
		case "requires_confirmation":
			r.RequiresConfirmation = b
		case "requires_user_input":
			r.RequiresUserInput = b
		case "external_execution":
			r.ExternalExecution = b
		}
	}
	if !r.RequiresConfirmation && !r.RequiresUserInput && !r.ExternalExecution {
		return fmt.Errorf("line %d: human_review asks nothing: set requires_confirmation, requires_user_input or external_execution", n.Line)
	}
	return nil
}

// reviewedTool is a built-in tool whose calls pause for a person.
type reviewedTool struct {
	tool.Tool
	r ToolReview
}

func (t reviewedTool) Definition() tool.Definition {
	d := t.Tool.Definition()
	d.RequiresConfirmation = d.RequiresConfirmation || t.r.RequiresConfirmation
	d.RequiresUserInput = d.RequiresUserInput || t.r.RequiresUserInput
	d.ExternalExecution = d.ExternalExecution || t.r.ExternalExecution
	return d
}

func (t reviewedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.Tool.Call(ctx, args)
}

// noToolReview refuses human_review where no run can pause for it (code
// run by CodeMode, tools served over MCP).
func noToolReview(bad func(string, ...any), where string, t Tool) {
	if t.HumanReview != nil {
		bad("%s: tool %q: human_review works on an agent's tools only (no run pauses here); remove it", where, t.Name)
	}
}
