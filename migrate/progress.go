package migrate

import "time"

// Progress is reported after each batch of the runs copy (and of Down's
// rebuild) so a CLI can draw a bar.
type Progress struct {
	// Step is e.g. "copy runs" or "rebuild runs column"; Table the table.
	Step  string `json:"step"`
	Table string `json:"table"`
	// SessionsDone counts sessions handled so far (including those committed by
	// an interrupted earlier attempt); SessionsTotal is the number to handle.
	SessionsDone  int64 `json:"sessions_done"`
	SessionsTotal int64 `json:"sessions_total"`
	// RunsCopied counts run rows written (or, in a dry run, that would be):
	// into the runs table by the copy, back into the legacy column by Down's
	// rebuild.
	RunsCopied int64 `json:"runs_copied"`
	// BadRows counts rows and elements recorded as not migratable.
	BadRows int64         `json:"bad_rows"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// RunsPerSecond is RunsCopied in this attempt over Elapsed.
	RunsPerSecond float64 `json:"runs_per_second"`
}

// Step is one version step applied (or, in a dry run, planned) to one table.
type Step struct {
	Table string `json:"table"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Actions describes what the step does, e.g. "add column user_id".
	Actions []string `json:"actions"`
}

// BadRow is a sessions row, or one element of its runs array, that the copy
// could not migrate. Position is -1 for the whole row.
type BadRow struct {
	SessionID string `json:"session_id"`
	Position  int    `json:"position"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail"`
}

// MaxListedBadRows bounds Summary.BadRows; the full list is in the errors table.
const MaxListedBadRows = 1000

// Summary is what Up or Down did (or, with DryRun, would do).
type Summary struct {
	DryRun bool `json:"dry_run"`
	// From and To map each table to its version before and after.
	From  map[string]string `json:"from"`
	To    map[string]string `json:"to"`
	Steps []Step            `json:"steps"`
	// SessionsScanned counts sessions with a legacy runs value read by the copy.
	SessionsScanned int64 `json:"sessions_scanned"`
	// SessionsRechecked counts sessions with bad rows recorded by an earlier
	// attempt that Up read again (their runs that now convert count in
	// RunsCopied, what is still bad in BadRowCount).
	SessionsRechecked int64 `json:"sessions_rechecked"`
	// SessionsRescanned counts sessions read again by the pass that looks
	// for runs written to the legacy column after an earlier copy read their
	// session (a 2.x process still writing; runs it finds count in
	// RunsCopied).
	SessionsRescanned int64 `json:"sessions_rescanned"`
	// RunsCopied counts run rows inserted; RunsRecopied counts rows
	// rewritten because a 2.x process changed their legacy element after
	// an earlier copy while the row was not written since; RunsSkipped
	// counts elements the runs table already held for their session
	// (copied earlier; a row Agentry wrote since is never overwritten). A
	// run whose run_id the table holds for another session is a bad row
	// (BadRunIDConflict), as is one changed on both sides
	// (BadRunEditedBothSides).
	RunsCopied   int64 `json:"runs_copied"`
	RunsRecopied int64 `json:"runs_recopied"`
	RunsSkipped  int64 `json:"runs_skipped"`
	// BadRowCount counts every bad row and element this Up found, including
	// those an earlier attempt recorded that are still bad; BadRows lists the
	// first MaxListedBadRows of them. The source is never deleted, and each
	// is also recorded once in Tables.Errors (agno_migration_errors:
	// table_name, session_id, position (-1 for the whole row), kind, detail,
	// created_at) until an Up finds it migratable.
	BadRowCount int64    `json:"bad_row_count"`
	BadRows     []BadRow `json:"bad_rows"`
	// SessionsRebuilt counts the sessions whose legacy runs column Down
	// rebuilt from the runs table, and RunsRestored the runs it wrote back.
	SessionsRebuilt int64 `json:"sessions_rebuilt"`
	RunsRestored    int64 `json:"runs_restored"`
	// DeletedRunsLeftOut counts the runs Down left out of the legacy
	// column (a dry run: would leave out) because they were deleted from
	// the runs table after Up copied them and their legacy element is still
	// the one copied (docs/adr/migrate-deleted-runs-stay-deleted.md).
	DeletedRunsLeftOut int64         `json:"deleted_runs_left_out"`
	Duration           time.Duration `json:"duration_ns"`
	// Learnings is the learnings table's entity memory re-key report (Up's
	// 3.0.0 step of that table); nil when the step did not run.
	Learnings *LearningsRekey `json:"learnings_rekey,omitempty"`
}

func (s *Summary) addBad(b BadRow) {
	s.BadRowCount++
	if len(s.BadRows) < MaxListedBadRows {
		s.BadRows = append(s.BadRows, b)
	}
}
