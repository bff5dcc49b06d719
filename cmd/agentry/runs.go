package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/run"
)

// openReadOnly opens the database for a read command: nothing is created
// or changed in it, and a missing SQLite file is an error naming it.
func openReadOnly(cmd *cobra.Command, s string) (*db.DB, error) {
	return openStore(cmd.Context(), s, dsn.Options{ReadOnly: true})
}

func newRunsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Read stored runs"}
	var dbFlag string
	cmd.PersistentFlags().StringVar(&dbFlag, "db", defaultDSN, dbFlagHelp)

	var f db.RunFilter
	var statuses []string
	var jsonOut bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs of a session (or matching the filters), one page",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range statuses {
				st, err := run.ParseStatus(s)
				if err != nil {
					return err
				}
				f.Statuses = append(f.Statuses, st)
			}
			store, err := openReadOnly(cmd, dbFlag)
			if err != nil {
				return err
			}
			defer store.Close()
			f.WithTotal = true
			runs, total, err := store.GetRuns(cmd.Context(), f)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				rows := make([]json.RawMessage, len(runs))
				for i := range runs {
					rows[i] = runs[i].RunData
				}
				return json.NewEncoder(out).Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INDEX\tRUN ID\tSTATUS\tTYPE\tCOMPONENT\tCREATED\tCONTENT")
			for i := range runs {
				r := &runs[i]
				idx := "-"
				if r.RunIndex != nil {
					idx = fmt.Sprint(*r.RunIndex)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", idx, r.RunID, r.Status, r.RunType,
					cmp.Or(r.AgentID, r.TeamID, r.WorkflowID), time.Unix(r.CreatedAt, 0).UTC().Format(time.RFC3339), preview(r))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			pages := (total + f.Limit - 1) / f.Limit
			_, err = fmt.Fprintf(cmd.ErrOrStderr(), "page %d of %d · %d runs\n", f.Page, max(pages, 1), total)
			return err
		},
	}
	fl := list.Flags()
	fl.StringVar(&f.SessionID, "session", "", "session id")
	fl.StringVar(&f.UserID, "user", "", "user id")
	fl.StringVar(&f.AgentID, "agent", "", "agent id")
	fl.StringVar(&f.TeamID, "team", "", "team id")
	fl.StringVar(&f.WorkflowID, "workflow", "", "workflow id")
	fl.StringSliceVar(&statuses, "status", nil, "status (repeatable): PENDING, RUNNING, COMPLETED, PAUSED, CANCELLED, ERROR")
	fl.IntVar(&f.Limit, "limit", 20, "runs per page (required to be positive)")
	fl.IntVar(&f.Page, "page", 1, "page, from 1")
	fl.StringVar(&f.SortBy, "sort-by", "", "run_index (default), created_at or updated_at")
	fl.StringVar(&f.SortOrder, "sort-order", "", "asc (default) or desc")
	fl.BoolVar(&jsonOut, "json", false, "print run_data as a JSON array")

	get := &cobra.Command{
		Use:   "get RUN_ID",
		Short: "Print one run (its run_data) as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := openReadOnly(cmd, dbFlag)
			if err != nil {
				return err
			}
			defer store.Close()
			r, err := store.GetRun(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("run %s: %w", args[0], err)
			}
			var v any
			if err := json.Unmarshal(r.RunData, &v); err != nil {
				return &db.CorruptRowError{Table: "runs", ID: r.RunID, Err: err}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		},
	}
	cmd.AddCommand(list, get)
	return cmd
}

// preview is the first line of a run's content, shortened for a table.
func preview(r *db.Run) string {
	o, err := r.Output()
	if err != nil {
		return "(corrupt run_data)"
	}
	s, _, _ := strings.Cut(o.ContentString(), "\n")
	if rs := []rune(s); len(rs) > 60 {
		s = string(rs[:57]) + "..."
	}
	return s
}
