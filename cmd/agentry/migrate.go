package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/migrate"
)

type migrateFlags struct {
	dsn         string
	schema      string
	dryRun      bool
	batchSize   int
	lockTimeout time.Duration
	jsonOut     bool
	// purgeLearnings: up deletes entity memory rows it cannot re-key safely.
	purgeLearnings bool
}

func newMigrateCmd() *cobra.Command {
	var f migrateFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Upgrade (or downgrade) an Agno/Agentry database's schema",
		Long: `Move a database between schema versions (` + strings.Join(migrate.Versions, ", ") + `).

An Agno 2.x database keeps runs inside the sessions table's "runs" column; "up"
copies them into the runs table (resumably: run it again after an interruption)
and keeps the legacy column as a frozen backup until "cleanup".`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.dsn, "db", defaultDSN, dbFlagHelp)
	pf.StringVar(&f.schema, "schema", "", "Postgres schema holding the tables (default ai)")
	pf.BoolVar(&f.dryRun, "dry-run", false, "print what would change without writing")
	pf.IntVar(&f.batchSize, "batch-size", 0, "sessions per copy transaction (default 500)")
	pf.DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait this long for another migration of the same database (default 30s)")
	pf.BoolVar(&f.jsonOut, "json", false, "print the result as JSON")

	var to string
	up := &cobra.Command{
		Use:   "up [--to VERSION]",
		Short: "Apply every step up to VERSION (default the latest)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withManager(cmd, f, f.dryRun, func(m *migrate.Manager) error {
				sum, err := m.Up(cmd.Context(), to)
				return reportSummary(cmd, f, "up", sum, err)
			})
		},
	}
	up.Flags().StringVar(&to, "to", "", "target version (default "+migrate.Latest+")")
	up.Flags().BoolVar(&f.purgeLearnings, "purge-unrecoverable-learnings", false,
		"delete namespace-user entity memory rows the 3.0.0 re-key cannot move (written by two users, or without an owner) instead of quarantining or keeping them")

	var downTo string
	down := &cobra.Command{
		Use:   "down --to VERSION",
		Short: "Step back down to VERSION (3.0.0→2.5.6 rebuilds the runs column from the runs table)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if downTo == "" {
				return errors.New("down needs --to VERSION (one of " + strings.Join(migrate.Versions, ", ") + ")")
			}
			return withManager(cmd, f, f.dryRun, func(m *migrate.Manager) error {
				sum, err := m.Down(cmd.Context(), downTo)
				return reportSummary(cmd, f, "down", sum, err)
			})
		},
	}
	down.Flags().StringVar(&downTo, "to", "", "target version (required)")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show each table's schema version and pending steps",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withManager(cmd, f, true, func(m *migrate.Manager) error {
				st, err := m.Status(cmd.Context())
				if err != nil {
					return err
				}
				if f.jsonOut {
					return writeJSON(cmd.OutOrStdout(), st)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TABLE\tVERSION\tTARGET\tPENDING\tNOTES")
				for _, s := range st {
					cur := s.Current
					if !s.Exists {
						cur = "(missing)"
					}
					var notes []string
					if s.LegacyRunsColumn {
						notes = append(notes, fmt.Sprintf("legacy runs column (%d rows with runs)", s.RowsWithRuns))
					}
					if s.CopyCheckpoint != "" {
						notes = append(notes, "interrupted copy: resume with "+migrateHint(f, "up"))
					}
					if s.DownInterrupted {
						notes = append(notes, "interrupted down (runs written back, runs table dropped): finish with "+migrateHint(f, "down --to 2.5.6")+" (or the older version it was going to)")
					}
					if s.UncopiedRuns > 0 {
						changed := ""
						if s.ChangedRuns > 0 {
							changed = fmt.Sprintf(" (%d of them changed after they were copied)", s.ChangedRuns)
						}
						notes = append(notes, fmt.Sprintf("%d legacy runs in %d sessions not in the runs table%s (e.g. %s): `agentry migrate up` copies those written or changed after it ran; cleanup keeps the column until then",
							s.UncopiedRuns, s.UncopiedSessions, changed, strings.Join(s.UncopiedExamples, ", ")))
					}
					if s.BadRowsRecorded > 0 {
						notes = append(notes, fmt.Sprintf("%d bad rows recorded in agno_migration_errors (`migrate up` retries them)", s.BadRowsRecorded))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Table, cur, s.Target, strings.Join(s.Pending, " → "), strings.Join(notes, "; "))
				}
				return tw.Flush()
			})
		},
	}

	var cleanOpts migrate.CleanupOptions
	cleanup := &cobra.Command{
		Use:   "cleanup [--force [--discard-uncopied-runs]]",
		Short: "Drop the sessions table's legacy 2.x runs column",
		Long: `Drop the sessions table's legacy 2.x "runs" column once runs live in the runs table.

It first reads the whole column and checks that the runs table holds every run
in it (by run_id, under its session). It refuses while some are missing: runs
a 2.x process wrote after "migrate up" (run "migrate up" again to copy them)
and runs "migrate up" cannot copy (listed in the migration errors table: fix
or remove them in the column, then run "migrate up" again). Session writes
wait while it checks and drops.

Without --force it also refuses while any session holds runs in the column
(a backup of copied runs). --discard-uncopied-runs (with --force) drops the
column even though it holds runs the runs table lacks: they are lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withManager(cmd, f, f.dryRun, func(m *migrate.Manager) error {
				res, err := m.CleanupLegacyRunsColumn(cmd.Context(), cleanOpts)
				if errors.Is(err, migrate.ErrNotMigrated) || errors.Is(err, migrate.ErrUncopiedRuns) {
					return fmt.Errorf("%w\nrun: %s", err, migrateHint(f, "up"))
				}
				if err != nil {
					return err
				}
				if f.jsonOut {
					return writeJSON(cmd.OutOrStdout(), res)
				}
				out := cmd.OutOrStdout()
				switch {
				case res.AlreadyGone:
					fmt.Fprintf(out, "%s: the legacy runs column is already gone\n", res.Table)
				case f.dryRun:
					fmt.Fprintf(out, "%s: would drop the legacy runs column (%d rows hold runs)\n", res.Table, res.RowsWithRuns)
				default:
					fmt.Fprintf(out, "%s: dropped the legacy runs column (%d rows held runs)\n", res.Table, res.RowsWithRuns)
				}
				if res.UncopiedRuns > 0 {
					verb := "discarded"
					if f.dryRun {
						verb = "would discard"
					}
					fmt.Fprintf(out, "WARNING: %s %d legacy runs in %d sessions that are not in the runs table (e.g. %s)\n",
						verb, res.UncopiedRuns, res.UncopiedSessions, strings.Join(res.UncopiedExamples, ", "))
				}
				return nil
			})
		},
	}
	cleanup.Flags().BoolVar(&cleanOpts.Force, "force", false, "drop the column although rows hold runs, provided the runs table holds every one of them")
	cleanup.Flags().BoolVar(&cleanOpts.DiscardUncopiedRuns, "discard-uncopied-runs", false,
		"with --force: drop the column even though it holds runs the runs table does not (THEY ARE LOST)")

	cmd.AddCommand(status, up, down, cleanup)
	return cmd
}

// migrateHint is the command, in backquotes, that runs `agentry migrate
// verb` on the database f names: the same --db without its password (no
// output repeats one; as openStore's hint) and the same --schema (without
// it, the command would work on the default schema).
func migrateHint(f migrateFlags, verb string) string {
	d, err := dsn.Parse(f.dsn)
	if err != nil { // withManager parsed it; never echo what it refused
		return "`agentry migrate " + verb + " --db DSN`"
	}
	h := "`agentry migrate " + verb + " --db " + shellQuote(d.String())
	if f.schema != "" {
		h += " --schema " + shellQuote(f.schema)
	}
	h += "`"
	if d.HasPassword() {
		h += " (with the password in place of xxxxx)"
	}
	return h
}

// withManager opens the database through the db front (read-only for
// status and dry runs: nothing is created or changed, not even a SQLite
// file's journal mode; a missing SQLite file is an error), builds a Manager
// with progress reporting and runs fn.
func withManager(cmd *cobra.Command, f migrateFlags, readOnly bool, fn func(*migrate.Manager) error) error {
	store, err := openStore(cmd.Context(), f.dsn, dsn.Options{SkipSchemaCheck: true, MustExist: true, ReadOnly: readOnly, Schema: f.schema})
	if err != nil {
		return err
	}
	defer store.Close()
	errOut := cmd.ErrOrStderr()
	prog := newProgressReporter(errOut, f.dryRun)
	defer prog.finish()
	m, release, err := migrate.ForDB(store, migrate.Config{
		BatchSize: f.batchSize, DryRun: f.dryRun, LockTimeout: f.lockTimeout, Progress: prog.report,
		PurgeUnrecoverableLearnings: f.purgeLearnings,
		Logger:                      slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		return err
	}
	defer release()
	return fn(m)
}

func reportSummary(cmd *cobra.Command, f migrateFlags, what string, sum *migrate.Summary, err error) error {
	if sum != nil {
		if f.jsonOut {
			if jerr := writeJSON(cmd.OutOrStdout(), sum); jerr != nil {
				return jerr
			}
		} else {
			printSummary(cmd.OutOrStdout(), what, sum)
		}
	}
	if err != nil {
		return err
	}
	if sum != nil && sum.BadRowCount > 0 {
		// Bad rows never stop a migration but must not pass silently.
		return &exitError{code: 2, err: fmt.Errorf("%d legacy rows or runs could not be migrated (listed above; all are in the migration errors table; the source rows were kept)", sum.BadRowCount)}
	}
	return nil
}

func printSummary(w io.Writer, what string, s *migrate.Summary) {
	prefix := ""
	if s.DryRun {
		prefix = "(dry run) "
	}
	if len(s.Steps) == 0 && s.RunsCopied == 0 && s.RunsRecopied == 0 {
		fmt.Fprintf(w, "%snothing to do: every table is already at its target\n", prefix)
	}
	for _, st := range s.Steps {
		actions := strings.Join(st.Actions, "; ")
		if actions == "" {
			actions = "version stamp only (no change to the table)"
		}
		fmt.Fprintf(w, "%s%s %s → %s: %s\n", prefix, st.Table, st.From, st.To, actions)
	}
	took := s.Duration.Round(time.Millisecond)
	switch {
	case what == "down" && s.DryRun:
		fmt.Fprintf(w, "%sdown: would rebuild the runs column of %d sessions (%d runs), in %s\n", prefix, s.SessionsRebuilt, s.RunsRestored, took)
	case what == "down":
		fmt.Fprintf(w, "down: rebuilt the runs column of %d sessions (%d runs), in %s\n", s.SessionsRebuilt, s.RunsRestored, took)
	case s.DryRun:
		fmt.Fprintf(w, "%sup: would copy %d runs (%d sessions scanned, %d runs already present), %d bad rows, in %s\n",
			prefix, s.RunsCopied, s.SessionsScanned, s.RunsSkipped, s.BadRowCount, took)
	default:
		fmt.Fprintf(w, "up: %d sessions scanned, %d runs copied, %d already present, %d bad rows, in %s\n",
			s.SessionsScanned, s.RunsCopied, s.RunsSkipped, s.BadRowCount, took)
	}
	if what == "down" && s.DeletedRunsLeftOut > 0 {
		verb := "left out"
		if s.DryRun {
			verb = "would leave out"
		}
		fmt.Fprintf(w, "%sdown: %s %d runs deleted after up copied them (they stay deleted)\n", prefix, verb, s.DeletedRunsLeftOut)
	}
	if s.RunsRecopied > 0 {
		verb := "copied again"
		if s.DryRun {
			verb = "would copy again"
		}
		fmt.Fprintf(w, "%sup: %s %d runs a 2.x process changed in the legacy runs column after an earlier copy\n", prefix, verb, s.RunsRecopied)
	}
	if s.SessionsRescanned > 0 {
		fmt.Fprintf(w, "%sup: read the legacy runs column of %d sessions again for runs written after an earlier copy\n", prefix, s.SessionsRescanned)
	}
	if s.SessionsRechecked > 0 {
		fmt.Fprintf(w, "%sup: rechecked %d sessions with bad rows recorded by an earlier attempt\n", prefix, s.SessionsRechecked)
	}
	for _, b := range s.BadRows {
		pos := "whole row"
		if b.Position >= 0 {
			pos = fmt.Sprintf("run #%d", b.Position)
		}
		fmt.Fprintf(w, "  bad: session %s, %s: %s (%s)\n", b.SessionID, pos, b.Kind, b.Detail)
	}
	if s.BadRowCount > int64(len(s.BadRows)) {
		fmt.Fprintf(w, "  … and %d more in the migration errors table\n", s.BadRowCount-int64(len(s.BadRows)))
	}
	if l := s.Learnings; l != nil {
		for _, b := range []struct {
			name string
			ids  []string
		}{{"contaminated_keyed", l.ContaminatedKeyed}, {"unowned", l.Unowned}, {"malformed", l.Malformed}, {"conflicts", l.Conflicts}, {"failed", l.Failed}} {
			if len(b.ids) == 0 {
				continue
			}
			shown := b.ids
			if len(shown) > 10 {
				shown = shown[:10]
			}
			fmt.Fprintf(w, "  %slearnings %s (left in place): %s", prefix, b.name, strings.Join(shown, ", "))
			if len(b.ids) > len(shown) {
				fmt.Fprintf(w, " … and %d more (--json lists all)", len(b.ids)-len(shown))
			}
			fmt.Fprintln(w)
		}
	}
}

// progressReporter draws a bar on a terminal and logs plain lines otherwise.
type progressReporter struct {
	w        io.Writer
	tty      bool
	dryRun   bool
	bar      *progressbar.ProgressBar
	step     string
	lastLine time.Time
}

func newProgressReporter(w io.Writer, dryRun bool) *progressReporter {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progressReporter{w: w, tty: tty, dryRun: dryRun}
}

// runsWord says what a step's run count is.
func (p *progressReporter) runsWord(step string) string {
	switch {
	case strings.HasPrefix(step, "rebuild") && p.dryRun:
		return "runs to write back"
	case strings.HasPrefix(step, "rebuild"):
		return "runs written back"
	case p.dryRun:
		return "runs to copy"
	}
	return "runs copied"
}

func (p *progressReporter) report(pr migrate.Progress) {
	if p.tty {
		if p.bar == nil || pr.Step != p.step {
			p.finish()
			p.step = pr.Step
			p.bar = progressbar.NewOptions64(max(pr.SessionsTotal, 1),
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(pr.Step+" ("+pr.Table+")"),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionShowElapsedTimeOnFinish(),
				progressbar.OptionThrottle(100*time.Millisecond),
				// End the bar's line at 100 %: what is written next (a log
				// line, the summary) starts on a line of its own.
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
			)
		}
		p.bar.Describe(fmt.Sprintf("%s: %d %s, %.0f runs/s", pr.Step, pr.RunsCopied, p.runsWord(pr.Step), pr.RunsPerSecond))
		_ = p.bar.Set64(pr.SessionsDone)
		return
	}
	if now := time.Now(); now.Sub(p.lastLine) >= time.Second || pr.SessionsDone == pr.SessionsTotal {
		p.lastLine = now
		fmt.Fprintf(p.w, "%s %s: %d/%d sessions, %d %s, %d bad, %.0f runs/s\n",
			pr.Step, pr.Table, pr.SessionsDone, pr.SessionsTotal, pr.RunsCopied, p.runsWord(pr.Step), pr.BadRows, pr.RunsPerSecond)
	}
}

// finish ends a bar that stopped short of 100 % (an interrupted step), so
// the error that follows starts on a line of its own.
func (p *progressReporter) finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit() // runs OptionOnCompletion: ends the line
	}
	p.bar = nil
}
