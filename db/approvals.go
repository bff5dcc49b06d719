package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Approval is one row of agno_approvals (Agno 3.0's review queue): a paused
// run's request for a person's decision. The user scope applies to it
// through UserID.
type Approval struct {
	ID        string
	RunID     string
	SessionID string
	// Status is pending, approved, rejected, expired or cancelled.
	Status string
	// SourceType is agent, team or workflow.
	SourceType string
	// ApprovalType is required or audit.
	ApprovalType string
	// PauseType is what the run waits for: confirmation, user_input,
	// route_selection, output_review, external_execution.
	PauseType      string
	ToolName       string
	ToolArgs       json.RawMessage
	ExpiresAt      int64
	AgentID        string
	TeamID         string
	WorkflowID     string
	UserID         string
	ScheduleID     string
	ScheduleRunID  string
	SourceName     string
	Requirements   json.RawMessage
	Context        json.RawMessage
	ResolutionData json.RawMessage
	ResolvedBy     string
	ResolvedAt     int64
	CreatedAt      int64
	UpdatedAt      int64
	// RunStatus is the run's status as last recorded (PAUSED until the run
	// is continued or ends).
	RunStatus string
}

// Approval statuses.
const (
	ApprovalPending   = "pending"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
	ApprovalExpired   = "expired"
	ApprovalCancelled = "cancelled"
)

// ApprovalFilter selects approvals; empty fields do not filter. Limit
// (1–1000) and Page (from 1) are required.
type ApprovalFilter struct {
	Status, SourceType, ApprovalType, PauseType string
	AgentID, TeamID, WorkflowID, UserID, RunID  string
	Limit, Page                                 int
}

// ErrApprovalResolved is returned when resolving an approval that is no
// longer pending.
var ErrApprovalResolved = errors.New("db: the approval is not pending")

// ApprovalDriver stores the review queue. Reads and writes apply the
// context's user scope inside their queries.
type ApprovalDriver interface {
	// CreateApproval inserts a row; one with the same id is left alone.
	CreateApproval(ctx context.Context, a *Approval) error
	// GetApproval returns a row or ErrNotFound.
	GetApproval(ctx context.Context, id string) (*Approval, error)
	// ListApprovals pages rows newest first and counts the matches.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, int, error)
	// ResolveApproval moves a pending row to status (approved or rejected)
	// with who resolved it, their data and when; ErrApprovalResolved when
	// it is not pending, ErrNotFound when missing.
	ResolveApproval(ctx context.Context, id, status, resolvedBy string, data json.RawMessage, at int64) (*Approval, error)
	// SetApprovalsRunStatus records a run's status on its approvals; when
	// the run ended (COMPLETED, ERROR, CANCELLED) its pending ones become
	// expired.
	SetApprovalsRunStatus(ctx context.Context, runID, runStatus string, at int64) error
}

// approvalNamespace is the UUIDv5 namespace of approval ids derived from
// a key (ApprovalKeyID); fixed forever, since ids are recomputed from keys.
var approvalNamespace = uuid.MustParse("6f1c3e2a-9b0d-5c4e-8a71-3d2f4b5e6c70")

// ApprovalKeyID returns the approval id for a key naming what is approved
// (a run and one of its pause's requirements): a name-based UUID (v5), so
// that the id is a plain UUID in URLs as Agno's are, yet the same key gives
// the same id on every replica and after a restart.
func ApprovalKeyID(key string) string {
	return uuid.NewSHA1(approvalNamespace, []byte(key)).String()
}

func checkApprovalID(id string) error {
	if id == "" || len(id) > 255 || !utf8.ValidString(id) {
		return fmt.Errorf("%w: an approval id is 1 to 255 bytes of UTF-8", ErrInvalidRecord)
	}
	return checkNotPadded("approval id", id)
}

// CreateApproval validates and stores a pending approval; created_at is set
// when zero. A user scope must match the row's user.
func (d *DB) CreateApproval(ctx context.Context, a *Approval) error {
	if a == nil {
		return fmt.Errorf("%w: nil approval", ErrInvalidRecord)
	}
	if err := checkApprovalID(a.ID); err != nil {
		return err
	}
	if a.RunID == "" || a.SessionID == "" || a.SourceType == "" || a.PauseType == "" {
		return fmt.Errorf("%w: an approval needs run_id, session_id, source_type and pause_type", ErrInvalidRecord)
	}
	if u, ok := UserScope(ctx); ok && a.UserID != u {
		return fmt.Errorf("%w: approval of user %q written in the scope of user %q", ErrInvalidRecord, a.UserID, u)
	}
	if err := checkUserID("approval", a.ID, a.UserID); err != nil {
		return err
	}
	cp := *a
	if cp.Status == "" {
		cp.Status = ApprovalPending
	}
	if cp.CreatedAt == 0 {
		cp.CreatedAt = d.now().Unix()
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.CreateApproval(ctx, &cp))
}

// GetApproval returns an approval in scope or ErrNotFound.
func (d *DB) GetApproval(ctx context.Context, id string) (*Approval, error) {
	if err := checkApprovalID(id); err != nil {
		return nil, fmt.Errorf("%w: approval %q", ErrNotFound, id)
	}
	ctx, call := d.bound(ctx)
	a, err := d.driver.GetApproval(ctx, id)
	return a, call.done(err)
}

// ListApprovals pages approvals in scope, newest first.
func (d *DB) ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, int, error) {
	if f.Limit < 1 || f.Limit > 1000 || f.Page < 1 || PageOffsetOverflows(f.Limit, f.Page) {
		return nil, 0, fmt.Errorf("%w: approvals need a limit of 1 to 1000 and a page from 1", ErrInvalidFilter)
	}
	ctx, call := d.bound(ctx)
	out, n, err := d.driver.ListApprovals(ctx, f)
	return out, n, call.done(err)
}

// ResolveApproval approves or rejects a pending approval in scope, or marks
// it expired (a timeout that applied); only a pending approval moves, in
// one conditional update, so of several resolvers one wins.
func (d *DB) ResolveApproval(ctx context.Context, id, status, resolvedBy string, data json.RawMessage) (*Approval, error) {
	if status != ApprovalApproved && status != ApprovalRejected && status != ApprovalExpired {
		return nil, fmt.Errorf("%w: resolve an approval as approved, rejected or expired, not %q", ErrInvalidRecord, status)
	}
	if err := checkApprovalID(id); err != nil {
		return nil, fmt.Errorf("%w: approval %q", ErrNotFound, id)
	}
	if len(data) > 0 && !json.Valid(data) {
		return nil, fmt.Errorf("%w: resolution_data is not JSON", ErrInvalidRecord)
	}
	ctx, call := d.bound(ctx)
	a, err := d.driver.ResolveApproval(ctx, id, status, resolvedBy, data, d.now().Unix())
	return a, call.done(err)
}

// SetApprovalsRunStatus records a run's status on its approvals.
func (d *DB) SetApprovalsRunStatus(ctx context.Context, runID, runStatus string) error {
	ctx, call := d.bound(ctx)
	return call.done(d.driver.SetApprovalsRunStatus(ctx, runID, runStatus, d.now().Unix()))
}
