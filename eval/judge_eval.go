package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// Scoring strategies of an agent-as-judge eval.
const (
	ScoringBinary  = "binary"
	ScoringNumeric = "numeric"
)

// AgentAsJudge has Judge decide whether outputs meet Criteria: either each of
// Outputs (already produced) or Target's answers to Input, Iterations times
// (one of the two: both, or Iterations with Outputs, is ErrInvalid).
// Binary scoring (the default) asks pass/fail; numeric asks a 1–10 score
// that passes at Threshold (default 7). The eval passes when every
// evaluation passes and none failed (see Outcome.Errors).
type AgentAsJudge struct {
	Record
	Target     agent.Runner
	Judge      model.Model
	Input      string
	Outputs    []string
	Criteria   string
	Scoring    string
	Threshold  int
	Iterations int
	// AdditionalGuidelines are given to the judge.
	AdditionalGuidelines string
}

// AgentAsJudgeEvaluation is one judged output (Agno's field names).
type AgentAsJudgeEvaluation struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	Criteria string `json:"criteria"`
	Score    *int   `json:"score"`
	Reason   string `json:"reason"`
	Passed   bool   `json:"passed"`
}

// AgentAsJudgeResult is eval_data of an agent-as-judge eval.
type AgentAsJudgeResult struct {
	RunID       string                   `json:"run_id"`
	Results     []AgentAsJudgeEvaluation `json:"results"`
	AvgScore    *float64                 `json:"avg_score"`
	MinScore    *float64                 `json:"min_score"`
	MaxScore    *float64                 `json:"max_score"`
	StdDevScore *float64                 `json:"std_dev_score"`
	PassRate    float64                  `json:"pass_rate"`
	Outcome     `json:"-"`
}

// judge asks the judge about one output.
func (j *AgentAsJudge) judge(ctx context.Context, output, scoring string, threshold int, system string, schema json.RawMessage) (AgentAsJudgeEvaluation, error) {
	prompt := "Criteria:\n" + j.Criteria + "\n\n" + fence("input", j.Input) + "\n\n" + fence("output", output)
	if j.AdditionalGuidelines != "" {
		prompt += "\n\nAdditional guidelines:\n" + j.AdditionalGuidelines
	}
	kind := binaryVerdict
	if scoring == ScoringNumeric {
		kind = numericVerdict
	}
	v, err := ask(ctx, j.Judge, kind, system, prompt, schema)
	if err != nil {
		return AgentAsJudgeEvaluation{}, err
	}
	ev := AgentAsJudgeEvaluation{Input: j.Input, Output: output, Criteria: j.Criteria, Reason: v.Reason, Passed: v.Passed}
	if kind == numericVerdict {
		score := v.Score
		ev.Score, ev.Passed = &score, score >= threshold
	}
	return ev, nil
}

// Run runs the eval and stores its row when DB is set.
func (j *AgentAsJudge) Run(ctx context.Context) (*AgentAsJudgeResult, error) {
	scoring, threshold, serr := judgeSettings(j.Scoring, j.Threshold)
	switch {
	case j.Judge == nil:
		return nil, fmt.Errorf("%w: agent-as-judge eval needs a judge model", ErrInvalid)
	case j.Criteria == "":
		return nil, fmt.Errorf("%w: agent-as-judge eval needs criteria", ErrInvalid)
	case j.Target == nil && len(j.Outputs) == 0:
		return nil, fmt.Errorf("%w: agent-as-judge eval needs a target or outputs", ErrInvalid)
	case j.Target != nil && j.Input == "":
		return nil, fmt.Errorf("%w: agent-as-judge eval of a target needs an input", ErrInvalid)
	case j.Target != nil && len(j.Outputs) > 0:
		// The target's answers are judged: the outputs would not be.
		return nil, fmt.Errorf("%w: agent-as-judge eval takes a target or outputs, not both", ErrInvalid)
	case j.Target == nil && j.Iterations > 1:
		// Each output is judged once; the row would record iterations never run.
		return nil, fmt.Errorf("%w: agent-as-judge eval of outputs judges each once; iterations apply to a target's runs", ErrInvalid)
	case serr != nil:
		return nil, serr
	}
	id := j.ensureID()
	res := &AgentAsJudgeResult{RunID: id, Results: []AgentAsJudgeEvaluation{}}
	fail := func(what string, i int, err error) error {
		if ctx.Err() != nil {
			return err
		}
		res.Errors = append(res.Errors, fmt.Errorf("%s %d: %w", what, i+1, err))
		return nil
	}
	outputs := j.Outputs
	var last *run.Output
	if j.Target != nil {
		outputs = nil
		for i := range max(j.Iterations, 1) {
			out, err := runTarget(ctx, j.Target, j.Input, fmt.Sprintf("eval_%s_%d", id, i+1), j.UserID)
			if err != nil {
				if err := fail("iteration", i, err); err != nil {
					return nil, err
				}
				continue
			}
			last = out
			outputs = append(outputs, out.ContentString())
		}
	}
	system, schema := judgeSystemBinary, binaryJudgeSchema
	if scoring == ScoringNumeric {
		system, schema = judgeSystemNumeric, numericJudgeSchema
	}
	var scores []float64
	passed := 0
	for i, output := range outputs {
		ev, err := j.judge(ctx, output, scoring, threshold, system, schema)
		if err != nil {
			if err := fail("output", i, err); err != nil {
				return nil, err
			}
			continue
		}
		if ev.Passed {
			passed++
		}
		if ev.Score != nil {
			scores = append(scores, float64(*ev.Score))
		}
		res.Results = append(res.Results, ev)
	}
	if len(res.Results) == 0 {
		return nil, errors.Join(res.Errors...)
	}
	if len(scores) > 0 {
		st := summarize(scores)
		res.AvgScore, res.MinScore, res.MaxScore, res.StdDevScore = &st.avg, &st.min, &st.max, &st.std
	}
	// Agno's pass rate is over the judged outputs.
	res.PassRate = float64(passed) / float64(len(res.Results)) * 100
	res.Passed = passed == len(res.Results) && len(res.Errors) == 0
	var thr any
	if scoring == ScoringNumeric {
		thr = threshold
	}
	input := map[string]any{"input": j.Input, "criteria": j.Criteria, "scoring_strategy": scoring, "threshold": thr,
		"num_iterations": max(j.Iterations, 1), "additional_guidelines": nilIfEmpty(j.AdditionalGuidelines)}
	// As Agno, the row's model is the evaluator's, not the target's.
	c := describe(j.Target, last)
	info := j.Judge.Info()
	c.modelID, c.provider = info.ID, info.Provider
	row, err := store(ctx, j.Record, TypeAgentAsJudge, c, res, input)
	res.Row = row
	return res, err
}

// judgeSettings is the scoring strategy and threshold with their defaults
// (binary, 7), or ErrInvalid for ones no judgement can meet.
func judgeSettings(scoring string, threshold int) (string, int, error) {
	if scoring == "" {
		scoring = ScoringBinary
	}
	if threshold == 0 {
		threshold = 7
	}
	switch {
	case scoring != ScoringBinary && scoring != ScoringNumeric:
		return "", 0, fmt.Errorf("%w: scoring %q is not binary or numeric", ErrInvalid, scoring)
	case threshold < 1 || threshold > 10:
		return "", 0, fmt.Errorf("%w: threshold %d is outside 1–10", ErrInvalid, threshold)
	}
	return scoring, threshold, nil
}
