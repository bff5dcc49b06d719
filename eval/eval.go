package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Type is an eval kind, stored in eval_type.
type Type string

// The eval kinds, as Agno names them.
const (
	TypeAccuracy     Type = "accuracy"
	TypePerformance  Type = "performance"
	TypeReliability  Type = "reliability"
	TypeAgentAsJudge Type = "agent_as_judge"
)

// Errors the evals return.
var (
	// ErrInvalid: an eval's configuration cannot run (a missing target,
	// judge or input).
	ErrInvalid = errors.New("eval: invalid configuration")
	// ErrJudge: the judge model's answer was not the JSON asked for.
	ErrJudge = errors.New("eval: the judge's answer could not be read")
)

// Record describes where a result is stored and under which name: the
// parts every eval kind shares. Zero values take the documented defaults.
//
// An eval's Run sets RunID when it was empty, and is not safe for
// concurrent use on one value.
type Record struct {
	// RunID keys the agno_eval_runs row. Empty means a new UUID for each
	// Run, set here as it starts: running the value again is a new
	// evaluation with a row of its own. One given is every Run's, and a
	// Run whose row exists fails to store it.
	RunID string
	// Name is the eval's name (the row's name column).
	Name string
	// DB, when set, receives the result as one agno_eval_runs row. A NUL
	// in its text (an output, a reason, the name) is stored as U+FFFD, on
	// every backend, since Postgres stores none.
	DB *db.DB
	// UserID owns the row (a scoped context overrides it).
	UserID string
	// generated is the RunID ensureID made, replaced by the next Run's.
	generated string
}

// Outcome is what every result reports: whether the eval passed and the row
// it was stored as (nil when Record.DB was nil).
type Outcome struct {
	Passed bool
	Row    *db.EvalRun
	// Errors are the iterations of an accuracy or agent-as-judge eval
	// whose run or judgement failed: as Agno does, they are left out of
	// the results and the others are kept (and stored); an eval with
	// errors does not pass. Run returns an error instead when none
	// succeeded or the context ended.
	Errors []error
}

// ensureID gives a Run its run id; call it once per Run.
func (r *Record) ensureID() string {
	if r.RunID == "" || r.RunID == r.generated {
		r.RunID = uuid.NewString()
		r.generated = r.RunID
	}
	return r.RunID
}

// component describes the evaluated component for the row's columns.
type component struct {
	agentID, teamID, workflowID, name, modelID, provider string
}

func describe(target agent.Runner, out *run.Output) component {
	var c component
	if target != nil {
		rc := target.Component()
		switch rc.Type {
		case run.TypeTeam:
			c.teamID = rc.ID
		case run.TypeWorkflow:
			c.workflowID = rc.ID
		default:
			c.agentID = rc.ID
		}
		c.name = rc.Name
	}
	if out != nil {
		c.modelID, c.provider = out.Model, out.ModelProvider
	}
	return c
}

// store writes a result's row when rec.DB is set.
func store(ctx context.Context, rec Record, typ Type, c component, data, input any) (*db.EvalRun, error) {
	dataJSON, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("eval: encode eval_data: %w", err)
	}
	inputJSON, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("eval: encode eval_input: %w", err)
	}
	row := &db.EvalRun{RunID: rec.RunID, EvalType: string(typ), EvalData: withoutNUL(dataJSON), EvalInput: withoutNUL(inputJSON),
		Name:    strings.ReplaceAll(rec.Name, "\x00", "\uFFFD"),
		AgentID: c.agentID, TeamID: c.teamID, WorkflowID: c.workflowID, ModelID: c.modelID, ModelProvider: c.provider,
		EvaluatedComponentName: c.name, UserID: rec.UserID}
	if rec.DB == nil {
		return row, nil
	}
	return rec.DB.CreateEvalRun(ctx, row)
}

// withoutNUL returns JSON text with every escaped NUL (\u0000) of its
// strings as U+FFFD: Postgres stores no NUL in jsonb, and a model's output
// or reason holding one must not cost the eval its row there (and only
// there) after all its runs.
func withoutNUL(b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if bytes.HasPrefix(b[i+1:], []byte("u0000")) {
			copy(b[i+1:], "ufffd")
		}
		i++ // the escaped character: \\u0000 is a backslash, then text
	}
	return b
}

// runTarget runs the target once on input in a session of its own.
func runTarget(ctx context.Context, target agent.Runner, input, session, user string) (*run.Output, error) {
	out, err := target.Run(ctx, run.TextInput(input), agent.WithSessionID(session), agent.WithUserID(user))
	if err != nil {
		return out, err
	}
	switch out.Status {
	case run.StatusError, run.StatusCancelled:
		return out, fmt.Errorf("eval: the run ended %s: %s", out.Status, out.ContentString())
	}
	return out, nil
}

// stats are the summary numbers of a sample, as Agno computes them with
// Python's statistics module: sample standard deviation (0 for one value),
// median, and p95 as quantiles(n=100, method="inclusive")[94] (linear
// interpolation between the nearest ranks; the value itself for one).
type stats struct {
	avg, min, max, std, median, p95 float64
}

func summarize(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	n := len(s)
	st := stats{avg: sum / float64(n), min: s[0], max: s[n-1], p95: s[0]}
	if n > 1 {
		var sq float64
		for _, x := range s {
			sq += (x - st.avg) * (x - st.avg)
		}
		st.std = math.Sqrt(sq / float64(n-1))
		st.p95 = quantile95(s)
	}
	if n%2 == 1 {
		st.median = s[n/2]
	} else {
		st.median = (s[n/2-1] + s[n/2]) / 2
	}
	return st
}

// quantile95 is statistics.quantiles(sorted, n=100, method="inclusive")[94]
// for a sorted sample of two values or more, computed as CPython does.
func quantile95(sorted []float64) float64 {
	m := len(sorted) - 1
	j, delta := 95*m/100, 95*m%100
	return (sorted[j]*float64(100-delta) + sorted[j+1]*float64(delta)) / 100
}
