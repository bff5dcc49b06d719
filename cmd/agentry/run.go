package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool/builtin"
)

type runFlags struct {
	model        string
	configFile   string
	agentID      string
	dsn          string
	sessionID    string
	userID       string
	instructions []string
	tools        []string
	stream       bool
	jsonOut      bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] MESSAGE...",
		Short: "Run an agent once and print its answer",
		Long: `Run an agent once and print its streamed answer.

The agent comes from --config FILE and/or flags; flags win. FILE is read as
'agentry serve --config' reads it: one agent (the shape of an agents: entry, YAML
or JSON) or a whole AgentOS file, whose agent --agent ID picks (examples/offline.yaml
and examples/agentos.yaml in the repository are both). The file's server, db and
auth settings are serve's: run stores only with --db. Models are named
provider:model_id:
  openai:gpt-4o-mini      (OPENAI_API_KEY)
  anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY)
  ollama:llama3.2         (OLLAMA_HOST, default http://localhost:11434)
  openai-compatible:ID    (OPENAI_BASE_URL)
  scripted:FILE           (a deterministic script; works offline)

With --db the run and its session are stored (a SQLite path, postgres://… or
mysql://…) and --session continues a conversation.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runOnce(cmd, f, strings.Join(args, " ")) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model as provider:model_id (see above)")
	fl.StringVarP(&f.configFile, "config", "c", "", "agent file, or AgentOS file with --agent (YAML or JSON)")
	fl.StringVar(&f.agentID, "agent", "", "with --config: the id of the agent to run (default: the file's only agent)")
	fl.StringVar(&f.dsn, "db", "", "database DSN to store the run in (default: not stored)")
	fl.StringVar(&f.sessionID, "session", "", "session id (default: a new session)")
	fl.StringVar(&f.userID, "user", "", "user id")
	fl.StringArrayVar(&f.instructions, "instructions", nil, "instruction for the agent (repeatable)")
	fl.StringSliceVar(&f.tools, "tool", nil, "built-in tool to give the agent (repeatable)")
	fl.BoolVar(&f.stream, "stream", true, "print the answer as it streams")
	fl.BoolVar(&f.jsonOut, "json", false, "print the whole run as JSON instead of the answer")
	return cmd
}

func runOnce(cmd *cobra.Command, f runFlags, message string) error {
	ctx := cmd.Context()
	var decl config.Agent
	if f.configFile != "" {
		var err error
		if decl, err = config.LoadAgent(f.configFile, f.agentID); err != nil {
			return err
		}
	}
	if f.agentID != "" && f.configFile == "" {
		return errors.New("--agent picks an agent of the --config file: pass --config FILE too")
	}
	if f.model != "" {
		decl.Model.Spec = f.model
	}
	if decl.Model.Spec == "" {
		return errors.New("no model: pass --model provider:model_id (e.g. scripted:examples/hello.script.yaml) or --config FILE")
	}
	if len(f.instructions) > 0 {
		decl.Instructions = f.instructions
	}
	for _, t := range f.tools {
		decl.Tools = append(decl.Tools, config.Tool{Name: t})
	}
	// An agent with neither id nor name is stored as cli-agent; errors about
	// it name the file or the flags, not that made-up id.
	unnamed := decl.ID == "" && decl.Name == ""
	if unnamed {
		decl.ID = "cli-agent"
	}
	// Flags are checked before the database is opened: a typo creates no file.
	if err := checkRunFlags(f); err != nil {
		return err
	}
	if err := checkRunSettings(f, decl); err != nil {
		return err
	}
	var store *db.DB
	if f.dsn != "" {
		var err error
		if store, err = openStore(ctx, f.dsn, dsn.Options{}); err != nil {
			return err
		}
		defer store.Close()
	}
	ag, err := decl.Build(store)
	if err != nil {
		if inner := errors.Unwrap(err); unnamed && inner != nil {
			if f.configFile != "" {
				return fmt.Errorf("%s: %w", f.configFile, inner)
			}
			return inner
		}
		return err
	}
	opts := []agent.RunOption{agent.WithSessionID(f.sessionID), agent.WithUserID(f.userID)}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.jsonOut || !f.stream {
		res, err := ag.Run(ctx, run.TextInput(message), opts...)
		if err != nil && res == nil {
			return err
		}
		if f.jsonOut {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out, res.ContentString())
		}
		return runResultError(res)
	}
	return printStream(ag, cmd, message, opts, out, errOut)
}

// checkRunFlags checks the model and tools named by flags before the agent is
// built, so an error names the flag (--model, --tool) rather than a config
// entry the user never wrote.
func checkRunFlags(f runFlags) error {
	if f.model != "" {
		_, err := modelspec.New(f.model, modelspec.Options{NoRetry: true})
		var mk *modelspec.MissingKeyError
		switch {
		case errors.As(err, &mk):
			return fmt.Errorf("--model %s needs an API key: set %s in the environment (or try Agentry offline: --model scripted:examples/hello.script.yaml)", f.model, mk.EnvVar)
		case err != nil:
			return fmt.Errorf("--model %s: %w", f.model, err)
		}
	}
	for _, t := range f.tools {
		if !builtin.Has(t) {
			return fmt.Errorf("--tool %s: unknown tool (built-in tools: %s)", t, strings.Join(builtin.Names(), ", "))
		}
	}
	return nil
}

// checkRunSettings refuses, naming the key, the file's settings a run
// without the server or without --db cannot honour: the server's knowledge
// base, and what is stored in the database (agent.New's errors name Go
// fields: "need Config.DB"). add_history_to_context is allowed: a run in a
// new session has no history to add, with or without --db.
func checkRunSettings(f runFlags, decl config.Agent) error {
	where := f.configFile
	if f.agentID != "" {
		where += ": agent " + f.agentID
	}
	if decl.Knowledge {
		return fmt.Errorf("%s: knowledge: true needs the server's knowledge base: serve the agent with agentry serve (agentry run has none)", where)
	}
	if f.dsn != "" {
		return nil
	}
	if f.sessionID != "" {
		return errors.New("--session continues a stored conversation: pass --db too (without --db nothing is stored, so there is none to continue)")
	}
	for _, s := range []struct {
		on  bool
		key string
	}{
		{decl.UpdateMemoryOnRun, "update_memory_on_run"}, {decl.EnableAgenticMemory, "enable_agentic_memory"},
		{decl.EnableSessionSummaries, "enable_session_summaries"}, {decl.SearchPastSessions, "search_past_sessions"},
		{decl.OffloadToolResults.On() != nil, "offload_tool_results"},
	} {
		if s.on {
			return fmt.Errorf("%s: %s needs --db: what it keeps is stored in the database", where, s.key)
		}
	}
	return nil
}

func printStream(ag *agent.Agent, cmd *cobra.Command, message string, opts []agent.RunOption, out, errOut io.Writer) error {
	var failed error
	wrote := false
	for ev, err := range ag.Stream(cmd.Context(), run.TextInput(message), opts...) {
		if err != nil {
			return err
		}
		switch ev.Event {
		case run.EventRunContent:
			if s, ok := ev.Content.(string); ok {
				fmt.Fprint(out, s)
				wrote = wrote || s != ""
			}
		case run.EventToolCallStarted:
			if ev.Tool != nil {
				fmt.Fprintf(errOut, "→ %s(%s)\n", ev.Tool.ToolName, ev.Tool.ToolArgs)
			}
		case run.EventToolCallError:
			if ev.Tool != nil {
				fmt.Fprintf(errOut, "✗ %s: %s\n", ev.Tool.ToolName, ev.Tool.Result)
			}
		case run.EventRunCompleted:
			if !wrote {
				// Structured output or a model that streamed nothing: print the whole content.
				if b, err := json.Marshal(ev.Content); err == nil && ev.Content != nil {
					if s, ok := ev.Content.(string); ok {
						fmt.Fprint(out, s)
					} else {
						out.Write(b)
					}
				}
			}
			fmt.Fprintln(out)
			fmt.Fprintf(errOut, "run %s · session %s\n", ev.RunID, ev.SessionID)
		case run.EventRunPaused:
			fmt.Fprintln(out)
			failed = &exitError{code: 3, err: fmt.Errorf("run %s paused: it needs confirmation or input (continue it through the AgentOS API)", ev.RunID)}
		case run.EventRunError:
			failed = fmt.Errorf("run failed: %v", ev.Content)
		case run.EventRunCancelled:
			failed = fmt.Errorf("run cancelled: %s", ev.Reason)
		}
	}
	return failed
}

func runResultError(res *run.Output) error {
	switch res.Status {
	case run.StatusError:
		return fmt.Errorf("run failed: %s", res.ContentString())
	case run.StatusCancelled:
		return errors.New("run cancelled")
	case run.StatusPaused:
		return &exitError{code: 3, err: fmt.Errorf("run %s paused: it needs confirmation or input", res.RunID)}
	}
	return nil
}
