package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/model"
)

type evalFlags struct {
	configFile string
	dsn        string
	userID     string
	jsonOut    bool
}

// Exit codes of `agentry eval`: 0 all cases passed, 1 the command failed
// (bad file, no database), 2 at least one case failed or could not run.
const exitEvalFailed = 2

func newEvalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval [flags] FILE",
		Short: "Run eval cases against the agents of a config file and print the results",
		Long: `Run a YAML file of eval cases (accuracy, performance, reliability,
agent_as_judge) against the agents, teams and workflows of --config FILE (an
AgentOS file, as 'agentry serve --config' reads it) and print a table of
results; --json prints them as JSON. Judge models are provider:model_id specs
(judge_model: on the file or a case), as for 'agentry run --model'.

With --db each result is stored in agno_eval_runs (keyed by run_id), where
GET /eval-runs and Agno read it; --user owns the rows.

Exit status: 0 when every case passed, 2 when one failed or could not run,
1 when the command itself failed. The cases file is documented on eval.Suite.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runEval(cmd, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.configFile, "config", "c", "", "AgentOS file declaring the agents, teams and workflows the cases name (required)")
	fl.StringVar(&f.dsn, "db", "", "database DSN to store the runs and eval results in (default: not stored)")
	fl.StringVar(&f.userID, "user", "", "user id owning the stored eval runs")
	fl.BoolVar(&f.jsonOut, "json", false, "print the results as JSON")
	return cmd
}

func runEval(cmd *cobra.Command, f evalFlags, casesFile string) error {
	ctx := cmd.Context()
	data, err := os.ReadFile(casesFile)
	if err != nil {
		return fmt.Errorf("read eval cases: %w", err)
	}
	suite, err := eval.ParseSuite(data)
	if err != nil {
		return fmt.Errorf("%s: %w", casesFile, err)
	}
	if f.configFile == "" {
		return errors.New("--config FILE is required: the AgentOS file that declares the agents the cases name")
	}
	file, err := config.Load(f.configFile, func(string) (string, bool) { return "", false })
	if err != nil {
		return err
	}
	var store *db.DB
	if f.dsn != "" {
		if store, err = openStore(ctx, f.dsn, dsn.Options{}); err != nil {
			return err
		}
		defer store.Close()
	}
	agents := make([]*agent.Agent, 0, len(file.Agents))
	for _, decl := range file.Agents {
		a, err := decl.Build(store)
		if err != nil {
			return err
		}
		defer a.Close()
		agents = append(agents, a)
	}
	teams, workflows, err := file.BuildTeamsAndWorkflows(store, agents, config.BuildOptions{})
	if err != nil {
		return err
	}
	components := map[string]agent.Runner{}
	for _, a := range agents {
		components["agent/"+a.ID()] = a
	}
	for _, t := range teams {
		components["team/"+t.Component().ID] = t
	}
	for _, w := range workflows {
		components["workflow/"+w.Component().ID] = w
	}
	base := filepath.Dir(casesFile)
	resolver := eval.Resolver{
		Component: func(kind, id string) (agent.Runner, error) {
			if c, ok := components[kind+"/"+id]; ok {
				return c, nil
			}
			return nil, fmt.Errorf("no %s %q in %s", kind, id, f.configFile)
		},
		Model: func(spec string) (model.Model, error) {
			// A scripted judge's path is relative to the cases file.
			if p, ok := strings.CutPrefix(spec, "scripted:"); ok && !filepath.IsAbs(p) {
				spec = "scripted:" + filepath.Join(base, p)
			}
			return modelspec.New(spec, modelspec.Options{})
		},
	}
	results := suite.Run(ctx, resolver, store, f.userID)
	out := cmd.OutOrStdout()
	if f.jsonOut {
		if err := writeJSON(out, results); err != nil {
			return err
		}
	} else {
		printEvalTable(out, results)
	}
	failed := 0
	for _, r := range results {
		if !r.Passed {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{code: exitEvalFailed, err: fmt.Errorf("%d of %d eval cases failed", failed, len(results))}
	}
	return nil
}

func printEvalTable(w io.Writer, results []eval.CaseResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tTYPE\tRESULT\tDETAILS\tRUN ID")
	passed := 0
	for _, r := range results {
		verdict, details := "FAIL", r.Summary
		if r.Passed {
			verdict = "PASS"
			passed++
		}
		if r.Error != "" {
			verdict, details = "ERROR", r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, verdict, strings.ReplaceAll(details, "\t", " "), r.RunID)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d/%d passed\n", passed, len(results))
}
