package db

import (
	"fmt"
	"math"
	"strings"

	"github.com/agentryhq/agentry/run"
)

// Sort orders.
const (
	Asc  = "asc"
	Desc = "desc"
)

// RunFilter selects runs. Limit is required (> 0); Page starts at 1. Empty
// fields do not filter. Default order: run_index ASC, created_at ASC.
type RunFilter struct {
	SessionID   string
	UserID      string
	AgentID     string
	TeamID      string
	WorkflowID  string
	ParentRunID string
	RunType     run.Type
	Statuses    []run.Status
	Limit       int
	Page        int
	// SortBy is "run_index" (default), "created_at" or "updated_at".
	SortBy    string
	SortOrder string
	// WithTotal asks for the total count of matching rows.
	WithTotal bool
	// AfterRunIndex is a keyset cursor for deep paging in run_index order: only
	// runs after it (ascending) or before it (descending) are returned. It needs
	// Page 1 and the run_index sort; pass the last run_index of the previous
	// page. Page numbers stay exact (OFFSET) but cost grows with the page; the
	// cursor costs the same on every page.
	AfterRunIndex *int64
}

// RunSortColumns are the columns GetRuns may sort by.
var RunSortColumns = []string{"run_index", "created_at", "updated_at"}

// HistoryQuery selects the runs that feed a new run's context: the last Limit
// runs of a session whose status is in history (not one of
// run.HistorySkipStatuses: PAUSED, CANCELLED, ERROR, REGENERATED) and that
// have no parent run (unless MemberRuns), returned oldest first.
type HistoryQuery struct {
	SessionID string
	// AgentID/TeamID, when set, keep only that component's runs.
	AgentID string
	TeamID  string
	Limit   int
	// MemberRuns keeps the runs that have a parent run too: a team
	// member's history is its own runs in the team's session, which are
	// member runs of the team's runs (as Agno reads a member's history).
	MemberRuns bool
	// Cached lists runs whose run_data the caller already holds, as stored
	// at UpdatedAt with Size bytes. A driver may return such a run without
	// reading its run_data again: RunData is then nil (every other returned
	// run has its run_data). A driver checks UpdatedAt and, where the
	// backend can do it without reading the value, Size against the stored
	// row; a changed row comes back with its run_data.
	Cached []CachedRun
	// ReadOnlySession promises that the caller of SessionHistoryRefs
	// neither changes the returned session nor its JSON columns, nor the
	// returned refs: an in-process driver (db/memory), whose stored rows are
	// replaced on write and never changed in place, then returns its stored
	// values instead of copies (one copy of the session row less per turn,
	// and of the refs when the query selects a whole tail of the session).
	ReadOnlySession bool
}

// CachedRun names a run whose run_data a HistoryQuery caller holds.
type CachedRun struct {
	RunID     string
	UpdatedAt int64
	Size      int
}

// SessionFilter selects sessions. Limit is required; Page starts at 1.
type SessionFilter struct {
	SessionType run.Type
	// ComponentID matches agent_id, team_id or workflow_id per SessionType.
	ComponentID string
	UserID      string
	// SessionName matches a case-insensitive substring of session_data.session_name.
	SessionName string
	Limit       int
	Page        int
	// SortBy is "created_at" (default) or "updated_at".
	SortBy    string
	SortOrder string
}

// SessionSortColumns are the columns ListSessions may sort by.
var SessionSortColumns = []string{"created_at", "updated_at"}

// MemoryFilter selects memories. Limit is required; Page starts at 1.
type MemoryFilter struct {
	UserID  string
	AgentID string
	TeamID  string
	// Topics keeps memories having any of these topics.
	Topics []string
	// SearchContent matches a case-insensitive substring of the memory text.
	SearchContent string
	Limit         int
	Page          int
	// SortBy is "updated_at" (default) or "created_at".
	SortBy    string
	SortOrder string
}

// MemorySortColumns are the columns ListMemories may sort by.
var MemorySortColumns = []string{"updated_at", "created_at"}

// checkPage validates limit, page, sort column and order in place, filling
// defaults for sortBy and order.
func checkPage(limit, page int, sortBy, order *string, allowed []string, defaultOrder string) error {
	if limit <= 0 {
		return fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, limit)
	}
	if page < 1 {
		return fmt.Errorf("%w: page must be >= 1, got %d", ErrInvalidFilter, page)
	}
	if PageOffsetOverflows(limit, page) {
		return fmt.Errorf("%w: page %d is too large for limit %d (its row offset does not fit an int64)", ErrInvalidFilter, page, limit)
	}
	if *sortBy == "" {
		*sortBy = allowed[0]
	} else if !contains(allowed, *sortBy) {
		return fmt.Errorf("%w: cannot sort by %q (allowed: %s)", ErrInvalidFilter, *sortBy, strings.Join(allowed, ", "))
	}
	switch strings.ToLower(*order) {
	case "":
		*order = defaultOrder
	case Asc, Desc:
		*order = strings.ToLower(*order)
	default:
		return fmt.Errorf("%w: sort order must be asc or desc, got %q", ErrInvalidFilter, *order)
	}
	return nil
}

// PageOffsetOverflows reports whether page's row offset, (page-1)*limit, is
// past the int64 range: a driver would wrap it to a negative OFFSET (an
// error on Postgres and MySQL, page 1 on SQLite, a panic in memory).
func PageOffsetOverflows(limit, page int) bool {
	return limit > 0 && page > 1 && int64(page-1) > math.MaxInt64/int64(limit)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
