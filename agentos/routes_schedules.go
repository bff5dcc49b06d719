package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// The /schedules routes (Agno 3.0's schedule router): cron schedules of
// agent, team and workflow runs, stored in the default database and fired
// by the scheduler (package schedule) through the durable queue.

// scheduleView is Agno's ScheduleResponse.
type scheduleView struct {
	ID                string          `json:"id"`
	UserID            *string         `json:"user_id"`
	Name              string          `json:"name"`
	Description       *string         `json:"description"`
	Method            string          `json:"method"`
	Endpoint          string          `json:"endpoint"`
	Payload           json.RawMessage `json:"payload"`
	CronExpr          string          `json:"cron_expr"`
	Timezone          string          `json:"timezone"`
	TimeoutSeconds    int64           `json:"timeout_seconds"`
	MaxRetries        int64           `json:"max_retries"`
	RetryDelaySeconds int64           `json:"retry_delay_seconds"`
	Enabled           bool            `json:"enabled"`
	NextRunAt         *int64          `json:"next_run_at"`
	ManagedBy         *string         `json:"managed_by"`
	TargetType        *string         `json:"target_type"`
	TargetID          *string         `json:"target_id"`
	DisabledReason    *string         `json:"disabled_reason"`
	CreatedAt         *int64          `json:"created_at"`
	UpdatedAt         *int64          `json:"updated_at"`
}

func newScheduleView(s *db.Schedule) scheduleView {
	return scheduleView{ID: s.ID, UserID: optional(s.UserID), Name: s.Name, Description: optional(s.Description), Method: s.Method,
		Endpoint: s.Endpoint, Payload: rawOrNull(s.Payload), CronExpr: s.CronExpr, Timezone: s.Timezone, TimeoutSeconds: s.TimeoutSeconds,
		MaxRetries: s.MaxRetries, RetryDelaySeconds: s.RetryDelaySeconds, Enabled: s.Enabled, NextRunAt: optInt(s.NextRunAt),
		ManagedBy: optional(s.ManagedBy), TargetType: optional(s.TargetType), TargetID: optional(s.TargetID),
		DisabledReason: optional(s.DisabledReason), CreatedAt: optInt(s.CreatedAt), UpdatedAt: optInt(s.UpdatedAt)}
}

// scheduleStateView is Agno's ScheduleStateResponse (enable, disable).
type scheduleStateView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	NextRunAt *int64 `json:"next_run_at"`
	UpdatedAt *int64 `json:"updated_at"`
}

// scheduleRunView is Agno's ScheduleRunResponse.
type scheduleRunView struct {
	ID           string          `json:"id"`
	ScheduleID   string          `json:"schedule_id"`
	UserID       *string         `json:"user_id"`
	Attempt      int64           `json:"attempt"`
	TriggeredAt  *int64          `json:"triggered_at"`
	CompletedAt  *int64          `json:"completed_at"`
	Status       string          `json:"status"`
	StatusCode   *int64          `json:"status_code"`
	RunID        *string         `json:"run_id"`
	SessionID    *string         `json:"session_id"`
	Error        *string         `json:"error"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	Requirements json.RawMessage `json:"requirements"`
	CreatedAt    *int64          `json:"created_at"`
}

func newScheduleRunView(r *db.ScheduleRun) scheduleRunView {
	return scheduleRunView{ID: r.ID, ScheduleID: r.ScheduleID, UserID: optional(r.UserID), Attempt: r.Attempt, TriggeredAt: optInt(r.TriggeredAt),
		CompletedAt: optInt(r.CompletedAt), Status: r.Status, StatusCode: optInt(r.StatusCode), RunID: optional(r.RunID),
		SessionID: optional(r.SessionID), Error: optional(r.Error), Input: rawOrNull(r.Input), Output: rawOrNull(r.Output),
		Requirements: rawOrNull(r.Requirements), CreatedAt: optInt(r.CreatedAt)}
}

// scheduleBody is Agno's ScheduleCreate / ScheduleUpdate.
type scheduleBody struct {
	Name              *string         `json:"name"`
	CronExpr          *string         `json:"cron_expr"`
	Endpoint          *string         `json:"endpoint"`
	Method            *string         `json:"method"`
	Description       *string         `json:"description"`
	Payload           json.RawMessage `json:"payload"`
	Timezone          *string         `json:"timezone"`
	TimeoutSeconds    *int64          `json:"timeout_seconds"`
	MaxRetries        *int64          `json:"max_retries"`
	RetryDelaySeconds *int64          `json:"retry_delay_seconds"`
}

var (
	scheduleNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$`)
	// runEndpointRE is Agno's RUN_ENDPOINT_RE: the run route of a component.
	runEndpointRE = regexp.MustCompile(`^/(agents|teams|workflows)/([^/]+)/runs/?$`)
)

// schedulePayload is what a firing reads of a schedule's payload: the run
// route's form fields a firing sends. Create and PATCH refuse other keys
// (checkPayloadKeys); a firing ignores them, so that schedules stored before
// the check still fire.
type schedulePayload struct {
	Message      *string         `json:"message"`
	SessionID    string          `json:"session_id"`
	SessionState map[string]any  `json:"session_state"`
	Dependencies map[string]any  `json:"dependencies"`
	Metadata     map[string]any  `json:"metadata"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// schedulePayloadKeys are schedulePayload's keys, in the order they are
// listed to the user.
var schedulePayloadKeys = []string{"message", "session_id", "session_state", "dependencies", "metadata", "output_schema"}

// checkPayloadKeys refuses a payload key a firing would not send: accepted,
// it would be stored and do nothing.
func checkPayloadKeys(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil // decodeSchedulePayload says what is wrong with it
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(schedulePayloadKeys, k) {
			unknown = append(unknown, safeName(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("payload key %s is not supported by this server: a schedule's payload takes %s",
		strings.Join(unknown, ", "), strings.Join(schedulePayloadKeys, ", "))
}

func decodeSchedulePayload(raw json.RawMessage) (schedulePayload, error) {
	var p schedulePayload
	if len(raw) == 0 || string(raw) == "null" {
		return p, errors.New("payload.message is required: the run's input")
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("payload must be an object of the run's fields (message: string; session_id: string; "+
			"session_state, dependencies, metadata: objects; output_schema: a JSON Schema): %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if p.Message == nil || *p.Message == "" {
		return p, errors.New("payload.message is required: the run's input")
	}
	if err := checkBodyID("payload.session_id", p.SessionID); err != nil {
		return p, err
	}
	return p, nil
}

// checkScheduleOverrides refuses a payload whose output_schema is not a
// JSON Schema, or one target t cannot use (none for a workflow, one without
// a strict form for a StrictOutput agent), as the run route refuses it,
// rather than a run that fails at every firing.
func checkScheduleOverrides(t runTarget, p schedulePayload) error {
	if err := checkOutputSchema(p.OutputSchema); err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	return checkRunOverrides(t, &runRequest{OutputSchema: p.OutputSchema})
}

// scheduleTarget resolves a schedule's endpoint to a run target of this
// server: 422 for another method or route, or an unknown component.
func (s *Server) scheduleTarget(method, endpoint string) (runTarget, error) {
	m := runEndpointRE.FindStringSubmatch(endpoint)
	if strings.ToUpper(method) != "POST" || m == nil {
		return nil, errorf(http.StatusUnprocessableEntity, "Agentry schedules run endpoints only: method POST and endpoint "+
			"/agents/{id}/runs, /teams/{id}/runs or /workflows/{id}/runs (got %s %s)", method, endpoint)
	}
	kind := strings.TrimSuffix(m[1], "s")
	t, ok := s.targetOf(kind, m[2])
	if !ok {
		return nil, errorf(http.StatusUnprocessableEntity, "%s%s with ID %s not found: the endpoint must name a component this server runs",
			strings.ToUpper(kind[:1]), kind[1:], m[2])
	}
	return t, nil
}

// applyScheduleBody validates the body's fields onto sc (create: every
// required field; update: those given).
func (s *Server) applyScheduleBody(sc *db.Schedule, b *scheduleBody, create bool) error {
	bad := func(format string, args ...any) error { return errorf(http.StatusUnprocessableEntity, format, args...) }
	if create && (b.Name == nil || b.CronExpr == nil || b.Endpoint == nil) {
		return bad("name, cron_expr and endpoint are required")
	}
	for name, v := range map[string]*string{"name": b.Name, "cron_expr": b.CronExpr, "endpoint": b.Endpoint, "method": b.Method, "timezone": b.Timezone} {
		if v != nil && !utf8.ValidString(*v) {
			return bad("%s must be valid UTF-8", name)
		}
	}
	if b.Name != nil {
		if len(*b.Name) > 255 || !scheduleNameRE.MatchString(*b.Name) {
			return bad("Name must start with alphanumeric and contain only alphanumeric, spaces, '.', '_', '-' (at most 255 characters)")
		}
		sc.Name = *b.Name
	}
	if b.Description != nil {
		if utf8.RuneCountInString(*b.Description) > 1024 || !utf8.ValidString(*b.Description) {
			return bad("description must be valid UTF-8 of at most 1024 characters")
		}
		sc.Description = *b.Description
	}
	if b.Method != nil {
		sc.Method = strings.ToUpper(*b.Method)
	}
	if b.Endpoint != nil {
		if len(*b.Endpoint) > 512 || strings.IndexFunc(*b.Endpoint, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return bad("Endpoint must be a path of at most 512 characters without whitespace or control characters")
		}
		sc.Endpoint = *b.Endpoint
	}
	if b.Endpoint != nil || b.Method != nil {
		// The provenance (managed_by, target_type, target_id) is not the
		// body's to write: as Agno 3.0, create stores none and an update
		// leaves it, so that a managed schedule repointed away from its
		// target is refused by the scheduler (endpoint drift), not run.
		if _, err := s.scheduleTarget(sc.Method, sc.Endpoint); err != nil {
			return err
		}
	}
	if b.CronExpr != nil {
		sc.CronExpr = strings.TrimSpace(*b.CronExpr)
	}
	if b.Timezone != nil {
		sc.Timezone = *b.Timezone
	}
	if b.CronExpr != nil || b.Timezone != nil {
		if _, err := schedule.Parse(sc.CronExpr, sc.Timezone); errors.Is(err, schedule.ErrInvalidTimezone) {
			return bad("Invalid timezone: %s", sc.Timezone)
		} else if err != nil {
			return bad("Invalid cron expression: %s (%v)", sc.CronExpr, strings.TrimPrefix(err.Error(), schedule.ErrInvalidCron.Error()+": "))
		}
	}
	if len(b.Payload) > 0 {
		if _, err := decodeSchedulePayload(b.Payload); err != nil {
			return bad("%s", err.Error())
		}
		if err := checkPayloadKeys(b.Payload); err != nil {
			return bad("%s", err.Error())
		}
		sc.Payload = b.Payload
	} else if create {
		return bad("payload.message is required: the run's input")
	}
	if len(b.Payload) > 0 || b.Endpoint != nil || b.Method != nil {
		// The payload's output_schema against the (new) target: refused
		// now rather than at every firing (Fire refuses it too).
		if p, err := decodeSchedulePayload(sc.Payload); err == nil {
			t, _ := s.scheduleTarget(sc.Method, sc.Endpoint)
			if err := checkScheduleOverrides(t, p); err != nil {
				return err
			}
		}
	}
	if b.TimeoutSeconds != nil {
		if *b.TimeoutSeconds < 1 || *b.TimeoutSeconds > 86400 {
			return bad("timeout_seconds must be from 1 to 86400")
		}
		sc.TimeoutSeconds = *b.TimeoutSeconds
	}
	if b.MaxRetries != nil {
		// As Agno: a firing whose run fails is fired again, up to
		// max_retries more attempts, retry_delay_seconds apart.
		if *b.MaxRetries < 0 || *b.MaxRetries > 10 {
			return bad("max_retries must be from 0 to 10")
		}
		sc.MaxRetries = *b.MaxRetries
	}
	if b.RetryDelaySeconds != nil {
		if *b.RetryDelaySeconds < 1 || *b.RetryDelaySeconds > 3600 {
			return bad("retry_delay_seconds must be from 1 to 3600")
		}
		sc.RetryDelaySeconds = *b.RetryDelaySeconds
	}
	return nil
}

// scheduleDB is the database of the schedules: the default one (the
// durable queue's).
func (s *Server) scheduleDB() (*db.DB, error) {
	if len(s.dbs) == 0 {
		return nil, errorf(http.StatusNotFound, "No database is configured")
	}
	d := s.dbs[0]
	if !d.SupportsSchedules() {
		return nil, errorf(http.StatusServiceUnavailable, "Scheduler not supported by the configured database")
	}
	return d, nil
}

// nextRun is the schedule's first due time after now (the scheduler's
// clock when it runs).
func (s *Server) nextRun(sc *db.Schedule) int64 {
	spec, err := schedule.Parse(sc.CronExpr, sc.Timezone)
	if err != nil {
		return 0
	}
	now := time.Now()
	if s.sched != nil {
		now = s.sched.Now()
	}
	if n := spec.Next(now); !n.IsZero() {
		return n.Unix()
	}
	return 0
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.scheduleDB()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, pageRules{DefaultLimit: 100})
	if err != nil {
		return err
	}
	f := db.ScheduleFilter{Limit: pq.Limit, Page: pq.Page}
	if v := q.Get("enabled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errorf(http.StatusUnprocessableEntity, "enabled must be true or false")
		}
		f.Enabled = &b
	}
	list, total, err := d.ListSchedules(r.Context(), f)
	if err = s.leaveOutCorrupt(r.Context(), "list schedules", err); err != nil {
		return err
	}
	views := make([]scheduleView, 0, len(list))
	for i := range list {
		views = append(views, newScheduleView(&list[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	d, err := s.scheduleDB()
	if err != nil {
		return err
	}
	var b scheduleBody
	if err := decodeJSONBody(r, &b); err != nil {
		return err
	}
	sc := &db.Schedule{ID: uuid.NewString(), Method: "POST", Timezone: "UTC", TimeoutSeconds: 3600, RetryDelaySeconds: 60, Enabled: true,
		UserID: actAs(r.Context(), "").id}
	if err := s.applyScheduleBody(sc, &b, true); err != nil {
		return err
	}
	sc.NextRunAt = s.nextRun(sc)
	out, err := d.CreateSchedule(r.Context(), sc)
	if errors.Is(err, db.ErrExists) {
		return errorf(http.StatusConflict, "Schedule with name '%s' already exists", sc.Name)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newScheduleView(out))
	return nil
}

// loadSchedule fetches {schedule_id} in the caller's scope: another user's
// is a 404 as a missing one.
func (s *Server) loadSchedule(r *http.Request) (*db.DB, *db.Schedule, error) {
	d, err := s.scheduleDB()
	if err != nil {
		return nil, nil, err
	}
	sc, err := d.GetSchedule(r.Context(), chi.URLParam(r, "schedule_id"))
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, errorf(http.StatusNotFound, "Schedule not found")
	}
	return d, sc, err
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	_, sc, err := s.loadSchedule(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newScheduleView(sc))
	return nil
}

func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) error {
	d, sc, err := s.loadSchedule(r)
	if err != nil {
		return err
	}
	var b scheduleBody
	if err := decodeJSONBody(r, &b); err != nil {
		return err
	}
	if b.Payload == nil && b.Name == nil && b.CronExpr == nil && b.Endpoint == nil && b.Method == nil && b.Description == nil &&
		b.Timezone == nil && b.TimeoutSeconds == nil && b.MaxRetries == nil && b.RetryDelaySeconds == nil {
		writeJSON(w, http.StatusOK, newScheduleView(sc))
		return nil
	}
	if string(b.Payload) == "null" {
		return errorf(http.StatusUnprocessableEntity, "'payload' cannot be set to null: a schedule's run needs a message")
	}
	out, err := editSchedule(r.Context(), d, sc, func(sc *db.Schedule) error {
		if err := s.applyScheduleBody(sc, &b, false); err != nil {
			return err
		}
		if (b.CronExpr != nil || b.Timezone != nil) && sc.Enabled {
			sc.NextRunAt = s.nextRun(sc)
		}
		return nil
	})
	if errors.Is(err, db.ErrExists) { // only a rename meets a taken name
		return errorf(http.StatusConflict, "Schedule with name '%s' already exists", *b.Name)
	}
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Schedule not found")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newScheduleView(out))
	return nil
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	d, sc, err := s.loadSchedule(r)
	if err != nil {
		return err
	}
	if err := d.DeleteSchedule(r.Context(), sc.ID); errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Schedule not found")
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// editAttempts bounds how often editSchedule redoes an edit whose
// schedule changed under it.
const editAttempts = 5

// editSchedule applies change to a copy of schedule read and writes only
// the columns it changed, so that a firing (next_run_at) or a disable the
// scheduler stores meanwhile is kept. When the cron expression, time zone,
// method or endpoint the change was computed from changed meanwhile, the
// schedule is read again and the change redone.
func editSchedule(ctx context.Context, d *db.DB, read *db.Schedule, change func(*db.Schedule) error) (*db.Schedule, error) {
	for attempt := 1; ; attempt++ {
		sc := *read
		if err := change(&sc); err != nil {
			return nil, err
		}
		out, err := d.EditSchedule(ctx, read, &sc)
		if !errors.Is(err, db.ErrScheduleChanged) {
			return out, err
		}
		if attempt == editAttempts {
			return nil, &httpError{Status: http.StatusConflict, Detail: "Schedule is being changed concurrently: retry", Err: err}
		}
		if read, err = d.GetSchedule(ctx, read.ID); err != nil {
			return nil, err
		}
	}
}

// endpointDriftRefusal reports why enabling sc stays refused: the
// scheduler disabled it because its endpoint no longer addressed its
// provenance target (disabled_reason endpoint_drift:…), and the endpoint
// still does not (Agno 3.0's endpoint_drift_refusal). A drift-disabled row
// without a target to compare stays refused. Re-armed, the schedule would
// only be refused and disabled again at its next due time.
func endpointDriftRefusal(sc *db.Schedule) (reason string, refused bool) {
	if !strings.HasPrefix(sc.DisabledReason, schedule.DriftReasonPrefix) {
		return "", false
	}
	if schedule.AddressesTarget(sc) {
		return "", false
	}
	return sc.DisabledReason, true
}

// setScheduleEnabled is POST …/enable and …/disable. Enabling re-arms the
// schedule from now: due times that passed while it was disabled do not
// fire.
func (s *Server) setScheduleEnabled(enabled bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		d, sc, err := s.loadSchedule(r)
		if err != nil {
			return err
		}
		out, err := editSchedule(r.Context(), d, sc, func(sc *db.Schedule) error {
			if enabled {
				if reason, drifted := endpointDriftRefusal(sc); drifted {
					name := sc.Name
					if name == "" {
						name = sc.ID
					}
					return errorf(http.StatusConflict, "Cannot enable schedule '%s': it was disabled because its endpoint no longer "+
						"matches its target (%s). Repoint the endpoint back at the target first.", name, reason)
				}
				if _, err := s.scheduleTarget(sc.Method, sc.Endpoint); err != nil {
					return &httpError{Status: http.StatusConflict, Detail: fmt.Sprintf("Cannot enable schedule '%s': %s", sc.Name,
						err.(*httpError).Detail), Err: err}
				}
				if _, err := schedule.Parse(sc.CronExpr, sc.Timezone); err != nil {
					return errorf(http.StatusConflict, "Cannot enable schedule '%s': %v", sc.Name, err)
				}
				sc.NextRunAt, sc.DisabledReason = s.nextRun(sc), ""
			}
			sc.Enabled = enabled
			return nil
		})
		if errors.Is(err, db.ErrNotFound) {
			return errorf(http.StatusNotFound, "Schedule not found")
		}
		if err != nil {
			return err
		}
		s.log.Info("agentos: schedule "+map[bool]string{true: "enabled", false: "disabled"}[enabled], "schedule_id", sc.ID)
		writeJSON(w, http.StatusOK, scheduleStateView{ID: out.ID, Name: out.Name, Enabled: out.Enabled, NextRunAt: optInt(out.NextRunAt),
			UpdatedAt: optInt(out.UpdatedAt)})
		return nil
	}
}

// triggerSchedule is POST …/trigger: one firing now, through the queue.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	_, sc, err := s.loadSchedule(r)
	if err != nil {
		return err
	}
	if !sc.Enabled {
		return errorf(http.StatusConflict, "Schedule is disabled")
	}
	if s.sched == nil {
		return errorf(http.StatusServiceUnavailable, "Scheduler is not running")
	}
	sr, err := s.sched.Trigger(r.Context(), sc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newScheduleRunView(sr))
	return nil
}

func (s *Server) listScheduleRuns(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, sc, err := s.loadSchedule(r)
	if err != nil {
		return err
	}
	pq, err := parsePageQuery(r.URL.Query(), pageRules{DefaultLimit: 100})
	if err != nil {
		return err
	}
	runs, total, err := d.ListScheduleRuns(r.Context(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: pq.Limit, Page: pq.Page})
	if err = s.leaveOutCorrupt(r.Context(), "list schedule runs", err); err != nil {
		return err
	}
	views := make([]scheduleRunView, 0, len(runs))
	for i := range runs {
		views = append(views, newScheduleRunView(&runs[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func (s *Server) getScheduleRun(w http.ResponseWriter, r *http.Request) error {
	d, err := s.scheduleDB()
	if err != nil {
		return err
	}
	sr, err := d.GetScheduleRun(r.Context(), chi.URLParam(r, "run_id"))
	if errors.Is(err, db.ErrNotFound) || (err == nil && sr.ScheduleID != chi.URLParam(r, "schedule_id")) {
		return errorf(http.StatusNotFound, "Schedule run not found")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newScheduleRunView(sr))
	return nil
}

// Fire is the scheduler's Firer: it enqueues the schedule's run on the
// durable queue as its owner, with the firing's idempotency key, so that
// replicas firing the same due time start one run.
func (s *Server) Fire(ctx context.Context, sc *db.Schedule, f schedule.Firing) (schedule.Fired, error) {
	permanent := func(err error) (schedule.Fired, error) {
		return schedule.Fired{}, fmt.Errorf("%w: %w", schedule.ErrPermanent, err)
	}
	if s.queue == nil {
		return schedule.Fired{}, errors.New("agentos: schedules fire through the durable queue, which is not open")
	}
	t, err := s.scheduleTarget(sc.Method, sc.Endpoint)
	if err != nil {
		return permanent(err)
	}
	p, err := decodeSchedulePayload(sc.Payload)
	if err != nil {
		return permanent(err)
	}
	if err := checkScheduleOverrides(t, p); err != nil {
		return permanent(err)
	}
	owner := actingUser{id: sc.UserID, scoped: sc.UserID != ""}
	octx := ctx
	if owner.scoped {
		octx = db.WithUserScope(ctx, sc.UserID)
	}
	st := &runStart{agent: t, runID: uuid.NewString(), sessionID: p.SessionID, userID: sc.UserID, input: run.Input{InputContent: *p.Message},
		metadata: maps.Clone(p.Metadata)}
	delete(st.metadata, "agno_component_version")
	if st.metadata == nil {
		st.metadata = map[string]any{}
	}
	st.metadata["schedule_id"] = sc.ID
	d := t.DB()
	fresh := st.sessionID == ""
	if fresh {
		st.sessionID = uuid.NewString()
	} else if err := s.checkSessionOwner(octx, t, st.sessionID, owner); err != nil {
		return permanent(err)
	}
	row, err := db.RunFromOutput(pendingOutput(t, st))
	if err != nil {
		return schedule.Fired{}, err
	}
	payload, err := json.Marshal(jobPayload{Input: st.input, SessionState: p.SessionState, Dependencies: p.Dependencies,
		Metadata: st.metadata, OutputSchema: p.OutputSchema})
	if err != nil {
		return schedule.Fired{}, err
	}
	c := t.Component()
	job := &queue.Job{ID: st.runID, ComponentType: string(c.Type), ComponentID: c.ID, SessionID: st.sessionID, UserID: st.userID,
		Payload: payload, IdempotencyKey: f.Key, RetryDelay: time.Duration(sc.RetryDelaySeconds) * time.Second}
	// Looked for and created (with the job) in a turn of the session's
	// line: a run of the session that created it here in between is not
	// written over.
	var (
		runID string
		dup   bool
	)
	err = sessionline.Default().Update(sessionline.Key{DB: d, ID: st.sessionID}, func() (*db.Session, error) {
		var sess *db.Session
		if fresh {
			// A new id: no need to look (a retry, after another process
			// created it after all, looks).
			fresh = false
			sess = newSession(t, st.sessionID, st.userID)
		} else if _, err := d.GetSession(octx, st.sessionID); errors.Is(err, db.ErrNotFound) {
			sess = newSession(t, st.sessionID, st.userID)
		} else if err != nil {
			return nil, err
		}
		var err error
		runID, dup, err = s.queue.Enqueue(octx, sess, row, job)
		return nil, err
	})
	if err != nil {
		return schedule.Fired{}, err
	}
	out := schedule.Fired{RunID: runID, SessionID: st.sessionID, Input: scheduleRunInput(row.RunData)}
	if dup {
		first, err := d.GetRun(ctx, runID)
		if err != nil {
			return schedule.Fired{}, err
		}
		out.SessionID, out.Input = first.SessionID, scheduleRunInput(first.RunData)
	}
	return out, nil
}

// scheduleRunInput is the input a schedule run records of the run it
// fired, whose run_data is runData: the run's stored input when it is an
// object (an agent's or team's RunInput: {"input_content": …}), else none
// (a workflow's input is stored as the bare value), as Agno 3.0's executor
// records the input of the run it polled. Rows written before hold the
// schedule's payload instead; they are read as stored.
func scheduleRunInput(runData json.RawMessage) json.RawMessage {
	var r struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(runData, &r) != nil {
		return nil
	}
	if in := bytes.TrimLeft(r.Input, " \t\r\n"); len(in) == 0 || in[0] != '{' {
		return nil
	}
	return r.Input
}

// CancelFired is the scheduler's Canceller: it cancels a fired run that
// outlived its schedule's timeout_seconds, on whichever replica runs it.
func (s *Server) CancelFired(ctx context.Context, _ *db.Schedule, runID string) error {
	if s.queue == nil {
		return errors.New("agentos: schedules fire through the durable queue, which is not open")
	}
	if _, err := s.cancelDurable(ctx, s.dbs[0], runID); err != nil && !errors.Is(err, queue.ErrNotFound) {
		return err
	}
	return nil
}

// openScheduler builds the scheduler when Config.Schedules is set; it
// fires through the durable queue, on its database.
func (s *Server) openScheduler() error {
	if s.cfg.Schedules == nil {
		return nil
	}
	if s.queue == nil {
		return errors.New("agentos: schedules fire as durable background runs: set queue.durable: true (sqlite or postgres), or schedules.enabled: false")
	}
	sc := *s.cfg.Schedules
	if sc.Logger == nil {
		sc.Logger = s.log
	}
	sched, err := schedule.New(s.dbs[0], s, sc)
	if err != nil {
		return fmt.Errorf("agentos: schedules: %w", err)
	}
	s.sched = sched
	return nil
}

// Scheduler returns the server's scheduler (nil without Config.Schedules).
func (s *Server) Scheduler() *schedule.Scheduler { return s.sched }
