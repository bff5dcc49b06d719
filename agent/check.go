package agent

import (
	"errors"
	"maps"
)

// CheckTrigger says why a check rejected a run's input or output (Agno's
// CheckTrigger); it is the RunError event's error_id.
type CheckTrigger string

// Check triggers, as Agno spells them.
const (
	TriggerOffTopic         CheckTrigger = "off_topic"
	TriggerInputNotAllowed  CheckTrigger = "input_not_allowed"
	TriggerOutputNotAllowed CheckTrigger = "output_not_allowed"
	TriggerValidationFailed CheckTrigger = "validation_failed"
	TriggerPromptInjection  CheckTrigger = "prompt_injection"
	TriggerPIIDetected      CheckTrigger = "pii_detected"
)

// Sentinels matched by errors.Is on a run's error: ErrInputCheck for an
// *InputCheckError (a pre-hook or guardrail, or InputSchema, rejected the
// input), ErrOutputCheck for an *OutputCheckError (a post-hook rejected the
// output).
var (
	ErrInputCheck  = errors.New("agent: input rejected by a check")
	ErrOutputCheck = errors.New("agent: output rejected by a check")
)

// InputCheckError rejects a run's input: a pre-hook returning it (or an error
// wrapping it) ends the run in ERROR before the model is called, with a
// RunError event of error_type "input_check_error", error_id Trigger and
// additional_data AdditionalData, as Agno does.
type InputCheckError struct {
	Message        string
	Trigger        CheckTrigger // default TriggerInputNotAllowed
	AdditionalData map[string]any
}

func (e *InputCheckError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrInputCheck) true.
func (e *InputCheckError) Is(target error) bool { return target == ErrInputCheck }

// OutputCheckError rejects a run's output: a post-hook returning it ends the
// run in ERROR (its content becomes Message; the rejected answer is neither
// returned nor stored), with a RunError event of error_type
// "output_check_error".
type OutputCheckError struct {
	Message        string
	Trigger        CheckTrigger // default TriggerOutputNotAllowed
	AdditionalData map[string]any
}

func (e *OutputCheckError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrOutputCheck) true.
func (e *OutputCheckError) Is(target error) bool { return target == ErrOutputCheck }

// checkFields are a rejection's RunError fields; ok is false for other errors.
func checkFields(err error) (errorType, errorID string, data map[string]any, ok bool) {
	var ie *InputCheckError
	if errors.As(err, &ie) {
		t := ie.Trigger
		if t == "" {
			t = TriggerInputNotAllowed
		}
		return "input_check_error", string(t), maps.Clone(ie.AdditionalData), true
	}
	var oe *OutputCheckError
	if errors.As(err, &oe) {
		t := oe.Trigger
		if t == "" {
			t = TriggerOutputNotAllowed
		}
		return "output_check_error", string(t), maps.Clone(oe.AdditionalData), true
	}
	return "", "", nil, false
}
