package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// StepRequirement is what a paused workflow run waits for at one step (Agno
// 3.0's StepRequirement): a confirmation, user input, a route selection or
// the review of the step's output. The caller resolves it (Confirmed,
// UserInput, SelectedChoices, EditedOutput, RejectionFeedback) and hands it
// back to continue the run. Stored members it does not model are kept in
// Extra.
type StepRequirement struct {
	StepID    string `json:"step_id"`
	StepName  string `json:"step_name,omitempty"`
	StepIndex *int   `json:"step_index,omitempty"`
	// StepType is Agno's StepType of the step that paused ("Step", "Loop", …).
	StepType string `json:"step_type,omitempty"`

	RequiresConfirmation bool   `json:"requires_confirmation"`
	ConfirmationMessage  string `json:"confirmation_message,omitempty"`
	// Confirmed is nil until answered: true confirms, false rejects.
	Confirmed *bool `json:"confirmed"`
	// OnReject is skip, cancel, retry or else.
	OnReject string `json:"on_reject,omitempty"`

	RequiresUserInput bool             `json:"requires_user_input"`
	UserInputMessage  string           `json:"user_input_message,omitempty"`
	UserInputSchema   []UserInputField `json:"user_input_schema,omitempty"`
	UserInput         map[string]any   `json:"user_input"`

	RequiresRouteSelection  bool     `json:"requires_route_selection"`
	AvailableChoices        []string `json:"available_choices,omitempty"`
	AllowMultipleSelections bool     `json:"allow_multiple_selections"`
	SelectedChoices         []string `json:"selected_choices"`

	RequiresOutputReview bool        `json:"requires_output_review"`
	OutputReviewMessage  string      `json:"output_review_message,omitempty"`
	StepOutput           *StepOutput `json:"step_output,omitempty"`
	IsPostExecution      bool        `json:"is_post_execution"`
	RejectionFeedback    string      `json:"rejection_feedback,omitempty"`
	EditedOutput         any         `json:"edited_output,omitempty"`

	RetryCount int  `json:"retry_count"`
	MaxRetries *int `json:"max_retries"`
	// TimeoutAt is when OnTimeout applies, in ISO 8601 (Agno's
	// datetime.isoformat()); empty for no timeout.
	TimeoutAt string `json:"timeout_at"`
	OnTimeout string `json:"on_timeout,omitempty"`

	// RequiresExecutorInput: the step's agent or team paused for a tool
	// (confirmation, user input, external execution). ExecutorRequirements
	// are its run's unresolved requirements, answered in place (as the
	// agent's continue takes them); the Executor fields name the paused run.
	RequiresExecutorInput bool          `json:"requires_executor_input,omitempty"`
	ExecutorRequirements  []Requirement `json:"executor_requirements,omitempty"`
	ExecutorID            string        `json:"executor_id,omitempty"`
	ExecutorName          string        `json:"executor_name,omitempty"`
	ExecutorRunID         string        `json:"executor_run_id,omitempty"`
	ExecutorType          string        `json:"executor_type,omitempty"`
	ExecutorSessionID     string        `json:"executor_session_id,omitempty"`

	// Decision answers an error pause (an ErrorRequirement of the same
	// step_id): retry, skip or cancel. Only answers carry it.
	Decision string `json:"decision,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

// ErrorRequirement is what a workflow run paused by a failing step waits
// for (Agno's ErrorRequirement, HumanReview on_error pause): a decision to
// retry the step or skip it. Stored members it does not model (and the
// nulls Agno writes for empty ones) are kept in Extra.
type ErrorRequirement struct {
	StepID       string  `json:"step_id"`
	StepName     string  `json:"step_name,omitempty"`
	StepIndex    *int    `json:"step_index,omitempty"`
	ErrorMessage string  `json:"error_message"`
	ErrorType    string  `json:"error_type,omitempty"`
	RetryCount   int     `json:"retry_count"`
	Decision     *string `json:"decision"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type errorRequirement ErrorRequirement

// MarshalJSON writes the requirement with Extra.
func (r ErrorRequirement) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*errorRequirement)(&r), r.Extra)
}

// UnmarshalJSON reads a stored requirement, keeping what it does not model in Extra.
func (r *ErrorRequirement) UnmarshalJSON(b []byte) error {
	var v errorRequirement
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*r = ErrorRequirement(v)
	return nil
}

// Resolved reports whether a tool requirement has its answer: confirmed
// (true or false), answered user input, or an external result.
func (r *Requirement) Resolved() bool {
	t := r.ToolExecution
	switch {
	case t == nil:
		return false
	case t.RequiresConfirmation:
		return t.Confirmed != nil
	case t.RequiresUserInput:
		return t.Answered != nil && *t.Answered
	case t.ExternalExecutionRequired:
		return t.ResultGiven()
	}
	return true
}

// UserInputField is one field a step asks the user for (Agno's
// UserInputField); FieldType is str, int, float, bool, list or dict. Stored
// members it does not model (and the nulls Agno writes for empty ones) are
// kept in Extra.
type UserInputField struct {
	Name          string `json:"name"`
	FieldType     string `json:"field_type"`
	Description   string `json:"description,omitempty"`
	Value         any    `json:"value"`
	Required      bool   `json:"required"`
	AllowedValues []any  `json:"allowed_values,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type userInputField UserInputField

// MarshalJSON writes the field with Extra.
func (f UserInputField) MarshalJSON() ([]byte, error) {
	storedMember(f.Extra, "value", &f.Value)
	storedMember(f.Extra, "allowed_values", &f.AllowedValues)
	return lossless.Marshal((*userInputField)(&f), f.Extra)
}

// UnmarshalJSON reads a stored field, keeping what it does not model in Extra.
func (f *UserInputField) UnmarshalJSON(b []byte) error {
	var v userInputField
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	exactMember(extra, "value", &v.Value)
	exactMember(extra, "allowed_values", &v.AllowedValues)
	*f = UserInputField(v)
	return nil
}

// Resolved reports whether the requirement has its answer.
func (r *StepRequirement) Resolved() bool {
	switch {
	case r.RequiresExecutorInput:
		for i := range r.ExecutorRequirements {
			if !r.ExecutorRequirements[i].Resolved() {
				return false
			}
		}
		return len(r.ExecutorRequirements) > 0
	case r.RequiresRouteSelection:
		return len(r.SelectedChoices) > 0 || r.Confirmed != nil && !*r.Confirmed
	case r.RequiresUserInput && !r.RequiresConfirmation:
		return r.UserInput != nil || r.Confirmed != nil && !*r.Confirmed
	default:
		return r.Confirmed != nil
	}
}

type stepRequirement StepRequirement

// MarshalJSON writes the requirement with Extra.
func (r StepRequirement) MarshalJSON() ([]byte, error) {
	storedMember(r.Extra, "user_input", &r.UserInput)
	storedMember(r.Extra, "edited_output", &r.EditedOutput)
	return lossless.Marshal((*stepRequirement)(&r), r.Extra)
}

// UnmarshalJSON reads a stored requirement, keeping what it does not model in Extra.
func (r *StepRequirement) UnmarshalJSON(b []byte) error {
	var v stepRequirement
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	exactMember(extra, "user_input", &v.UserInput)
	exactMember(extra, "edited_output", &v.EditedOutput)
	*r = StepRequirement(v)
	return nil
}
