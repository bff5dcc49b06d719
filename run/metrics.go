package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/model"
)

// Metrics are measurements in Agno's field names: a run's or event's
// (RunMetrics), a tool call's (ToolCallMetrics: start_time, end_time,
// duration) or a workflow run's (WorkflowMetrics: steps, duration). Stored
// members Metrics does not model (audio tokens, additional_metrics, …) are
// kept in Extra.
type Metrics struct {
	model.Usage
	// Duration in seconds.
	Duration float64 `json:"duration,omitempty"`
	// TimeToFirstToken in seconds.
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
	// StartTime and EndTime of a tool call, epoch seconds. Agno has stored
	// them as numbers and as ISO 8601 strings; both read, and each is
	// written back in the form it was read in.
	StartTime float64 `json:"start_time,omitempty"`
	EndTime   float64 `json:"end_time,omitempty"`
	// Details breaks the tokens down by model role ("model",
	// "reasoning_model") and by model, as Agno's metrics.details does: after a
	// fallback it names the model that answered.
	Details map[string][]ModelMetrics `json:"details,omitempty"`
	// Steps are a workflow run's per-step metrics, by step name. A workflow
	// run's metrics always carry it (Agno requires the key), so an empty
	// non-nil map is written as {}.
	Steps map[string]StepMetrics `json:"steps,omitzero"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type metrics Metrics

// MarshalJSON writes the metrics with Extra.
func (m Metrics) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*metrics)(&m), m.Extra)
}

// UnmarshalJSON reads stored metrics, keeping what it does not model in Extra.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var v metrics
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = Metrics(v)
	return nil
}

// StepMetrics are one workflow step's metrics (Agno's StepMetrics).
type StepMetrics struct {
	StepName     string   `json:"step_name"`
	ExecutorType string   `json:"executor_type"`
	ExecutorName string   `json:"executor_name"`
	Metrics      *Metrics `json:"metrics"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type stepMetrics StepMetrics

// MarshalJSON writes the step metrics with Extra.
func (m StepMetrics) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*stepMetrics)(&m), m.Extra)
}

// UnmarshalJSON reads stored step metrics, keeping what it does not model in Extra.
func (m *StepMetrics) UnmarshalJSON(b []byte) error {
	var v stepMetrics
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = StepMetrics(v)
	return nil
}

// ModelMetrics is one model's share of a run's tokens (Agno's ModelMetrics).
type ModelMetrics struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	model.Usage

	// Extra keeps stored members the fields above do not hold
	// (provider_metrics, audio tokens, …).
	Extra map[string]json.RawMessage `json:"-"`
}

type modelMetrics ModelMetrics

// MarshalJSON writes the model's metrics with Extra.
func (m ModelMetrics) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*modelMetrics)(&m), m.Extra)
}

// UnmarshalJSON reads a model's stored metrics, keeping what it does not model in Extra.
func (m *ModelMetrics) UnmarshalJSON(b []byte) error {
	var v modelMetrics
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = ModelMetrics(v)
	return nil
}
