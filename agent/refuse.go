package agent

import (
	"fmt"

	"github.com/agentryhq/agentry/run"
)

// CheckOptions returns the error Run and Stream would refuse opts with, if
// any (OptionChecker), without running anything: a WithOutputSchema the
// agent cannot use (wrapping ErrInvalidSchema) too, in the form the agent
// sends it (a StrictOutput agent's strict form).
func (a *Agent) CheckOptions(opts ...RunOption) error {
	var o runOptions
	for _, fn := range opts {
		fn(&o)
	}
	if err := a.refuse(&o, false); err != nil {
		return err
	}
	if m := o.more; m != nil && len(m.outputSchema) > 0 {
		_, err := compileSchema(m.outputSchema, m.schemaName, runSchemaWhat, a.conf().StrictOutput)
		return err
	}
	return nil
}

// refuse returns the error of a run given an option the agent cannot
// honour (nil when it honours them all): the resolutions of paused tools
// outside a continue, knowledge filters without a knowledge base, history
// without a database, and a new session for a continued run, whose session
// is its paused run's. The knowledge filters of an agent composed into
// another component (Config.Component: a team's leader) are its
// composer's to honour or refuse (a team hands them to its members).
func (a *Agent) refuse(o *runOptions, continuing bool) error {
	unsupported := func(option, reason string) error {
		return &UnsupportedOptionError{Runner: a.Component(), Option: option, Reason: reason}
	}
	if continuing && o.newSession {
		return unsupported("WithNewSession", "a continued run stays in its paused run's session")
	}
	m := o.more
	if m == nil {
		return nil
	}
	switch {
	case !continuing && m.tools != nil:
		return unsupported("WithTools", "resolved tools are for ContinueRun")
	case !continuing && m.requirements != nil:
		return unsupported("WithRequirements", "resolved requirements are for ContinueRun")
	case m.knowledgeFilters != nil && a.conf().Knowledge == nil && a.Component().Type == run.TypeAgent:
		return unsupported("WithKnowledgeFilters", "it has no knowledge base (Config.Knowledge)")
	case m.addHistory != nil && *m.addHistory && a.conf().DB == nil:
		return unsupported("WithAddHistoryToContext", "it has no database (Config.DB) to read history from")
	}
	return nil
}

// CheckContinuedIDs returns the error of a continue of paused by runner
// whose ids (WithRunID, WithSessionID, WithUserID, WithParentRunID) name
// another run: a continued run keeps its paused run's ids, so a different
// value would be ignored (continuing alice's run WithUserID("bob") would go
// on as alice). An id equal to the paused run's is accepted. The error is
// an *UnsupportedOptionError. The Agent's continues check it, and so does
// a workflow's.
func CheckContinuedIDs(runner run.Component, o CallOptions, paused *run.Output) error {
	for _, id := range [...]struct{ option, given, paused, what string }{
		{"WithRunID", o.RunID, paused.RunID, "run id"},
		{"WithSessionID", o.SessionID, paused.SessionID, "session id"},
		{"WithUserID", o.UserID, paused.UserID, "user id"},
		{"WithParentRunID", o.ParentRunID, paused.ParentRunID, "parent run id"},
	} {
		if id.given != "" && id.given != id.paused {
			return &UnsupportedOptionError{Runner: runner, Option: id.option,
				Reason: fmt.Sprintf("a continued run keeps its paused run's %s %q, not %q", id.what, id.paused, id.given)}
		}
	}
	return nil
}
