package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// StepOutput is one entry of a workflow run's step_results (Agno's
// StepOutput). Stored members it does not model are kept in Extra.
type StepOutput struct {
	StepName string `json:"step_name,omitempty"`
	StepID   string `json:"step_id,omitempty"`
	// StepType is Agno's StepType: "Step", "Steps", "Loop", "Parallel", …
	StepType string `json:"step_type,omitempty"`
	// ExecutorType is "agent", "team", "function" or "workflow".
	ExecutorType string `json:"executor_type,omitempty"`
	ExecutorName string `json:"executor_name,omitempty"`
	Content      any    `json:"content,omitempty"`
	// StepRunID is the run_id of the run that executed the step.
	StepRunID string   `json:"step_run_id,omitempty"`
	Images    []Media  `json:"images,omitempty"`
	Videos    []Media  `json:"videos,omitempty"`
	Audio     []Media  `json:"audio,omitempty"`
	Files     []Media  `json:"files,omitempty"`
	Metrics   *Metrics `json:"metrics,omitempty"`
	// Success is nil when not stored, which Agno reads as true.
	Success  *bool  `json:"success,omitempty"`
	Error    string `json:"error,omitempty"`
	Stop     bool   `json:"stop,omitempty"`
	IsPaused bool   `json:"is_paused,omitempty"`
	// Steps are the results of a composite step's children.
	Steps []StepOutput `json:"steps,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type stepOutput StepOutput

// MarshalJSON writes the step output with Extra.
func (s StepOutput) MarshalJSON() ([]byte, error) {
	storedMember(s.Extra, "content", &s.Content)
	return lossless.Marshal((*stepOutput)(&s), s.Extra)
}

// UnmarshalJSON reads a stored step output, keeping what it does not model in Extra.
func (s *StepOutput) UnmarshalJSON(b []byte) error {
	var v stepOutput
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	exactMember(extra, "content", &v.Content)
	*s = StepOutput(v)
	return nil
}
