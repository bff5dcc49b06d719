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

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

// UserInputField is one field a step asks the user for (Agno's
// UserInputField); FieldType is str, int, float, bool, list or dict.
type UserInputField struct {
	Name          string `json:"name"`
	FieldType     string `json:"field_type"`
	Description   string `json:"description,omitempty"`
	Value         any    `json:"value"`
	Required      bool   `json:"required"`
	AllowedValues []any  `json:"allowed_values,omitempty"`
}

// Resolved reports whether the requirement has its answer.
func (r *StepRequirement) Resolved() bool {
	switch {
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
	*r = StepRequirement(v)
	return nil
}
