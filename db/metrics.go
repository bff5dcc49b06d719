package db

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/run"
)

// DailyMetrics is one row of agno_metrics: one user's ("" for unowned runs
// and sessions) activity on one UTC day, in Agno 3.0's layout. TokenMetrics
// holds Agno's token counters plus runs_by_status, duration (seconds) and
// components (per agent/team/workflow id: runs and tokens); ModelMetrics is
// Agno's list of {model_id, model_provider, count} with input_tokens,
// output_tokens and duration added.
type DailyMetrics struct {
	ID                    string
	UserID                string
	Date                  string // YYYY-MM-DD (UTC)
	AgentRunsCount        int64
	TeamRunsCount         int64
	WorkflowRunsCount     int64
	AgentSessionsCount    int64
	TeamSessionsCount     int64
	WorkflowSessionsCount int64
	UsersCount            int64
	TokenMetrics          json.RawMessage
	ModelMetrics          json.RawMessage
	AggregationPeriod     string
	Completed             bool
	CreatedAt, UpdatedAt  int64
}

// MetricsFilter selects daily metrics; empty dates do not bound.
type MetricsFilter struct {
	// From and To are inclusive YYYY-MM-DD dates.
	From, To string
	// UserID, when set, keeps one user's rows ("" with ByUser keeps the
	// unowned ones).
	UserID string
	ByUser bool
}

// SessionCount counts one user's sessions of one type.
type SessionCount struct {
	UserID      string
	SessionType run.Type
	Count       int64
}

// RunCursor is a keyset position in (created_at, run_id) order.
type RunCursor struct {
	CreatedAt int64
	RunID     string
}

// MetricsDriver is the storage ability behind daily metrics. None of its
// methods applies a user scope: refreshing is computed for every user, and
// ListDailyMetrics filters by MetricsFilter (the front sets it from the scope).
type MetricsDriver interface {
	// RunsCreatedIn reads a page of up to limit runs with from <= created_at
	// < to after the cursor, in (created_at, run_id) order, and returns the
	// cursor after the page (nil when it held fewer than limit rows: the
	// last). A row it cannot decode (another writer's) is left out of the
	// runs and reported as a *CorruptRowError joined to the error, next to
	// the runs and cursor, which passes it.
	RunsCreatedIn(ctx context.Context, from, to int64, after RunCursor, limit int) (runs []Run, next *RunCursor, err error)
	// SessionCountsIn counts sessions created in [from, to) by user and type.
	SessionCountsIn(ctx context.Context, from, to int64) ([]SessionCount, error)
	// FirstRunCreatedAt is the oldest run's created_at (ok false: no runs).
	FirstRunCreatedAt(ctx context.Context) (int64, bool, error)
	// NextActivityAt is the smallest created_at in [from, to) of a run or
	// a session (ok false: none), so that a refresh passes the days with
	// neither in one query instead of two per day.
	NextActivityAt(ctx context.Context, from, to int64) (int64, bool, error)
	// LastCompletedMetricsDate is the newest completed daily row's date.
	LastCompletedMetricsDate(ctx context.Context) (string, bool, error)
	// UpsertDailyMetrics writes rows, replacing those with the same
	// (user_id, date, aggregation_period) and keeping their id and created_at.
	UpsertDailyMetrics(ctx context.Context, rows []DailyMetrics) error
	// ListDailyMetrics returns rows by date, then user.
	ListDailyMetrics(ctx context.Context, f MetricsFilter) ([]DailyMetrics, error)
}

func (d *DB) metricsDriver() (MetricsDriver, error) {
	m, ok := d.driver.(MetricsDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %s driver does not store metrics", ErrUnsupportedDriver, d.driver.Dialect())
	}
	return m, nil
}

// DailyMetricsPeriod is the aggregation_period of daily rows.
const DailyMetricsPeriod = "daily"

// metricsPageSize bounds the runs one refresh reads at a time.
const metricsPageSize = 500

// ListDailyMetrics returns daily rows. A scoped caller sees only its own.
func (d *DB) ListDailyMetrics(ctx context.Context, f MetricsFilter) ([]DailyMetrics, error) {
	md, err := d.metricsDriver()
	if err != nil {
		return nil, err
	}
	for _, s := range []string{f.From, f.To} {
		if s != "" {
			if _, err := time.Parse(time.DateOnly, s); err != nil {
				return nil, fmt.Errorf("%w: date %q is not YYYY-MM-DD", ErrInvalidFilter, s)
			}
		}
	}
	if u, ok := UserScope(ctx); ok {
		f.UserID, f.ByUser = u, true
	}
	ctx, call := d.bound(ctx)
	out, err := md.ListDailyMetrics(ctx, f)
	return out, call.done(err)
}

// RefreshMetrics aggregates the days not yet completed into agno_metrics
// and returns the rows it wrote. A run that does not decode (another
// writer's row) is left out of its day's counts, which are written all the
// same; such runs are reported as *CorruptRowError joined to the error
// (the first few by name), next to the rows written. It is incremental: it starts at the day
// after the newest completed row (the watermark), or at the oldest run's day
// on the first refresh, and reads only that range's runs and sessions. Days
// before today are written completed and never read again; today stays
// open until a refresh after midnight UTC completes it.
func (d *DB) RefreshMetrics(ctx context.Context) ([]DailyMetrics, error) {
	return d.RefreshMetricsAt(ctx, d.now())
}

// RefreshMetricsAt is RefreshMetrics with the clock given: now decides
// which day is today (and so still open).
func (d *DB) RefreshMetricsAt(ctx context.Context, now time.Time) ([]DailyMetrics, error) {
	md, err := d.metricsDriver()
	if err != nil {
		return nil, err
	}
	// Refreshing is every user's business: the driver's methods apply no
	// scope; ListDailyMetrics applies it when reading.
	bctx, call := d.bound(ctx)
	defer call.done(nil)
	now = now.UTC()
	today := now.Truncate(24 * time.Hour)
	var start time.Time
	if last, ok, err := md.LastCompletedMetricsDate(bctx); err != nil {
		return nil, err
	} else if ok {
		t, err := time.Parse(time.DateOnly, last)
		if err != nil {
			return nil, fmt.Errorf("%w: metrics date %q", ErrCorruptRow, last)
		}
		start = t.AddDate(0, 0, 1)
	} else {
		first, ok, err := md.FirstRunCreatedAt(bctx)
		if err != nil || !ok {
			return nil, err
		}
		start = time.Unix(first, 0).UTC().Truncate(24 * time.Hour)
	}
	var written []DailyMetrics
	var left leftOut
	end := today.AddDate(0, 0, 1).Unix()
	for day := start; !day.After(today); day = day.AddDate(0, 0, 1) {
		rows, err := d.aggregateDay(bctx, md, day, now, &left)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			// Nothing on this day: go on at the next day with a run or a
			// session. A stray created_at near 1970 would otherwise
			// make the first refresh walk ~20,000 empty days.
			next, ok, err := md.NextActivityAt(bctx, day.AddDate(0, 0, 1).Unix(), end)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			day = time.Unix(next, 0).UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
			continue
		}
		if err := md.UpsertDailyMetrics(bctx, rows); err != nil {
			return nil, err
		}
		written = append(written, rows...)
	}
	return written, left.err()
}

// maxLeftOut bounds the corrupt rows one refresh reports by name.
const maxLeftOut = 20

// leftOut collects the rows a refresh left out of its counts: the first
// maxLeftOut by name, the others counted.
type leftOut struct {
	named []error
	more  int
}

// add notes err's rows (a *CorruptRowError or several joined).
func (l *leftOut) add(err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, one := err.(*CorruptRowError); !one {
			errs = j.Unwrap()
		}
	}
	for _, e := range errs {
		if len(l.named) < maxLeftOut {
			l.named = append(l.named, e)
		} else {
			l.more++
		}
	}
}

func (l *leftOut) err() error {
	if l.more > 0 {
		return errors.Join(append(l.named, fmt.Errorf("%w: %d more rows left out", ErrCorruptRow, l.more))...)
	}
	return errors.Join(l.named...)
}

type metricsBucket struct {
	row        DailyMetrics
	tokens     map[string]int64
	statuses   map[string]int64
	duration   float64
	models     map[[2]string]*modelMetric
	components map[[2]string]*componentMetric
}

type modelMetric struct {
	ModelID       string  `json:"model_id"`
	ModelProvider string  `json:"model_provider"`
	Count         int64   `json:"count"`
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	Duration      float64 `json:"duration"`
}

type componentMetric struct {
	ComponentType string `json:"component_type"`
	ComponentID   string `json:"component_id"`
	Runs          int64  `json:"runs"`
	InputTokens   int64  `json:"input_tokens"`
	OutputTokens  int64  `json:"output_tokens"`
}

var agnoTokenKeys = []string{"input_tokens", "output_tokens", "total_tokens", "audio_total_tokens", "audio_input_tokens",
	"audio_output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}

// aggregateDay builds one row per user active on day. Runs that do not
// decode are left out of the counts and noted in left.
func (d *DB) aggregateDay(ctx context.Context, md MetricsDriver, day, now time.Time, left *leftOut) ([]DailyMetrics, error) {
	from, to := day.Unix(), day.AddDate(0, 0, 1).Unix()
	buckets := map[string]*metricsBucket{}
	bucket := func(user string) *metricsBucket {
		b, ok := buckets[user]
		if !ok {
			b = &metricsBucket{tokens: map[string]int64{}, statuses: map[string]int64{}, models: map[[2]string]*modelMetric{},
				components: map[[2]string]*componentMetric{}}
			for _, k := range agnoTokenKeys {
				b.tokens[k] = 0
			}
			if user != "" {
				b.row.UsersCount = 1
			}
			buckets[user] = b
		}
		return b
	}
	counts, err := md.SessionCountsIn(ctx, from, to)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		b := bucket(c.UserID)
		switch c.SessionType {
		case run.TypeTeam:
			b.row.TeamSessionsCount += c.Count
		case run.TypeWorkflow:
			b.row.WorkflowSessionsCount += c.Count
		default:
			b.row.AgentSessionsCount += c.Count
		}
	}
	for after := (&RunCursor{CreatedAt: from - 1}); after != nil; {
		runs, next, err := md.RunsCreatedIn(ctx, from, to, *after, metricsPageSize)
		if err != nil && !errors.Is(err, ErrCorruptRow) {
			return nil, err
		}
		left.add(err)
		for i := range runs {
			addRun(bucket(runs[i].UserID), &runs[i])
		}
		after = next
	}
	date := day.Format(time.DateOnly)
	completed := day.AddDate(0, 0, 1).Compare(now) <= 0
	out := make([]DailyMetrics, 0, len(buckets))
	for user, b := range buckets {
		tm := map[string]any{}
		for k, v := range b.tokens {
			tm[k] = v
		}
		tm["runs_by_status"] = b.statuses
		tm["duration"] = b.duration
		comps := make([]*componentMetric, 0, len(b.components))
		for _, c := range b.components {
			comps = append(comps, c)
		}
		slices.SortFunc(comps, func(x, y *componentMetric) int {
			return cmp.Or(cmp.Compare(x.ComponentType, y.ComponentType), cmp.Compare(x.ComponentID, y.ComponentID))
		})
		tm["components"] = comps
		models := make([]*modelMetric, 0, len(b.models))
		for _, m := range b.models {
			models = append(models, m)
		}
		slices.SortFunc(models, func(x, y *modelMetric) int {
			return cmp.Or(cmp.Compare(x.ModelID, y.ModelID), cmp.Compare(x.ModelProvider, y.ModelProvider))
		})
		row := b.row
		row.ID, row.UserID, row.Date, row.AggregationPeriod, row.Completed = uuid.NewString(), user, date, DailyMetricsPeriod, completed
		row.TokenMetrics, _ = json.Marshal(tm)
		row.ModelMetrics, _ = json.Marshal(models)
		row.CreatedAt, row.UpdatedAt = now.Unix(), now.Unix()
		out = append(out, row)
	}
	slices.SortFunc(out, func(x, y DailyMetrics) int { return cmp.Compare(x.UserID, y.UserID) })
	return out, nil
}

// addRun counts one run into its user's bucket. Member and step runs (with
// a parent) count as runs of their own kind, as Agno's per-session arrays do.
func addRun(b *metricsBucket, r *Run) {
	switch r.RunType {
	case run.TypeTeam:
		b.row.TeamRunsCount++
	case run.TypeWorkflow:
		b.row.WorkflowRunsCount++
	default:
		b.row.AgentRunsCount++
	}
	b.statuses[string(r.Status)]++
	var data struct {
		Model         string         `json:"model"`
		ModelProvider string         `json:"model_provider"`
		Metrics       map[string]any `json:"metrics"`
	}
	_ = json.Unmarshal(r.RunData, &data)
	num := func(k string) float64 {
		f, _ := data.Metrics[k].(float64)
		return f
	}
	for _, k := range agnoTokenKeys {
		b.tokens[k] += int64(num(k))
	}
	dur := num("duration")
	b.duration += dur
	in, outTok := int64(num("input_tokens")), int64(num("output_tokens"))
	if data.Model != "" {
		k := [2]string{data.Model, data.ModelProvider}
		m, ok := b.models[k]
		if !ok {
			m = &modelMetric{ModelID: data.Model, ModelProvider: data.ModelProvider}
			b.models[k] = m
		}
		m.Count++
		m.InputTokens += in
		m.OutputTokens += outTok
		m.Duration += dur
	}
	kind, id := string(r.RunType), r.AgentID
	switch r.RunType {
	case run.TypeTeam:
		id = r.TeamID
	case run.TypeWorkflow:
		id = r.WorkflowID
	}
	k := [2]string{kind, id}
	c, ok := b.components[k]
	if !ok {
		c = &componentMetric{ComponentType: kind, ComponentID: id}
		b.components[k] = c
	}
	c.Runs++
	c.InputTokens += in
	c.OutputTokens += outTok
}
