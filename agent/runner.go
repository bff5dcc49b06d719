package agent

import (
	"context"
	"iter"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Runner is anything that executes runs the way an Agent does: an *Agent, a
// *team.Team, a *workflow.Workflow, or another implementation (a remote
// agent, a new kind of workflow step). agentos serves Runners and a workflow
// step is one, so a new kind is added by implementing it, not by another
// case in their code.
//
// The contract, as the Agent keeps it:
//   - Component is the identity its runs are stamped with; its id is unique
//     among the runners of its kind.
//   - Run and Stream take the RunOptions of this package (ResolveOptions
//     reads what they set). An option is honoured or refused, never
//     quietly dropped: a runner that cannot apply one returns, before it
//     starts the run, an *UnsupportedOptionError naming it (wrapping
//     ErrUnsupportedOption; Stream yields it as its only value). Agents,
//     teams and workflows refuse in Run and Stream the options only a
//     continue uses (WithTools, WithRequirements); an Agent refuses
//     WithKnowledgeFilters without Config.Knowledge,
//     WithAddHistoryToContext(true) without Config.DB, and WithNewSession
//     in a continue (Agent.CheckOptions). A continue (an Agent's, a team's,
//     a workflow's) refuses ids naming another run than the paused one
//     (CheckContinuedIDs).
//   - Stream's events are named in the component's vocabulary
//     (Component.EventName) and its run ends with one terminal event:
//     RunCompleted (content, metrics), RunError (content), RunCancelled
//     (reason) or RunPaused, as named for its kind.
//   - CancelRun cancels one of its runs executing in this process and
//     reports whether it found it.
//   - DB is where its runs are stored, nil when they are not.
type Runner interface {
	Component() run.Component
	DB() *db.DB
	Run(ctx context.Context, input run.Input, opts ...RunOption) (*run.Output, error)
	Stream(ctx context.Context, input run.Input, opts ...RunOption) iter.Seq2[run.Event, error]
	CancelRun(runID string) bool
}

var _ Runner = (*Agent)(nil)

// OptionChecker is a Runner that tells, before a run, whether it honours
// the options: CheckOptions returns the *UnsupportedOptionError its Run
// would, without running anything. A server checks a request with it before
// it stores a run (a background run's PENDING row) that the runner would
// then refuse.
type OptionChecker interface {
	CheckOptions(opts ...RunOption) error
}
