package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// Step is one node of a workflow: exactly one of Runner (an agent, a team,
// another workflow or any agent.Runner), Func (a Go function), Steps, Loop,
// Parallel, Condition or Router. Composites hold Steps themselves, to any
// depth.
//
// A leaf step's input is the previous step's content (the workflow's input
// for the first step), and its output is the next step's input; Func steps
// also see every earlier output by name, the original input and the
// session state (StepInput).
type Step struct {
	// Name names the step in events, step_results and
	// StepInput.PreviousStepOutputs. Default: the runner's id for Runner
	// steps, the kind ("Loop", "Parallel", …) for composites; Func steps
	// need one.
	Name   string
	Runner agent.Runner
	Func   StepFunc

	Steps     *Steps
	Loop      *Loop
	Parallel  *Parallel
	Condition *Condition
	Router    *Router

	// HumanReview pauses the run at this step for a person (confirmation,
	// user input, output review, iteration review); nil for none.
	HumanReview *HumanReview

	// MaxRetries runs a Runner or Func step that failed (its function's
	// error or panic, a run that did not complete) again, up to this many
	// times, before its failure counts (Agno's Step.max_retries). Agno's
	// default is 3, Agentry's 0 (docs/adr/workflow-step-failures.md). A
	// retry is a new run of the step's agent or team, with a step run id
	// of its own; a cancelled run, a pause or a storage error is not
	// retried. Retries are counted over the run (a person's retry after
	// HumanReview.OnError pause runs the step once). At most
	// MaxStepRetries.
	MaxRetries int
	// SkipOnFailure: a Runner or Func step still failing after its retries
	// does not fail the run: its output, "Step NAME failed but skipped",
	// has success false and the error, is not passed on as the next step's
	// input, and the run goes on (Agno's skip_on_failure). It cannot be
	// combined with HumanReview.OnError, which decides the same thing.
	SkipOnFailure bool
}

// MaxStepRetries bounds Step.MaxRetries.
const MaxStepRetries = 100

// StepFunc is a Go function step. Its result's Content is the step's
// output; Stop ends the workflow after it (completed, early).
type StepFunc func(ctx context.Context, in *StepInput) (FuncResult, error)

// FuncResult is what a StepFunc returns.
type FuncResult struct {
	Content any
	// Stop ends the workflow run after this step; the run completes with
	// this step's content.
	Stop bool
}

// StepInput is what a step is given (Agno's StepInput).
type StepInput struct {
	// Input is the workflow run's input, as text.
	Input string
	// PreviousStepContent is the content of the step before (Input for the first).
	PreviousStepContent any
	// PreviousStepOutputs are the outputs of every step that ran before this
	// one in the run, by step name (a later one of the same name wins).
	PreviousStepOutputs map[string]run.StepOutput
	// AdditionalData is the run's dependencies (agent.WithDependencies).
	AdditionalData map[string]any
	// State is the workflow session's state, shared by every step of the
	// run (also parallel ones) and stored with the session. Its stored
	// numbers are float64, or json.Number where float64 cannot give the
	// number back (see agent.Config.SessionState).
	State *State
	// UserInput is what a person entered for this step (HumanReview
	// RequiresUserInput), nil otherwise.
	UserInput map[string]any
	// RejectionFeedback is the note of a person who rejected this step's
	// previous output (HumanReview OnReject retry).
	RejectionFeedback string
}

// Steps runs its steps in order as one named group.
type Steps struct {
	Steps []Step
}

// Loop runs its steps again and again: up to MaxIterations times (default
// 3), ending early when EndCondition (or, if nil, the CEL expression
// EndConditionExpr) is true after an iteration.
type Loop struct {
	Steps         []Step
	MaxIterations int
	EndCondition  func(LoopIteration) (bool, error)
	// EndConditionExpr is a CEL expression over current_iteration,
	// max_iterations, all_success, last_step_content and step_outputs (a
	// map of step name to content), as Agno evaluates it.
	EndConditionExpr string
}

// LoopIteration is what a Loop's end condition sees after an iteration.
type LoopIteration struct {
	// Iteration counts from 1.
	Iteration     int
	MaxIterations int
	Outputs       []run.StepOutput
	State         *State
}

// Parallel runs its steps concurrently, each with the same input; its
// output holds theirs in the order given.
type Parallel struct {
	Steps []Step
}

// Condition runs Steps when Evaluator (or, if nil, the CEL expression If)
// is true, else Else (if any).
type Condition struct {
	Evaluator func(*StepInput) (bool, error)
	// If is a CEL expression over input, previous_step_content,
	// previous_step_outputs, additional_data and session_state.
	If    string
	Steps []Step
	Else  []Step
}

// Router runs the choices Selector (or, if nil, the CEL expression
// SelectorExpr, giving a name or a list of names) picks, in order, each
// once (a name picked twice fails the step, as an unknown one does).
type Router struct {
	Selector func(*StepInput) ([]string, error)
	// SelectorExpr sees what Condition.If sees plus step_choices.
	SelectorExpr string
	Choices      []Step
}

// Agno's StepType of each kind.
const (
	typeStep      = "Step"
	typeSteps     = "Steps"
	typeLoop      = "Loop"
	typeParallel  = "Parallel"
	typeCondition = "Condition"
	typeRouter    = "Router"
)

// kind returns the step's StepType, or an error when it is not exactly one kind.
func (s *Step) kind() (string, error) {
	var kinds []string
	if s.Runner != nil || s.Func != nil {
		kinds = append(kinds, typeStep)
	}
	if s.Runner != nil && s.Func != nil {
		return "", errors.New("set Runner or Func, not both")
	}
	for _, k := range []struct {
		set  bool
		name string
	}{{s.Steps != nil, typeSteps}, {s.Loop != nil, typeLoop}, {s.Parallel != nil, typeParallel}, {s.Condition != nil, typeCondition}, {s.Router != nil, typeRouter}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch len(kinds) {
	case 0:
		return "", errors.New("the step's Runner is nil; set the agent, team or workflow that runs the step (or Func, Steps, Loop, Parallel, Condition or Router)")
	case 1:
		return kinds[0], nil
	}
	return "", fmt.Errorf("a step is one kind, this one is %v", kinds)
}

// validateFailure checks MaxRetries and SkipOnFailure on a step of kind k.
func (s *Step) validateFailure(k string) error {
	switch {
	case s.MaxRetries == 0 && !s.SkipOnFailure:
		return nil
	case k != typeStep:
		// A primitive's failure is one of its steps': set them there.
		return fmt.Errorf("MaxRetries and SkipOnFailure apply to an agent, team, workflow or function step, not a %s (set them on the steps inside)", k)
	case s.MaxRetries < 0 || s.MaxRetries > MaxStepRetries:
		return fmt.Errorf("MaxRetries %d: use 0 to %d", s.MaxRetries, MaxStepRetries)
	case s.SkipOnFailure && s.HumanReview != nil && s.HumanReview.OnError != "" && s.HumanReview.OnError != OnErrorFail:
		return fmt.Errorf("SkipOnFailure and HumanReview.OnError %s both decide what a failure does; keep one", s.HumanReview.OnError)
	}
	return nil
}

// children returns the step's nested steps (all branches).
func (s *Step) children() [][]Step {
	switch {
	case s.Steps != nil:
		return [][]Step{s.Steps.Steps}
	case s.Loop != nil:
		return [][]Step{s.Loop.Steps}
	case s.Parallel != nil:
		return [][]Step{s.Parallel.Steps}
	case s.Condition != nil:
		return [][]Step{s.Condition.Steps, s.Condition.Else}
	case s.Router != nil:
		return [][]Step{s.Router.Choices}
	}
	return nil
}

// prepare validates steps (recursively), defaults names and compiles
// expressions; it returns copies, so the caller's slices are not changed.
func prepare(steps []Step, where string, depth int) ([]Step, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: steps are nested more than %d deep", where, maxDepth)
	}
	out := make([]Step, len(steps))
	for i, s := range steps {
		at := fmt.Sprintf("%s[%d]", where, i)
		k, err := s.kind()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if s.Runner != nil {
			if err := s.Runner.Component().Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			if s.Name == "" {
				s.Name = s.Runner.Component().ID
			}
		}
		if s.Func != nil && s.Name == "" {
			return nil, fmt.Errorf("%s: a Func step needs a Name", at)
		}
		if s.Name == "" {
			s.Name = k
		}
		if err := s.HumanReview.validate(k); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", at, s.Name, err)
		}
		if err := s.validateFailure(k); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", at, s.Name, err)
		}
		switch {
		case s.Steps != nil:
			c := *s.Steps
			if c.Steps, err = prepareGroup(c.Steps, at+".Steps", depth); err != nil {
				return nil, err
			}
			s.Steps = &c
		case s.Loop != nil:
			c := *s.Loop
			if c.MaxIterations < 0 {
				return nil, fmt.Errorf("%s: Loop.MaxIterations is negative", at)
			}
			if c.MaxIterations == 0 {
				c.MaxIterations = defaultMaxIterations
			}
			if c.EndCondition == nil && c.EndConditionExpr != "" {
				if c.EndCondition, err = compileLoopEnd(c.EndConditionExpr); err != nil {
					return nil, fmt.Errorf("%s: Loop.EndConditionExpr: %w", at, err)
				}
			}
			if c.Steps, err = prepareGroup(c.Steps, at+".Loop.Steps", depth); err != nil {
				return nil, err
			}
			s.Loop = &c
		case s.Parallel != nil:
			c := *s.Parallel
			if c.Steps, err = prepareGroup(c.Steps, at+".Parallel.Steps", depth); err != nil {
				return nil, err
			}
			s.Parallel = &c
		case s.Condition != nil:
			c := *s.Condition
			if c.Evaluator == nil {
				if c.If == "" {
					return nil, fmt.Errorf("%s: a Condition needs an Evaluator or an If expression", at)
				}
				if c.Evaluator, err = compileCondition(c.If); err != nil {
					return nil, fmt.Errorf("%s: Condition.If: %w", at, err)
				}
			}
			if c.Steps, err = prepareGroup(c.Steps, at+".Condition.Steps", depth); err != nil {
				return nil, err
			}
			if len(c.Else) > 0 {
				if c.Else, err = prepare(c.Else, at+".Condition.Else", depth+1); err != nil {
					return nil, err
				}
			}
			s.Condition = &c
		case s.Router != nil:
			c := *s.Router
			if c.Choices, err = prepareGroup(c.Choices, at+".Router.Choices", depth); err != nil {
				return nil, err
			}
			if c.Selector == nil {
				if c.SelectorExpr == "" && (s.HumanReview == nil || !s.HumanReview.RequiresUserInput) {
					return nil, fmt.Errorf("%s: a Router needs a Selector, a SelectorExpr or HumanReview.RequiresUserInput (a person picks)", at)
				}
				if c.SelectorExpr != "" {
					if c.Selector, err = compileSelector(c.SelectorExpr, stepNames(c.Choices)); err != nil {
						return nil, fmt.Errorf("%s: Router.SelectorExpr: %w", at, err)
					}
				}
			}
			s.Router = &c
		}
		out[i] = s
	}
	return out, nil
}

func prepareGroup(steps []Step, where string, depth int) ([]Step, error) {
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s is empty", where)
	}
	return prepare(steps, where, depth+1)
}

func stepNames(steps []Step) []string {
	names := make([]string, len(steps))
	for i := range steps {
		names[i] = steps[i].Name
	}
	return names
}

const (
	defaultMaxIterations = 3
	// maxDepth bounds nesting, so a config cannot build a tree the
	// recursive executor would take too deep.
	maxDepth = 32
)

// Functions are Go functions a workflow declared in a config file names:
// `function:` steps, a condition's `if:`, a router's `selector:` and a
// loop's `end_condition:` (a bare identifier names a function; anything
// else is a CEL expression).
type Functions struct {
	Steps         map[string]StepFunc
	Conditions    map[string]func(*StepInput) (bool, error)
	Selectors     map[string]func(*StepInput) ([]string, error)
	EndConditions map[string]func(LoopIteration) (bool, error)
}

// Runners returns the agents, teams and workflows the workflow's steps run,
// at any depth, in step order (a runner used twice is listed twice).
func (w *Workflow) Runners() []agent.Runner {
	var out []agent.Runner
	var walk func([]Step)
	walk = func(steps []Step) {
		for i := range steps {
			if steps[i].Runner != nil {
				out = append(out, steps[i].Runner)
			}
			for _, c := range steps[i].children() {
				walk(c)
			}
		}
	}
	walk(w.cfg.Steps)
	return out
}

// Kind returns the step's Agno StepType: Step, Steps, Loop, Parallel,
// Condition or Router.
func (s *Step) Kind() string {
	k, _ := s.kind()
	return k
}

// Children returns the steps a primitive holds (a Condition's Else after its
// Steps), nil for a Step.
func (s *Step) Children() []Step {
	var out []Step
	for _, c := range s.children() {
		out = append(out, c...)
	}
	return out
}
