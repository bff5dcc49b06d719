package config

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

const workflowYAML = `
workflows:
  - id: all
    steps:
      - {name: draft, agent: writer}
      - {name: shout, function: upper}
      - steps:
          name: group
          steps:
            - {name: inner, function: mark}
      - loop:
          name: again
          max_iterations: 4
          end_condition: "current_iteration >= 2"
          steps:
            - {function: mark}
      - parallel:
          name: fan
          steps:
            - {name: p1, function: mark}
            - {name: p2, agent: writer}
      - condition:
          name: check
          if: 'input.contains("go")'
          steps:
            - {name: yes, function: mark}
          else:
            - {name: nope, function: mark}
      - router:
          name: pick
          selector: picker
          choices:
            - {name: a, function: mark}
            - {name: b, function: mark}
      - name: confirm
        function: mark
        human_review:
          requires_confirmation: true
          confirmation_message: go on?
          on_reject: cancel
          timeout: 60
          on_timeout: skip
`

func TestWorkflowYAML_EveryPrimitiveBuildsAndRuns(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("agents:\n  - id: writer\n    model: a:b\n"+strings.TrimPrefix(workflowYAML, "\n")), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	writer, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("text")})
	if err != nil {
		t.Fatal(err)
	}
	var marks int
	fns := workflow.Functions{
		Steps: map[string]workflow.StepFunc{
			"upper": func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
				return workflow.FuncResult{Content: strings.ToUpper(run.ContentText(in.PreviousStepContent))}, nil
			},
			"mark": func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
				marks++
				return workflow.FuncResult{Content: "marked"}, nil
			},
		},
		Selectors: map[string]func(*workflow.StepInput) ([]string, error){
			"picker": func(*workflow.StepInput) ([]string, error) { return []string{"b"}, nil },
		},
	}
	_, wfs, err := cfg.BuildTeamsAndWorkflows(nil, []*agent.Agent{writer}, BuildOptions{WorkflowFunctions: fns})
	if err != nil {
		t.Fatal(err)
	}
	steps := wfs[0].Steps()
	if len(steps) != 8 || steps[2].Steps == nil || steps[3].Loop.MaxIterations != 4 || steps[4].Parallel == nil || steps[5].Condition == nil ||
		steps[6].Router == nil || steps[7].HumanReview.OnReject != "cancel" || steps[7].HumanReview.Timeout.Seconds() != 60 {
		t.Fatalf("steps = %+v", steps)
	}
	out, err := wfs[0].Run(context.Background(), run.TextInput("let's go"))
	if err != nil || out.Status != run.StatusPaused || out.StepRequirements[0].ConfirmationMessage != "go on?" {
		t.Fatalf("run = %+v, %v", out, err)
	}
	// group 1, loop 2, parallel 1, condition 1, router 1
	if marks != 6 {
		t.Errorf("function steps ran %d times, want 6", marks)
	}
	names := []string{}
	for _, r := range out.StepResults {
		names = append(names, r.StepType+":"+r.StepName)
	}
	if got := strings.Join(names, " "); got != "Step:draft Step:shout Steps:group Loop:again Parallel:fan Condition:check Router:pick" {
		t.Errorf("results %s", got)
	}
}

func TestWorkflowYAML_Refusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"flat kwarg on a step", "workflows:\n  - id: w\n    steps:\n      - agent: a\n        requires_confirmation: true\n",
			`os.yaml:5: "requires_confirmation" is an Agno 2.x keyword; Agno 3.0 groups human review in one object: write human_review: {requires_confirmation: …}`},
		{"flat kwarg on a tool", "agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: calculator\n        requires_confirmation: true\n", `human_review: {requires_confirmation`},
		{"flat on_reject in a loop", "workflows:\n  - id: w\n    steps:\n      - loop:\n          steps: [{agent: a}]\n          on_reject: skip\n", `os.yaml:6: "on_reject" is an Agno 2.x keyword`},
		{"unknown human_review key", "workflows:\n  - id: w\n    steps:\n      - agent: a\n        human_review: {requires_confirmaton: true}\n", `did you mean "requires_confirmation"`},
		{"two kinds", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - agent: a\n        loop: {steps: [{agent: a}]}\n", "exactly one of agent, team, workflow, function"},
		{"nested unknown agent", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - parallel: {steps: [{agent: ghost}]}\n", `steps[0].parallel.steps[0]: no agent with id "ghost"`},
		{"unknown workflow", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - {workflow: ghost}\n", `steps[0]: no workflow with id "ghost"`},
		{"workflow containing itself", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - {agent: a}\n      - loop: {steps: [{workflow: w}]}\n",
			"workflows[0]: a workflow may not contain itself, directly or through other workflows: w → w"},
		{"workflows containing each other", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w1\n    steps: [{workflow: w2}]\n  - id: w2\n    steps: [{agent: a}, {workflow: w3}]\n  - id: w3\n    steps: [{workflow: w1}]\n",
			"workflows[1]: a workflow may not contain itself, directly or through other workflows: w2 → w3 → w1 → w2"},
		{"review on a code_mode tool", "agents:\n  - id: a\n    model: a:b\n    code_mode:\n      tools: [{name: calculator, human_review: {requires_confirmation: true}}]\n", "human_review works on an agent's tools only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.yaml), "os.yaml")
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant %q", err, c.want)
			}
		})
	}
}

func TestWorkflowYAML_BuildRefusesUnregisteredFunctions(t *testing.T) {
	t.Parallel()
	for _, st := range []WorkflowStep{
		{Function: "nope"},
		{Condition: &ConditionDecl{If: "check", Steps: []WorkflowStep{{Function: "f"}}}},
		{Router: &RouterDecl{Selector: "choose", Choices: []WorkflowStep{{Function: "f"}}}},
		{Loop: &LoopDecl{EndCondition: "done", Steps: []WorkflowStep{{Function: "f"}}}},
		{Condition: &ConditionDecl{If: "input +", Steps: []WorkflowStep{{Function: "f"}}}},
	} {
		w := Workflow{ID: "w", Steps: []WorkflowStep{st}}
		fns := workflow.Functions{Steps: map[string]workflow.StepFunc{"f": func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
			return workflow.FuncResult{}, nil
		}}}
		if _, err := w.BuildWith(nil, nil, nil, BuildOptions{WorkflowFunctions: fns}); err == nil {
			t.Errorf("%+v built", st)
		}
	}
}

func TestToolHumanReview_PausesTheAgentRun(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: calculator\n        human_review: {requires_confirmation: true}\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := builtinTools("agent a", cfg.Agents[0].Tools)
	if err != nil || len(tl) == 0 {
		t.Fatal(err)
	}
	for _, x := range tl {
		if !x.Definition().RequiresConfirmation {
			t.Errorf("%s does not require confirmation", x.Definition().Name)
		}
	}
	name := tl[0].Definition().Name
	a, err := agent.New(agent.Config{ID: "a", Tools: tl, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: name, Args: map[string]any{"a": 1, "b": 2}}}}, {Content: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := a.Run(context.Background(), run.TextInput("add"))
	if out.Status != run.StatusPaused {
		t.Errorf("run = %s, want PAUSED for the confirmation", out.Status)
	}
}

// TestWorkflowYAML_AWorkflowAsAStep: a workflow's step runs another
// declared workflow (declared after it: the build orders them), whose
// output is the step's.
func TestWorkflowYAML_AWorkflowAsAStep(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`agents:
  - id: writer
    model: a:b
workflows:
  - id: outer
    steps:
      - {name: nested, workflow: inner}
      - {name: shout, function: upper}
  - id: inner
    steps:
      - {name: draft, agent: writer}
`), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	writer, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("inner text")})
	if err != nil {
		t.Fatal(err)
	}
	fns := workflow.Functions{Steps: map[string]workflow.StepFunc{
		"upper": func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
			return workflow.FuncResult{Content: strings.ToUpper(run.ContentText(in.PreviousStepContent))}, nil
		},
	}}
	_, wfs, err := cfg.BuildTeamsAndWorkflows(nil, []*agent.Agent{writer}, BuildOptions{WorkflowFunctions: fns})
	if err != nil {
		t.Fatal(err)
	}
	if len(wfs) != 2 || wfs[0].ID() != "outer" || wfs[1].ID() != "inner" {
		t.Fatalf("workflows %v, want outer and inner in the file's order", wfs)
	}
	if r := wfs[0].Steps()[0].Runner; r != agent.Runner(wfs[1]) {
		t.Fatalf("outer's first step runs %v, want the inner workflow", r)
	}
	out, err := wfs[0].Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusCompleted || run.ContentText(out.Content) != "INNER TEXT" {
		t.Fatalf("run = %+v, %v; want INNER TEXT", out, err)
	}
}

// A step's max_retries and skip_on_failure (Agno's Step keys) reach the
// workflow step; on a primitive they are refused at start.
func TestWorkflowYAML_MaxRetriesAndSkipOnFailure(t *testing.T) {
	t.Parallel()
	fns := workflow.Functions{Steps: map[string]workflow.StepFunc{
		"down": func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
			return workflow.FuncResult{}, errors.New("the service is down")
		},
	}}
	cfg, err := Parse([]byte("workflows:\n  - id: w\n    steps:\n      - {name: fetch, function: down, max_retries: 2, skip_on_failure: true}\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, wfs, err := cfg.BuildTeamsAndWorkflows(nil, nil, BuildOptions{WorkflowFunctions: fns})
	if err != nil {
		t.Fatal(err)
	}
	if s := wfs[0].Steps()[0]; s.MaxRetries != 2 || !s.SkipOnFailure {
		t.Fatalf("step = %+v", s)
	}
	out, err := wfs[0].Run(context.Background(), run.TextInput("x"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %+v, %v; want COMPLETED past the skipped step", out, err)
	}
	cfg, err = Parse([]byte("workflows:\n  - id: w\n    steps:\n      - parallel: {name: fan, steps: [{function: down}]}\n        max_retries: 2\n"), "os.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		_, _, err = cfg.BuildTeamsAndWorkflows(nil, nil, BuildOptions{WorkflowFunctions: fns})
	}
	if err == nil || !strings.Contains(err.Error(), "not a Parallel") {
		t.Errorf("max_retries on a parallel: %v, want it refused", err)
	}
}

// human_review.timeout (seconds, an int) was multiplied into a
// time.Duration unchecked: 10000000000000 seconds wrapped to about 518,000
// hours (a positive duration nobody wrote). It is refused naming the key.
func TestWorkflowYAML_HumanReviewTimeoutOutOfRange(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("agents:\n  - id: writer\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - name: s\n        agent: writer\n"+
		"        human_review: {requires_confirmation: true, timeout: 10000000000000}\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writer, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("text")})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		_, _, err = cfg.BuildTeamsAndWorkflows(nil, []*agent.Agent{writer}, BuildOptions{})
	}
	if err == nil || !strings.Contains(err.Error(), "human_review.timeout") {
		t.Fatalf("%v", err)
	}
}
