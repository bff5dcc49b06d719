package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"
)

// Tags of the built-in tools (Agno's MCPServerConfig tags).
const (
	TagCore    = "core"
	TagSession = "session"
)

// Result modes of the run tools.
const (
	// ResultTrimmed answers with the run's text (capped at MaxResultBytes) and
	// structured content limited to run_id, session_id, status and, when
	// paused, the requirements.
	ResultTrimmed = "trimmed"
	// ResultFull answers with the whole stored run as structured content.
	ResultFull = "full"
)

// DefaultMaxResultBytes caps a trimmed result's text.
const DefaultMaxResultBytes = 64 << 10

// ErrConfig marks an invalid Options value.
var ErrConfig = errors.New("mcpserver: invalid configuration")

// Options are the user-facing settings (mcp_server in the config file).
type Options struct {
	// Stateless serves every request with a fresh session (no Mcp-Session-Id),
	// so any replica can answer any request.
	Stateless bool
	// EnableBuiltinTools, nil meaning true, registers the built-in tools
	// selected by IncludeTags and ExcludeTags.
	EnableBuiltinTools *bool
	// IncludeTags, when not nil, keeps only built-in tools with one of these
	// tags ("core", "session"); an empty non-nil list keeps none.
	IncludeTags []string
	// ExcludeTags drops built-in tools with one of these tags.
	ExcludeTags []string
	// ResultMode is ResultTrimmed (default) or ResultFull.
	ResultMode string
	// MaxResultBytes caps a trimmed run result's text; 0 means
	// DefaultMaxResultBytes.
	MaxResultBytes int
	// Tools are served next to the built-in tools; a tool under human
	// review (RequiresConfirmation, RequiresUserInput, ExternalExecution)
	// cannot be, as a call over MCP has no pause to wait for it.
	Tools []tool.Tool
}

// Config is what the server serves and how it checks callers.
type Config struct {
	// Name and Version are the server's implementation info; OSID and
	// Description are reported by get_agentos_config.
	Name, Version, OSID, Description string

	Agents    []*agent.Agent
	Teams     []*team.Team
	Workflows []*workflow.Workflow
	// DBs are the databases the session tools read; the first is the default.
	DBs []*db.DB

	Options Options

	// Scope turns the context of an authenticated call (carrying the caller's
	// auth.Principal) into the context the tool runs with: AgentOS applies
	// user isolation here. nil leaves the context as it is.
	Scope func(ctx context.Context) (context.Context, error)
	// Authorization enforces resource:action scopes per tool, as for routes;
	// a call without a principal (unauthenticated) is then refused.
	Authorization bool
	// Begin, when set, registers a run the tools start or continue
	// (AgentOS's run registry: cancel route, graceful shutdown) for the
	// run's user; end is called when it ends.
	Begin func(ctx context.Context, t Target, runID, userID string) (_ context.Context, end func(), _ error)
	// Observe, when set, wraps the run a tool is about to stream (AgentOS
	// gives it the run span and run metrics its HTTP runs get). nil streams
	// the target itself.
	Observe func(t Target, runID, sessionID, userID string) Streamer
	// ObserveCall, when set, wraps a continued run (continue_run) as
	// Observe wraps a new one, given the stored run's session and user.
	// nil calls it as it is.
	ObserveCall func(ctx context.Context, t Target, runID, sessionID, userID string, call func(context.Context) (*run.Output, error)) (*run.Output, error)

	Logger *slog.Logger
}

// builtinTags reports which built-in tags are enabled.
func (o Options) builtinTags() map[string]bool {
	on := map[string]bool{}
	if o.EnableBuiltinTools != nil && !*o.EnableBuiltinTools {
		return on
	}
	if o.IncludeTags == nil {
		on[TagCore], on[TagSession] = true, true
	}
	for _, t := range o.IncludeTags {
		on[t] = true
	}
	for _, t := range o.ExcludeTags {
		delete(on, t)
	}
	return on
}

// Validate reports unknown tags and result modes, tools named as an
// enabled built-in tool and tools under human review.
func (o Options) Validate() error {
	for _, list := range [][]string{o.IncludeTags, o.ExcludeTags} {
		for _, t := range list {
			if t != TagCore && t != TagSession {
				return fmt.Errorf("%w: unknown tag %q: use %q or %q", ErrConfig, t, TagCore, TagSession)
			}
		}
	}
	if o.ResultMode != "" && !slices.Contains([]string{ResultTrimmed, ResultFull}, o.ResultMode) {
		return fmt.Errorf("%w: result_mode %q: use %q or %q", ErrConfig, o.ResultMode, ResultTrimmed, ResultFull)
	}
	if o.MaxResultBytes < 0 {
		return fmt.Errorf("%w: max result bytes must not be negative", ErrConfig)
	}
	on := o.builtinTags()
	for i, t := range o.Tools {
		if t == nil {
			return fmt.Errorf("%w: Tools[%d] is nil", ErrConfig, i)
		}
		def := t.Definition()
		name := def.Name
		if def.RequiresConfirmation || def.RequiresUserInput || def.ExternalExecution {
			// A tool call over MCP has no pause to wait for the review in:
			// the tool would run at once, as if none were configured.
			return fmt.Errorf("%w: tool %q is under human review (confirmation, user input or external execution), "+
				"which a call over MCP cannot wait for: serve it without human_review or give it to an agent", ErrConfig, name)
		}
		// The SDK keeps the last tool of a name: the built-in one would be
		// replaced without a word.
		for _, b := range BuiltinTools {
			if b.Name == name && on[b.Tag] {
				return fmt.Errorf("%w: tool %q has the name of a built-in tool (tag %q): rename it or exclude that tag", ErrConfig, name, b.Tag)
			}
		}
	}
	return nil
}
