package agent

import "github.com/agentryhq/agentry/run"

// CheckOptions returns the error Run and Stream would refuse opts with, if
// any (OptionChecker), without running anything.
func (a *Agent) CheckOptions(opts ...RunOption) error {
	var o runOptions
	for _, fn := range opts {
		fn(&o)
	}
	return a.refuse(&o, false)
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
