package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentryhq/agentry/run"
)

// HumanReview pauses a workflow run at a step for a person (Agno 3.0's
// HumanReview): the run is stored PAUSED with a run.StepRequirement and
// continued with the answer (Workflow.ContinueRun).
type HumanReview struct {
	// RequiresConfirmation asks before the step runs (every kind).
	RequiresConfirmation bool
	ConfirmationMessage  string
	// RequiresUserInput asks for the fields of UserInputSchema before a
	// Step runs (they reach it as StepInput.UserInput; an agent or team
	// gets them after its input), or, on a Router, asks which choice(s) to
	// run (AllowMultipleSelections: more than one).
	RequiresUserInput       bool
	UserInputMessage        string
	UserInputSchema         []run.UserInputField
	AllowMultipleSelections bool
	// RequiresOutputReview asks after a Step or Router ran whether its
	// output stands; the answer may edit it (EditedOutput).
	RequiresOutputReview bool
	OutputReviewMessage  string
	// RequiresIterationReview asks after each iteration of a Loop whether
	// to go on (rejecting ends the loop, or the run with OnReject cancel).
	RequiresIterationReview bool
	IterationReviewMessage  string
	// OnReject is what a rejection does: skip (default: the step is left
	// out and the run goes on), cancel (the run ends CANCELLED), retry (a
	// Step's output review runs the step again with the rejection note, up
	// to MaxRetries times) or else (a Condition runs its Else steps).
	OnReject string
	// OnError is what a failing Step does: fail (the run ends in ERROR),
	// skip (the step is left out) or pause (the run pauses with an
	// ErrorRequirement for a person to decide: retry the step, at most
	// MaxRetries times, skip it or cancel the run). Default fail. Skip and
	// pause are for a Step, not a primitive (set them on its steps).
	OnError    string
	MaxRetries int
	// Timeout, when set, applies OnTimeout to a pause nobody answered in
	// time (also after a restart: see Workflow.ResumeExpired).
	Timeout time.Duration
	// OnTimeout is cancel (default), skip or approve.
	OnTimeout string
}

// Values of OnReject, OnError and OnTimeout.
const (
	OnRejectSkip   = "skip"
	OnRejectCancel = "cancel"
	OnRejectRetry  = "retry"
	OnRejectElse   = "else"

	OnErrorFail  = "fail"
	OnErrorSkip  = "skip"
	OnErrorPause = "pause"

	// Decisions on an error pause (run.StepRequirement.Decision).
	DecisionRetry  = "retry"
	DecisionSkip   = "skip"
	DecisionCancel = "cancel"

	OnTimeoutCancel  = "cancel"
	OnTimeoutSkip    = "skip"
	OnTimeoutApprove = "approve"
)

const defaultMaxRetries = 3

func (h *HumanReview) validate(kind string) error {
	if h == nil {
		return nil
	}
	bad := func(field string, allowed ...string) error {
		if slices.Contains(allowed, kind) {
			return nil
		}
		return fmt.Errorf("HumanReview.%s does not apply to a %s (only %v)", field, kind, allowed)
	}
	var errs []error
	if h.RequiresUserInput {
		errs = append(errs, bad("RequiresUserInput", typeStep, typeRouter))
	}
	if h.AllowMultipleSelections {
		errs = append(errs, bad("AllowMultipleSelections", typeRouter))
	}
	if h.RequiresOutputReview {
		errs = append(errs, bad("RequiresOutputReview", typeStep, typeRouter))
	}
	if h.RequiresIterationReview {
		errs = append(errs, bad("RequiresIterationReview", typeLoop))
	}
	switch h.OnReject {
	case "", OnRejectSkip, OnRejectCancel, OnRejectRetry:
	case OnRejectElse:
		errs = append(errs, bad("OnReject else", typeCondition))
	default:
		errs = append(errs, fmt.Errorf("HumanReview.OnReject %q: use skip, cancel, retry or else", h.OnReject))
	}
	if h.OnReject == OnRejectRetry && !h.RequiresOutputReview {
		errs = append(errs, errors.New("HumanReview.OnReject retry needs RequiresOutputReview (a rejected output is what is retried)"))
	}
	if h.OnReject == OnRejectRetry {
		// A Router's rejected output is not produced again: its review
		// would be asked again and again for the same output.
		errs = append(errs, bad("OnReject retry", typeStep))
	}
	switch h.OnError {
	case "", OnErrorFail:
	case OnErrorSkip:
		// Only a Step's own failure is skipped: a primitive's would be
		// accepted and ignored. Set it on the steps inside.
		errs = append(errs, bad("OnError skip", typeStep))
	case OnErrorPause:
		errs = append(errs, bad("OnError pause", typeStep))
	default:
		errs = append(errs, fmt.Errorf("HumanReview.OnError %q: use fail, skip or pause", h.OnError))
	}
	switch h.OnTimeout {
	case "", OnTimeoutCancel, OnTimeoutSkip, OnTimeoutApprove:
	default:
		errs = append(errs, fmt.Errorf("HumanReview.OnTimeout %q: use cancel, skip or approve", h.OnTimeout))
	}
	if h.Timeout < 0 || h.MaxRetries < 0 {
		errs = append(errs, errors.New("HumanReview.Timeout and MaxRetries cannot be negative"))
	}
	if h.RequiresOutputReview && h.RequiresIterationReview {
		errs = append(errs, errors.New("HumanReview: RequiresOutputReview and RequiresIterationReview cannot both be set"))
	}
	for _, f := range h.UserInputSchema {
		switch f.FieldType {
		case "str", "int", "float", "bool", "list", "dict":
		default:
			errs = append(errs, fmt.Errorf("HumanReview.UserInputSchema %q: field_type %q: use str, int, float, bool, list or dict", f.Name, f.FieldType))
		}
		if f.Name == "" {
			errs = append(errs, errors.New("HumanReview.UserInputSchema: a field has no name"))
		}
	}
	if !h.RequiresConfirmation && !h.RequiresUserInput && !h.RequiresOutputReview && !h.RequiresIterationReview && h.OnError == "" {
		errs = append(errs, errors.New("HumanReview asks nothing: set RequiresConfirmation, RequiresUserInput, RequiresOutputReview, RequiresIterationReview or OnError"))
	}
	return errors.Join(errs...)
}

func (h *HumanReview) onReject() string {
	if h == nil || h.OnReject == "" {
		return OnRejectSkip
	}
	return h.OnReject
}

func (h *HumanReview) onTimeout() string {
	if h.OnTimeout == "" {
		return OnTimeoutCancel
	}
	return h.OnTimeout
}

func (h *HumanReview) maxRetries() int {
	if h.MaxRetries == 0 {
		return defaultMaxRetries
	}
	return h.MaxRetries
}

// requirement is the StepRequirement a pause at s (id path) waits for.
func (h *HumanReview) requirement(s *Step, kind, path string, index int) run.StepRequirement {
	r := run.StepRequirement{StepID: path, StepName: s.Name, StepIndex: &index, StepType: kind, OnReject: h.onReject()}
	if h.Timeout > 0 {
		r.TimeoutAt = time.Now().UTC().Add(h.Timeout).Format(time.RFC3339Nano)
		r.OnTimeout = h.onTimeout()
	} else {
		r.OnTimeout = h.onTimeout()
	}
	return r
}

// ErrInvalidUserInput is returned by ContinueRun for user input that does
// not match the step's UserInputSchema.
var ErrInvalidUserInput = errors.New("workflow: user input does not match the schema")

// checkUserInput validates answers against schema and returns them
// converted to the field types.
func checkUserInput(schema []run.UserInputField, in map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(in))
	known := map[string]bool{}
	for _, f := range schema {
		known[f.Name] = true
		v, ok := in[f.Name]
		if !ok || v == nil {
			if f.Required {
				return nil, fmt.Errorf("%w: %q is required", ErrInvalidUserInput, f.Name)
			}
			continue
		}
		cv, ok := convertField(f.FieldType, v)
		if !ok {
			return nil, fmt.Errorf("%w: %q must be %s, got %T", ErrInvalidUserInput, f.Name, f.FieldType, v)
		}
		if len(f.AllowedValues) > 0 && !slices.ContainsFunc(f.AllowedValues, func(a any) bool { c, _ := convertField(f.FieldType, a); return fmt.Sprint(c) == fmt.Sprint(cv) }) {
			return nil, fmt.Errorf("%w: %q must be one of %v", ErrInvalidUserInput, f.Name, f.AllowedValues)
		}
		out[f.Name] = cv
	}
	for k := range in {
		if len(schema) > 0 && !known[k] {
			return nil, fmt.Errorf("%w: %q is not a field of the schema", ErrInvalidUserInput, k)
		}
		if len(schema) == 0 {
			out[k] = in[k]
		}
	}
	return out, nil
}

func convertField(t string, v any) (any, bool) {
	switch t {
	case "str", "":
		s, ok := v.(string)
		return s, ok
	case "int":
		switch n := v.(type) {
		case float64:
			return int64(n), n == float64(int64(n))
		case int:
			return int64(n), true
		case int64:
			return n, true
		case json.Number:
			// An integer beyond float64's precision, read exactly (run
			// keeps such numbers exact).
			i, err := n.Int64()
			return i, err == nil
		case string:
			var i int64
			_, err := fmt.Sscanf(n, "%d", &i)
			return i, err == nil && fmt.Sprint(i) == n
		}
	case "float":
		switch n := v.(type) {
		case float64:
			return n, true
		case int:
			return float64(n), true
		case int64:
			return float64(n), true
		case json.Number:
			f, err := n.Float64()
			return f, err == nil && !math.IsInf(f, 0)
		case string:
			// Whole numbers only ("1.5abc" is not 1.5), and none JSON
			// cannot hold (NaN, Inf: the run could not be stored again).
			f, err := strconv.ParseFloat(n, 64)
			return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
		}
	case "bool":
		switch b := v.(type) {
		case bool:
			return b, true
		case string:
			switch b {
			case "true":
				return true, true
			case "false":
				return false, true
			}
		}
	case "list":
		l, ok := v.([]any)
		return l, ok
	case "dict":
		m, ok := v.(map[string]any)
		return m, ok
	}
	return nil, false
}
