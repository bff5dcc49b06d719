package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// Accuracy runs Target on Input Iterations times and has Judge score each
// output against ExpectedOutput from 1 to 10. It passes when the average
// score reaches MinScore and no iteration failed (see Outcome.Errors).
type Accuracy struct {
	Record
	Target         agent.Runner
	Judge          model.Model
	Input          string
	ExpectedOutput string
	// Iterations defaults to 1.
	Iterations int
	// AdditionalGuidelines and AdditionalContext are given to the judge.
	AdditionalGuidelines string
	AdditionalContext    string
	// MinScore is the average score that passes, from 1 to 10; zero means 7.
	MinScore float64
}

// AccuracyEvaluation is one judged iteration (Agno's field names).
type AccuracyEvaluation struct {
	Input          string `json:"input"`
	Output         string `json:"output"`
	ExpectedOutput string `json:"expected_output"`
	Score          int    `json:"score"`
	Reason         string `json:"reason"`
}

// AccuracyResult is eval_data of an accuracy eval.
type AccuracyResult struct {
	Results     []AccuracyEvaluation `json:"results"`
	AvgScore    float64              `json:"avg_score"`
	MeanScore   float64              `json:"mean_score"`
	MinScore    float64              `json:"min_score"`
	MaxScore    float64              `json:"max_score"`
	StdDevScore float64              `json:"std_dev_score"`
	Outcome     `json:"-"`
}

// Run runs the eval and stores its row when DB is set.
func (a *Accuracy) Run(ctx context.Context) (*AccuracyResult, error) {
	switch {
	case a.Target == nil:
		return nil, fmt.Errorf("%w: accuracy eval needs a target", ErrInvalid)
	case a.Judge == nil:
		return nil, fmt.Errorf("%w: accuracy eval needs a judge model", ErrInvalid)
	case a.Input == "" || a.ExpectedOutput == "":
		return nil, fmt.Errorf("%w: accuracy eval needs an input and an expected output", ErrInvalid)
	case !validMinScore(a.MinScore):
		return nil, fmt.Errorf("%w: min score %v is outside 1–10", ErrInvalid, a.MinScore)
	}
	iterations := max(a.Iterations, 1)
	minScore := a.MinScore
	if minScore == 0 {
		minScore = 7
	}
	id := a.ensureID()
	res := &AccuracyResult{Results: []AccuracyEvaluation{}}
	var last *run.Output
	var scores []float64
	for i := range iterations {
		out, ev, err := a.iterate(ctx, id, i)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.Errors = append(res.Errors, fmt.Errorf("iteration %d: %w", i+1, err))
			continue
		}
		last = out
		res.Results = append(res.Results, ev)
		scores = append(scores, float64(ev.Score))
	}
	if len(res.Results) == 0 {
		return nil, errors.Join(res.Errors...)
	}
	st := summarize(scores)
	res.AvgScore, res.MeanScore, res.MinScore, res.MaxScore, res.StdDevScore = st.avg, st.avg, st.min, st.max, st.std
	res.Passed = res.AvgScore >= minScore && len(res.Errors) == 0
	input := map[string]any{"input": a.Input, "expected_output": a.ExpectedOutput, "num_iterations": iterations,
		"additional_guidelines": nilIfEmpty(a.AdditionalGuidelines), "additional_context": nilIfEmpty(a.AdditionalContext)}
	row, err := store(ctx, a.Record, TypeAccuracy, describe(a.Target, last), res, input)
	res.Row = row
	return res, err
}

// iterate runs the target once and has the judge score its output.
func (a *Accuracy) iterate(ctx context.Context, id string, i int) (*run.Output, AccuracyEvaluation, error) {
	out, err := runTarget(ctx, a.Target, a.Input, fmt.Sprintf("eval_%s_%d", id, i+1), a.UserID)
	if err != nil {
		return nil, AccuracyEvaluation{}, err
	}
	output := out.ContentString()
	if output == "" {
		// As Agno: an iteration without an answer is not judged.
		return nil, AccuracyEvaluation{}, fmt.Errorf("eval: iteration %d: the target gave no answer to judge (run %s)", i+1, out.RunID)
	}
	var b strings.Builder
	b.WriteString(fence("agent_input", a.Input) + "\n\n" + fence("expected_output", a.ExpectedOutput) + "\n\n" + fence("agent_output", output))
	if a.AdditionalGuidelines != "" {
		b.WriteString("\n\nAdditional guidelines:\n" + a.AdditionalGuidelines)
	}
	if a.AdditionalContext != "" {
		b.WriteString("\n\nAdditional context:\n" + a.AdditionalContext)
	}
	v, err := ask(ctx, a.Judge, accuracyVerdict, accuracySystem, b.String(), accuracySchema)
	if err != nil {
		return nil, AccuracyEvaluation{}, err
	}
	return out, AccuracyEvaluation{Input: a.Input, Output: output, ExpectedOutput: a.ExpectedOutput,
		Score: v.Score, Reason: v.Reason}, nil
}

// validMinScore: zero (the default) or a score a judge can give; a NaN is
// refused (no average reaches it).
func validMinScore(s float64) bool {
	return s == 0 || (s >= 1 && s <= 10)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
