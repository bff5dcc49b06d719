package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// WorkflowStep is one step of a workflow (issue 11's shape): exactly one of
// {name, agent: ID}, {name, team: ID}, {name, workflow: ID} (another
// workflow, run as one step, as Agno's Step(workflow=…); a workflow may not
// contain itself, directly or through others), {name, function: NAME} (a Go
// function registered in BuildOptions.WorkflowFunctions), or one of the
// primitives steps, loop, parallel, condition, router, each a mapping with
// its own name and steps. human_review applies to the step (on a
// primitive it may also sit inside the primitive's mapping).
type WorkflowStep struct {
	Name        string           `yaml:"name"`
	Agent       string           `yaml:"agent"`
	Team        string           `yaml:"team"`
	Workflow    string           `yaml:"workflow"`
	Function    string           `yaml:"function"`
	Steps       *StepsDecl       `yaml:"steps"`
	Loop        *LoopDecl        `yaml:"loop"`
	Parallel    *StepsDecl       `yaml:"parallel"`
	Condition   *ConditionDecl   `yaml:"condition"`
	Router      *RouterDecl      `yaml:"router"`
	HumanReview *HumanReviewDecl `yaml:"human_review"`
	// MaxRetries and SkipOnFailure are Agno's Step max_retries and
	// skip_on_failure, for agent, team, workflow and function steps
	// (workflow.Step); unset, a failing step fails the run at once.
	MaxRetries    int  `yaml:"max_retries"`
	SkipOnFailure bool `yaml:"skip_on_failure"`
}

// StepsDecl is a steps: or parallel: group.
type StepsDecl struct {
	Name        string           `yaml:"name"`
	Steps       []WorkflowStep   `yaml:"steps"`
	HumanReview *HumanReviewDecl `yaml:"human_review"`
}

// LoopDecl is a loop: its steps run up to max_iterations times (default 3)
// until end_condition (a CEL expression, or the name of a registered Go
// end condition) is true.
type LoopDecl struct {
	Name          string           `yaml:"name"`
	Steps         []WorkflowStep   `yaml:"steps"`
	MaxIterations int              `yaml:"max_iterations"`
	EndCondition  string           `yaml:"end_condition"`
	HumanReview   *HumanReviewDecl `yaml:"human_review"`
}

// ConditionDecl runs steps when if (a CEL expression, or the name of a
// registered Go evaluator) is true, else else.
type ConditionDecl struct {
	Name        string           `yaml:"name"`
	If          string           `yaml:"if"`
	Steps       []WorkflowStep   `yaml:"steps"`
	Else        []WorkflowStep   `yaml:"else"`
	HumanReview *HumanReviewDecl `yaml:"human_review"`
}

// RouterDecl runs the choices selector (a CEL expression giving a choice's
// name or a list of names, or the name of a registered Go selector) picks.
type RouterDecl struct {
	Name        string           `yaml:"name"`
	Selector    string           `yaml:"selector"`
	Choices     []WorkflowStep   `yaml:"choices"`
	HumanReview *HumanReviewDecl `yaml:"human_review"`
}

// HumanReviewDecl is workflow.HumanReview in a config file (Agno 3.0's
// HumanReview keys); timeout is in seconds, as in Agno.
type HumanReviewDecl struct {
	RequiresConfirmation    bool                 `yaml:"requires_confirmation"`
	ConfirmationMessage     string               `yaml:"confirmation_message"`
	RequiresUserInput       bool                 `yaml:"requires_user_input"`
	UserInputMessage        string               `yaml:"user_input_message"`
	UserInputSchema         []UserInputFieldDecl `yaml:"user_input_schema"`
	AllowMultipleSelections bool                 `yaml:"allow_multiple_selections"`
	RequiresOutputReview    bool                 `yaml:"requires_output_review"`
	OutputReviewMessage     string               `yaml:"output_review_message"`
	RequiresIterationReview bool                 `yaml:"requires_iteration_review"`
	IterationReviewMessage  string               `yaml:"iteration_review_message"`
	OnReject                string               `yaml:"on_reject"`
	OnError                 string               `yaml:"on_error"`
	MaxRetries              int                  `yaml:"max_retries"`
	Timeout                 int                  `yaml:"timeout"`
	OnTimeout               string               `yaml:"on_timeout"`
}

// UserInputFieldDecl is one field of a user_input_schema.
type UserInputFieldDecl struct {
	Name          string `yaml:"name"`
	FieldType     string `yaml:"field_type"`
	Description   string `yaml:"description"`
	Required      *bool  `yaml:"required"`
	AllowedValues []any  `yaml:"allowed_values"`
}

func (h *HumanReviewDecl) build() *workflow.HumanReview {
	if h == nil {
		return nil
	}
	out := &workflow.HumanReview{RequiresConfirmation: h.RequiresConfirmation, ConfirmationMessage: h.ConfirmationMessage,
		RequiresUserInput: h.RequiresUserInput, UserInputMessage: h.UserInputMessage, AllowMultipleSelections: h.AllowMultipleSelections,
		RequiresOutputReview: h.RequiresOutputReview, OutputReviewMessage: h.OutputReviewMessage,
		RequiresIterationReview: h.RequiresIterationReview, IterationReviewMessage: h.IterationReviewMessage,
		OnReject: h.OnReject, OnError: h.OnError, MaxRetries: h.MaxRetries, Timeout: time.Duration(h.Timeout) * time.Second, OnTimeout: h.OnTimeout}
	for _, f := range h.UserInputSchema {
		ft := f.FieldType
		if ft == "" {
			ft = "str"
		}
		out.UserInputSchema = append(out.UserInputSchema, run.UserInputField{Name: f.Name, FieldType: ft, Description: f.Description,
			Required: f.Required == nil || *f.Required, AllowedValues: f.AllowedValues})
	}
	return out
}

// identifier is how a name of a registered Go function is told from a CEL
// expression (as Agno tells a function name from CEL).
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// stepBuilder builds config steps into workflow steps.
type stepBuilder struct {
	agents    map[string]*agent.Agent
	teams     map[string]*team.Team
	workflows map[string]*workflow.Workflow
	fns       workflow.Functions
}

func (b *stepBuilder) steps(where string, decl []WorkflowStep) ([]workflow.Step, error) {
	out := make([]workflow.Step, 0, len(decl))
	for i, st := range decl {
		s, err := b.step(fmt.Sprintf("%s[%d]", where, i), st)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// review picks the step's human_review, from the step or from inside its
// primitive's mapping (not both).
func review(where string, outer, inner *HumanReviewDecl) (*workflow.HumanReview, error) {
	if outer != nil && inner != nil {
		return nil, fmt.Errorf("config: %s: human_review is set twice (on the step and inside it); keep one", where)
	}
	for _, h := range []*HumanReviewDecl{outer, inner} {
		// Seconds beyond time.Duration's range would wrap to any duration.
		if h != nil && h.Timeout > int(math.MaxInt64/time.Second) {
			return nil, fmt.Errorf("config: %s: human_review.timeout %d: use at most %d seconds", where, h.Timeout, int64(math.MaxInt64/time.Second))
		}
	}
	if inner != nil {
		return inner.build(), nil
	}
	return outer.build(), nil
}

func (b *stepBuilder) step(where string, st WorkflowStep) (workflow.Step, error) {
	if n := st.kinds(); n != 1 {
		return workflow.Step{}, fmt.Errorf("config: %s: a step is exactly one of agent, team, workflow, function, steps, loop, parallel, condition or router (this one sets %d)", where, n)
	}
	s := workflow.Step{Name: st.Name, MaxRetries: st.MaxRetries, SkipOnFailure: st.SkipOnFailure}
	var err error
	var inner *HumanReviewDecl
	switch {
	case st.Agent != "":
		a := b.agents[st.Agent]
		if a == nil {
			return s, fmt.Errorf("config: %s: no agent with id %q", where, st.Agent)
		}
		s.Runner = a
	case st.Team != "":
		tm := b.teams[st.Team]
		if tm == nil {
			return s, fmt.Errorf("config: %s: no team with id %q", where, st.Team)
		}
		s.Runner = tm
	case st.Workflow != "":
		w := b.workflows[st.Workflow]
		if w == nil {
			return s, fmt.Errorf("config: %s: no workflow with id %q", where, st.Workflow)
		}
		s.Runner = w
	case st.Function != "":
		f := b.fns.Steps[st.Function]
		if f == nil {
			return s, fmt.Errorf("config: %s: no function step %q is registered; register it from Go in BuildOptions.WorkflowFunctions.Steps", where, st.Function)
		}
		s.Func = f
		if s.Name == "" {
			s.Name = st.Function
		}
	case st.Steps != nil:
		s.Name, inner = named(s.Name, st.Steps.Name), st.Steps.HumanReview
		var steps []workflow.Step
		if steps, err = b.steps(where+".steps.steps", st.Steps.Steps); err == nil {
			s.Steps = &workflow.Steps{Steps: steps}
		}
	case st.Parallel != nil:
		s.Name, inner = named(s.Name, st.Parallel.Name), st.Parallel.HumanReview
		var steps []workflow.Step
		if steps, err = b.steps(where+".parallel.steps", st.Parallel.Steps); err == nil {
			s.Parallel = &workflow.Parallel{Steps: steps}
		}
	case st.Loop != nil:
		l := st.Loop
		s.Name, inner = named(s.Name, l.Name), l.HumanReview
		loop := &workflow.Loop{MaxIterations: l.MaxIterations}
		if identifier.MatchString(l.EndCondition) && l.EndCondition != "true" && l.EndCondition != "false" {
			if loop.EndCondition = b.fns.EndConditions[l.EndCondition]; loop.EndCondition == nil {
				return s, fmt.Errorf("config: %s.loop.end_condition: no end condition %q is registered (BuildOptions.WorkflowFunctions.EndConditions); or write a CEL expression", where, l.EndCondition)
			}
		} else {
			loop.EndConditionExpr = l.EndCondition
		}
		if loop.Steps, err = b.steps(where+".loop.steps", l.Steps); err == nil {
			s.Loop = loop
		}
	case st.Condition != nil:
		c := st.Condition
		s.Name, inner = named(s.Name, c.Name), c.HumanReview
		cond := &workflow.Condition{}
		if identifier.MatchString(c.If) && c.If != "true" && c.If != "false" {
			if cond.Evaluator = b.fns.Conditions[c.If]; cond.Evaluator == nil {
				return s, fmt.Errorf("config: %s.condition.if: no evaluator %q is registered (BuildOptions.WorkflowFunctions.Conditions); or write a CEL expression", where, c.If)
			}
		} else {
			cond.If = c.If
		}
		if cond.Steps, err = b.steps(where+".condition.steps", c.Steps); err == nil && len(c.Else) > 0 {
			cond.Else, err = b.steps(where+".condition.else", c.Else)
		}
		s.Condition = cond
	case st.Router != nil:
		r := st.Router
		s.Name, inner = named(s.Name, r.Name), r.HumanReview
		router := &workflow.Router{}
		if identifier.MatchString(r.Selector) {
			if router.Selector = b.fns.Selectors[r.Selector]; router.Selector == nil {
				return s, fmt.Errorf("config: %s.router.selector: no selector %q is registered (BuildOptions.WorkflowFunctions.Selectors); or write a CEL expression", where, r.Selector)
			}
		} else {
			router.SelectorExpr = r.Selector
		}
		if router.Choices, err = b.steps(where+".router.choices", r.Choices); err == nil {
			s.Router = router
		}
	}
	if err != nil {
		return s, err
	}
	if s.HumanReview, err = review(where, st.HumanReview, inner); err != nil {
		return s, err
	}
	return s, nil
}

func named(outer, inner string) string {
	if inner != "" {
		return inner
	}
	return outer
}

func (st WorkflowStep) kinds() int {
	n := 0
	for _, set := range []bool{st.Agent != "", st.Team != "", st.Workflow != "", st.Function != "", st.Steps != nil, st.Loop != nil,
		st.Parallel != nil, st.Condition != nil, st.Router != nil} {
		if set {
			n++
		}
	}
	return n
}

// BuildWith is Build with server-wide options: the media storage, and
// opts.WorkflowFunctions, the Go functions `function:`, `if:`, `selector:`
// and `end_condition:` name.
func (w Workflow) BuildWith(d *db.DB, agents map[string]*agent.Agent, teams map[string]*team.Team, opts BuildOptions) (*workflow.Workflow, error) {
	return w.BuildNested(d, agents, teams, nil, opts)
}

// BuildNested is BuildWith for a workflow whose `workflow:` steps name the
// built workflows of workflows (a workflow naming itself is ErrWorkflowCycle).
func (w Workflow) BuildNested(d *db.DB, agents map[string]*agent.Agent, teams map[string]*team.Team, workflows map[string]*workflow.Workflow,
	opts BuildOptions) (*workflow.Workflow, error) {
	where := "workflow " + w.ID
	if path := w.cycle(map[string]Workflow{w.ID: w}); path != nil {
		return nil, fmt.Errorf("%w: %s", ErrWorkflowCycle, strings.Join(path, " → "))
	}
	ms, err := opts.mediaFor(where, w.MediaStorage)
	if err != nil {
		return nil, err
	}
	b := &stepBuilder{agents: agents, teams: teams, workflows: workflows, fns: opts.WorkflowFunctions}
	steps, err := b.steps(where+": steps", w.Steps)
	if err != nil {
		return nil, err
	}
	wf, err := workflow.New(workflow.Config{ID: w.ID, Name: w.Name, Description: w.Description, DB: d, Steps: steps,
		OffloadToolResults: w.OffloadToolResults.On(), MediaStorage: ms})
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", where, err)
	}
	return wf, nil
}

// checkWorkflowSteps reports steps that name no known agent, team or
// workflow, or are not exactly one kind (the rest is checked when the
// workflow is built).
func checkWorkflowSteps(bad func(string, ...any), where string, steps []WorkflowStep, agents, teams, workflows map[string]bool) {
	for j, st := range steps {
		at := fmt.Sprintf("%s[%d]", where, j)
		switch {
		case st.kinds() != 1:
			bad("%s: set exactly one of agent, team, workflow, function, steps, loop, parallel, condition or router", at)
		case st.Agent != "" && !agents[st.Agent]:
			bad("%s: no agent with id %q", at, st.Agent)
		case st.Team != "" && !teams[st.Team]:
			bad("%s: no team with id %q", at, st.Team)
		case st.Workflow != "" && !workflows[st.Workflow]:
			bad("%s: no workflow with id %q", at, st.Workflow)
		case st.Steps != nil:
			checkWorkflowSteps(bad, at+".steps.steps", st.Steps.Steps, agents, teams, workflows)
		case st.Parallel != nil:
			checkWorkflowSteps(bad, at+".parallel.steps", st.Parallel.Steps, agents, teams, workflows)
		case st.Loop != nil:
			checkWorkflowSteps(bad, at+".loop.steps", st.Loop.Steps, agents, teams, workflows)
		case st.Condition != nil:
			checkWorkflowSteps(bad, at+".condition.steps", st.Condition.Steps, agents, teams, workflows)
			checkWorkflowSteps(bad, at+".condition.else", st.Condition.Else, agents, teams, workflows)
		case st.Router != nil:
			checkWorkflowSteps(bad, at+".router.choices", st.Router.Choices, agents, teams, workflows)
		}
	}
}

// ErrWorkflowCycle: a workflow's steps run the workflow itself, directly or
// through other workflows.
var ErrWorkflowCycle = errors.New("config: a workflow contains itself")

// WorkflowRefs lists the ids of the workflows steps run as steps, at any
// depth, in order.
func WorkflowRefs(steps []WorkflowStep) []string {
	var out []string
	walkSteps(steps, func(st WorkflowStep) {
		if st.Workflow != "" {
			out = append(out, st.Workflow)
		}
	})
	return out
}

// walkSteps calls f on every step, depth first, in order.
func walkSteps(steps []WorkflowStep, f func(WorkflowStep)) {
	for _, st := range steps {
		f(st)
		if st.Steps != nil {
			walkSteps(st.Steps.Steps, f)
		}
		if st.Parallel != nil {
			walkSteps(st.Parallel.Steps, f)
		}
		if st.Loop != nil {
			walkSteps(st.Loop.Steps, f)
		}
		if st.Condition != nil {
			walkSteps(st.Condition.Steps, f)
			walkSteps(st.Condition.Else, f)
		}
		if st.Router != nil {
			walkSteps(st.Router.Choices, f)
		}
	}
}

// cycle returns the path of a chain of workflow steps, among decls (by id),
// leading from w back to a workflow already on it; nil when there is none.
func (w Workflow) cycle(decls map[string]Workflow) []string {
	var visit func(id string, path []string) []string
	visit = func(id string, path []string) []string {
		if slices.Contains(path, id) {
			return append(path, id)
		}
		d, ok := decls[id]
		if !ok {
			return nil
		}
		path = append(path, id)
		for _, ref := range WorkflowRefs(d.Steps) {
			if p := visit(ref, slices.Clip(path)); p != nil {
				return p
			}
		}
		return nil
	}
	return visit(w.ID, nil)
}

// workflowsInBuildOrder orders the workflow declarations so that a
// workflow comes after the workflows its steps run (Validate refused
// cycles; a workflow in one is left to fail its build).
func (c Config) workflowsInBuildOrder() []Workflow {
	byID := map[string]Workflow{}
	for _, w := range c.Workflows {
		byID[w.ID] = w
	}
	var out []Workflow
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(w Workflow)
	visit = func(w Workflow) {
		if state[w.ID] != 0 {
			return
		}
		state[w.ID] = 1
		for _, ref := range WorkflowRefs(w.Steps) {
			if d, ok := byID[ref]; ok {
				visit(d)
			}
		}
		state[w.ID] = 2
		out = append(out, w)
	}
	for _, w := range c.Workflows {
		visit(w)
	}
	return out
}
