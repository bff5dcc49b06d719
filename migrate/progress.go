package migrate

import "time"

// Progress is reported after each batch of the runs copy (and of Down's
// rebuild) so a CLI can draw a bar.
type Progress struct {
	// Step is e.g. "copy runs" or "rebuild runs column"; Table the table.
	Step  string
	Table string
	// SessionsDone counts sessions handled so far (including those committed by
	// an interrupted earlier attempt); SessionsTotal is the number to handle.
	SessionsDone  int64
	SessionsTotal int64
	// RunsCopied counts run rows written (or, in a dry run, that would be).
	RunsCopied int64
	// BadRows counts rows and elements recorded as not migratable.
	BadRows int64
	Elapsed time.Duration
	// RunsPerSecond is RunsCopied in this attempt over Elapsed.
	RunsPerSecond float64
}

// Step is one version step applied (or, in a dry run, planned) to one table.
type Step struct {
	Table string
	From  string
	To    string
	// Actions describes what the step does, e.g. "add column user_id".
	Actions []string
}

// BadRow is a sessions row, or one element of its runs array, that the copy
// could not migrate. Position is -1 for the whole row.
type BadRow struct {
	SessionID string
	Position  int
	Kind      string
	Detail    string
}

// MaxListedBadRows bounds Summary.BadRows; the full list is in the errors table.
const MaxListedBadRows = 1000

// Summary is what Up or Down did (or, with DryRun, would do).
type Summary struct {
	DryRun bool
	From   map[string]string // table → version before
	To     map[string]string // table → version after
	Steps  []Step
	// SessionsScanned counts sessions with a legacy runs value read by the copy.
	SessionsScanned int64
	// RunsCopied counts run rows inserted; RunsSkipped counts elements whose
	// run_id was already in the table (a resumed copy, or a repeated run_id).
	RunsCopied  int64
	RunsSkipped int64
	// BadRowCount counts every bad row and element; BadRows lists the first
	// MaxListedBadRows of them. All are also in Tables.Errors.
	BadRowCount int64
	BadRows     []BadRow
	Duration    time.Duration
}

func (s *Summary) addBad(b BadRow) {
	s.BadRowCount++
	if len(s.BadRows) < MaxListedBadRows {
		s.BadRows = append(s.BadRows, b)
	}
}
