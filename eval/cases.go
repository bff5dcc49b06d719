package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// Suite is a YAML file of eval cases (`agentry eval FILE`):
//
//	judge_model: openai:gpt-4o-mini   # the default judge of accuracy and agent_as_judge cases
//	cases:
//	  - name: multiplies
//	    type: accuracy                # accuracy | performance | reliability | agent_as_judge
//	    agent: calc                   # or team: ID, or workflow: ID
//	    input: what is 6 times 7?
//	    expected_output: "42"
//	    iterations: 3
//	    min_score: 8
//	  - name: uses the calculator
//	    type: reliability
//	    agent: calc
//	    input: what is 6 times 7?
//	    expected_tool_calls: [multiply]   # a reliability case needs this, forbidden_tool_calls or expected_tool_call_arguments
//	    forbidden_tool_calls: [shell]
//	    expected_tool_call_arguments: {multiply: {a: 6, b: 7}}
//	  - name: is fast
//	    type: performance
//	    agent: calc
//	    input: hi
//	    warmups: 1
//	    iterations: 10
//	    max_p95_run_time: 2s
//	  - name: is polite
//	    type: agent_as_judge
//	    agent: calc
//	    input: hi
//	    criteria: The answer is polite.
//	    scoring: binary               # or numeric, with threshold (default 7)
type Suite struct {
	JudgeModel string `yaml:"judge_model"`
	Cases      []Case `yaml:"cases"`
}

// Case is one eval of a Suite; which fields apply depends on Type (a
// field set that its type does not use is an error).
type Case struct {
	Name     string `yaml:"name"`
	Type     Type   `yaml:"type"`
	Agent    string `yaml:"agent"`
	Team     string `yaml:"team"`
	Workflow string `yaml:"workflow"`
	Input    string `yaml:"input"`
	// Accuracy.
	ExpectedOutput       string  `yaml:"expected_output"`
	MinScore             float64 `yaml:"min_score"`
	AdditionalGuidelines string  `yaml:"additional_guidelines"`
	AdditionalContext    string  `yaml:"additional_context"`
	// Accuracy, agent-as-judge and performance.
	Iterations int    `yaml:"iterations"`
	JudgeModel string `yaml:"judge_model"`
	// Agent-as-judge.
	Criteria  string `yaml:"criteria"`
	Scoring   string `yaml:"scoring"`
	Threshold int    `yaml:"threshold"`
	// Performance.
	// Warmups absent is Performance's default (10); 0 is none.
	Warmups         *int          `yaml:"warmups"`
	MaxAvgRunTime   time.Duration `yaml:"max_avg_run_time"`
	MaxP95RunTime   time.Duration `yaml:"max_p95_run_time"`
	MaxAvgMemoryMiB float64       `yaml:"max_avg_memory_mib"`
	// Reliability.
	ExpectedToolCalls         []string                 `yaml:"expected_tool_calls"`
	ForbiddenToolCalls        []string                 `yaml:"forbidden_tool_calls"`
	AllowAdditionalToolCalls  bool                     `yaml:"allow_additional_tool_calls"`
	ExpectedToolCallArguments map[string]ArgumentSpecs `yaml:"expected_tool_call_arguments"`
}

// ParseSuite reads a suite strictly: unknown keys, a second YAML document,
// a case without a name, type or target, a setting its type does not use,
// or a judged case without a judge are errors.
func ParseSuite(data []byte) (*Suite, error) {
	var s Suite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: eval cases: %v", ErrInvalid, err)
	}
	// The cases of a second document would never run.
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		return nil, fmt.Errorf("%w: eval cases: the file holds more than one YAML document (---); put every case in one cases list", ErrInvalid)
	}
	if len(s.Cases) == 0 {
		return nil, fmt.Errorf("%w: eval cases: the file has no cases", ErrInvalid)
	}
	var errs []error
	seen := map[string]bool{}
	for i, c := range s.Cases {
		where := fmt.Sprintf("case %d", i+1)
		if c.Name != "" {
			where += " (" + c.Name + ")"
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%w: eval cases: %s: %s", ErrInvalid, where, fmt.Sprintf(format, args...)))
		}
		if c.Name == "" {
			bad("name is required")
		} else if seen[c.Name] {
			bad("another case has the same name")
		}
		seen[c.Name] = true
		if !slices.Contains([]Type{TypeAccuracy, TypePerformance, TypeReliability, TypeAgentAsJudge}, c.Type) {
			bad("type %q is not accuracy, performance, reliability or agent_as_judge", c.Type)
		}
		targets := 0
		for _, t := range []string{c.Agent, c.Team, c.Workflow} {
			if t != "" {
				targets++
			}
		}
		if targets != 1 {
			bad("name exactly one of agent, team or workflow")
		}
		if c.Input == "" {
			bad("input is required")
		}
		if c.Type == TypeReliability && c.Workflow != "" {
			bad("%v", strings.TrimPrefix(errWorkflowReliability.Error(), ErrInvalid.Error()+": "))
		}
		if (c.Type == TypeAccuracy || c.Type == TypeAgentAsJudge) && c.JudgeModel == "" && s.JudgeModel == "" {
			bad("a %s case needs judge_model (on the case or the file)", c.Type)
		}
		if c.Type == TypeReliability && c.ExpectedToolCalls == nil && c.ForbiddenToolCalls == nil && c.ExpectedToolCallArguments == nil {
			// Such a case passes whatever the target calls.
			bad("a reliability case needs expected_tool_calls, forbidden_tool_calls or expected_tool_call_arguments")
		}
		if c.Type == TypeAccuracy && c.ExpectedOutput == "" {
			bad("expected_output is required")
		}
		if c.Type == TypeAgentAsJudge && c.Criteria == "" {
			bad("criteria is required")
		}
		if c.Iterations < 0 || c.Warmups != nil && *c.Warmups < 0 {
			bad("iterations and warmups cannot be negative")
		}
		if _, _, err := judgeSettings(c.Scoring, c.Threshold); err != nil {
			bad("%v", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		}
		if !validMinScore(c.MinScore) {
			bad("min_score %v is outside 1–10", c.MinScore)
		}
		if validLimits(c.MaxAvgRunTime, c.MaxP95RunTime, c.MaxAvgMemoryMiB) != nil {
			bad("max_avg_run_time, max_p95_run_time and max_avg_memory_mib cannot be negative or NaN")
		}
		if err := storableArguments(c.ExpectedToolCallArguments); err != nil {
			bad("%v", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		}
		if key := c.inapplicable(); key != "" {
			bad("%s does not apply to a %s case", key, c.Type)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &s, nil
}

// caseTypeKeys are the settings each case type uses.
var caseTypeKeys = map[Type][]string{
	TypeAccuracy:     {"expected_output", "min_score", "additional_guidelines", "additional_context", "iterations", "judge_model"},
	TypeAgentAsJudge: {"criteria", "scoring", "threshold", "additional_guidelines", "iterations", "judge_model"},
	TypePerformance:  {"warmups", "iterations", "max_avg_run_time", "max_p95_run_time", "max_avg_memory_mib"},
	TypeReliability:  {"expected_tool_calls", "forbidden_tool_calls", "allow_additional_tool_calls", "expected_tool_call_arguments"},
}

// inapplicable names the first setting of c that its type does not use
// ("" when none, or when the type is unknown): as POST /eval-runs refuses
// one, a suite does, since an ignored limit or threshold makes a case pass
// on a check it never made (min_score on an agent_as_judge case meant as
// its threshold).
func (c *Case) inapplicable() string {
	uses, ok := caseTypeKeys[c.Type]
	if !ok {
		return ""
	}
	set := []struct {
		key string
		on  bool
	}{
		{"expected_output", c.ExpectedOutput != ""},
		{"min_score", c.MinScore != 0},
		{"additional_guidelines", c.AdditionalGuidelines != ""},
		{"additional_context", c.AdditionalContext != ""},
		{"iterations", c.Iterations != 0},
		{"judge_model", c.JudgeModel != ""},
		{"criteria", c.Criteria != ""},
		{"scoring", c.Scoring != ""},
		{"threshold", c.Threshold != 0},
		{"warmups", c.Warmups != nil},
		{"max_avg_run_time", c.MaxAvgRunTime != 0},
		{"max_p95_run_time", c.MaxP95RunTime != 0},
		{"max_avg_memory_mib", c.MaxAvgMemoryMiB != 0},
		{"expected_tool_calls", c.ExpectedToolCalls != nil},
		{"forbidden_tool_calls", c.ForbiddenToolCalls != nil},
		{"allow_additional_tool_calls", c.AllowAdditionalToolCalls},
		{"expected_tool_call_arguments", c.ExpectedToolCallArguments != nil},
	}
	for _, x := range set {
		if x.on && !slices.Contains(uses, x.key) {
			return x.key
		}
	}
	return ""
}

// Resolver finds what a suite names: components by kind ("agent", "team",
// "workflow") and id, and judge models by spec.
type Resolver struct {
	Component func(kind, id string) (agent.Runner, error)
	Model     func(spec string) (model.Model, error)
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name    string `json:"name"`
	Type    Type   `json:"type"`
	RunID   string `json:"run_id"`
	Passed  bool   `json:"passed"`
	Summary string `json:"summary"`
	// Error is set when the case could not run (it then did not pass).
	Error string `json:"error,omitempty"`
	// Result is the eval_data the case produced.
	Result any `json:"result,omitempty"`
}

// Run runs every case in order, storing each result in d when it is set
// (as userID). A case that cannot run is a failed result, not an error.
func (s *Suite) Run(ctx context.Context, r Resolver, d *db.DB, userID string) []CaseResult {
	out := make([]CaseResult, 0, len(s.Cases))
	for _, c := range s.Cases {
		res := CaseResult{Name: c.Name, Type: c.Type}
		if err := s.runCase(ctx, c, r, Record{Name: c.Name, DB: d, UserID: userID}, &res); err != nil {
			res.Passed, res.Error = false, err.Error()
		}
		out = append(out, res)
	}
	return out
}

func (s *Suite) runCase(ctx context.Context, c Case, r Resolver, rec Record, res *CaseResult) error {
	kind, id := "agent", c.Agent
	if c.Team != "" {
		kind, id = "team", c.Team
	} else if c.Workflow != "" {
		kind, id = "workflow", c.Workflow
	}
	target, err := r.Component(kind, id)
	if err != nil {
		return err
	}
	var judge model.Model
	if c.Type == TypeAccuracy || c.Type == TypeAgentAsJudge {
		spec := cmpOr(c.JudgeModel, s.JudgeModel)
		if judge, err = r.Model(spec); err != nil {
			return fmt.Errorf("judge_model %s: %w", spec, err)
		}
	}
	// Given, not generated: the eval keeps it, and the case names its row.
	rec.RunID = uuid.NewString()
	res.RunID = rec.RunID
	switch c.Type {
	case TypeAccuracy:
		a := &Accuracy{Record: rec, Target: target, Judge: judge, Input: c.Input, ExpectedOutput: c.ExpectedOutput, Iterations: c.Iterations,
			AdditionalGuidelines: c.AdditionalGuidelines, AdditionalContext: c.AdditionalContext, MinScore: c.MinScore}
		out, err := a.Run(ctx)
		if err != nil {
			return err
		}
		res.Passed, res.Result = out.Passed, out
		res.Summary = fmt.Sprintf("avg score %.1f (min %.0f, max %.0f) over %d", out.AvgScore, out.MinScore, out.MaxScore, len(out.Results))
		res.Summary += failures(out.Errors)
	case TypeAgentAsJudge:
		j := &AgentAsJudge{Record: rec, Target: target, Judge: judge, Input: c.Input, Criteria: c.Criteria, Scoring: c.Scoring,
			Threshold: c.Threshold, Iterations: c.Iterations, AdditionalGuidelines: c.AdditionalGuidelines}
		out, err := j.Run(ctx)
		if err != nil {
			return err
		}
		res.Passed, res.Result = out.Passed, out
		res.Summary = fmt.Sprintf("pass rate %.0f%%", out.PassRate)
		if len(out.Results) > 0 {
			res.Summary += ": " + oneLine(out.Results[len(out.Results)-1].Reason)
		}
		res.Summary += failures(out.Errors)
	case TypePerformance:
		warmups := 0 // the default
		if c.Warmups != nil {
			if warmups = *c.Warmups; warmups == 0 {
				warmups = NoWarmups
			}
		}
		p := &Performance{Record: rec, Target: target, Input: c.Input, Warmups: warmups, Iterations: c.Iterations,
			MaxAvgRunTime: c.MaxAvgRunTime, MaxP95RunTime: c.MaxP95RunTime, MaxAvgMemoryMiB: c.MaxAvgMemoryMiB}
		out, err := p.Run(ctx)
		if err != nil {
			return err
		}
		res.Passed, res.Result = out.Passed, out
		res.Summary = fmt.Sprintf("avg %s, p95 %s, %.2f MiB/run over %d", seconds(out.AvgRunTime), seconds(out.P95RunTime), out.AvgMemoryUsage, len(out.RunTimes))
	case TypeReliability:
		rl := &Reliability{Record: rec, Target: target, Input: c.Input, ExpectedToolCalls: c.ExpectedToolCalls,
			ForbiddenToolCalls: c.ForbiddenToolCalls, AllowAdditionalToolCalls: c.AllowAdditionalToolCalls,
			ExpectedToolCallArguments: c.ExpectedToolCallArguments}
		out, err := rl.Run(ctx)
		if err != nil {
			return err
		}
		res.Passed, res.Result = out.Passed, out
		var parts []string
		if len(out.FailedToolCalls) > 0 {
			parts = append(parts, "unexpected: "+strings.Join(out.FailedToolCalls, ", "))
		}
		if len(out.MissingToolCalls) > 0 {
			parts = append(parts, "missing: "+strings.Join(out.MissingToolCalls, ", "))
		}
		if len(out.FailedArgumentChecks) > 0 {
			parts = append(parts, "wrong arguments: "+strings.Join(out.FailedArgumentChecks, ", "))
		}
		if len(parts) == 0 {
			parts = append(parts, "called: "+strings.Join(out.PassedToolCalls, ", "))
		}
		res.Summary = strings.Join(parts, "; ")
	}
	return nil
}

// failures summarizes the iterations an eval could not run or judge.
func failures(errs []error) string {
	if len(errs) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d failed (%s)", len(errs), oneLine(errs[0].Error()))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
