package agentos

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
)

// dayMetricsView is AgentOS's DayAggregatedMetrics.
type dayMetricsView struct {
	ID                    string          `json:"id"`
	AgentRunsCount        int64           `json:"agent_runs_count"`
	AgentSessionsCount    int64           `json:"agent_sessions_count"`
	TeamRunsCount         int64           `json:"team_runs_count"`
	TeamSessionsCount     int64           `json:"team_sessions_count"`
	WorkflowRunsCount     int64           `json:"workflow_runs_count"`
	WorkflowSessionsCount int64           `json:"workflow_sessions_count"`
	UsersCount            int64           `json:"users_count"`
	TokenMetrics          json.RawMessage `json:"token_metrics"`
	ModelMetrics          json.RawMessage `json:"model_metrics"`
	Date                  string          `json:"date"`
	CreatedAt             *string         `json:"created_at"`
	UpdatedAt             *string         `json:"updated_at"`
}

func newDayMetricsView(m db.DailyMetrics) dayMetricsView {
	v := dayMetricsView{ID: m.ID, AgentRunsCount: m.AgentRunsCount, AgentSessionsCount: m.AgentSessionsCount, TeamRunsCount: m.TeamRunsCount,
		TeamSessionsCount: m.TeamSessionsCount, WorkflowRunsCount: m.WorkflowRunsCount, WorkflowSessionsCount: m.WorkflowSessionsCount,
		UsersCount: m.UsersCount, TokenMetrics: m.TokenMetrics, ModelMetrics: m.ModelMetrics, Date: m.Date + "T00:00:00Z",
		CreatedAt: isoTime(m.CreatedAt), UpdatedAt: isoTime(m.UpdatedAt)}
	if len(v.TokenMetrics) == 0 {
		v.TokenMetrics = json.RawMessage("{}")
	}
	if len(v.ModelMetrics) == 0 {
		v.ModelMetrics = json.RawMessage("[]")
	}
	return v
}

// metricsOwner is whose rows a metrics route shows: the scoped caller's,
// or for an unscoped caller the user_id asked for (present and empty: the
// unowned bucket); byUser false means every user's, summed per day.
func metricsOwner(r *http.Request) (user string, byUser bool) {
	if u, ok := db.UserScope(r.Context()); ok {
		return u, true
	}
	q := r.URL.Query()
	return q.Get("user_id"), q.Has("user_id")
}

// getMetrics is GET /metrics?starting_date=&ending_date=&user_id=.
func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	user, byUser := metricsOwner(r)
	for _, k := range []string{"starting_date", "ending_date"} {
		if v := q.Get(k); v != "" {
			if _, err := time.Parse(time.DateOnly, v); err != nil {
				return errorf(http.StatusUnprocessableEntity, "%s must be a date (YYYY-MM-DD)", k)
			}
		}
	}
	rows, err := d.ListDailyMetrics(r.Context(), db.MetricsFilter{From: q.Get("starting_date"), To: q.Get("ending_date"), UserID: user, ByUser: byUser})
	if err = s.leaveOutCorrupt(r.Context(), "list metrics", err); err != nil {
		return err
	}
	if !byUser {
		rows = sumByDay(rows)
	}
	views := make([]dayMetricsView, 0, len(rows))
	var latest int64
	for _, m := range rows {
		views = append(views, newDayMetricsView(m))
		latest = max(latest, m.UpdatedAt)
	}
	writeJSON(w, http.StatusOK, map[string]any{"metrics": views, "updated_at": isoTime(latest)})
	return nil
}

// refreshMetrics is POST /metrics/refresh: it aggregates the days since
// the last completed one (db.RefreshMetrics) and answers the caller's rows
// it wrote. One refresh runs per database at a time; a concurrent one
// answers {"status": "already_running"}. With ?background=true it answers
// 202 {"status": "started"} at once and refreshes after, as Agno does; GET
// /metrics/refresh/status follows it. Runs another writer left unreadable
// are left out of the counts and logged.
func (s *Server) refreshMetrics(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	background, err := formBool("background", r.URL.Query().Get("background"), false)
	if err != nil {
		return err
	}
	guard := s.metricsRefreshGuard(d.ID)
	if !guard.TryLock() {
		status := http.StatusOK
		if background {
			status = http.StatusAccepted
		}
		writeJSON(w, status, map[string]any{"status": "already_running", "message": "A metrics refresh is already running"})
		return nil
	}
	s.setRefreshState(d.ID, refreshState{Status: "running", StartedAt: isoTime(time.Now().Unix())})
	if background {
		ctx := context.WithoutCancel(r.Context())
		s.control.background.Go(func() {
			defer guard.Unlock()
			_, err := d.RefreshMetrics(ctx)
			s.endRefresh(ctx, d.ID, s.leaveOutCorrupt(ctx, "refresh metrics", err))
		})
		writeJSON(w, http.StatusAccepted, map[string]any{"status": "started", "message": "Metrics refresh started in background"})
		return nil
	}
	defer guard.Unlock()
	written, err := d.RefreshMetrics(r.Context())
	err = s.leaveOutCorrupt(r.Context(), "refresh metrics", err)
	s.endRefresh(r.Context(), d.ID, err)
	if err != nil {
		return err
	}
	user, byUser := metricsOwner(r)
	if byUser {
		written = slices.DeleteFunc(written, func(m db.DailyMetrics) bool { return m.UserID != user })
	} else {
		written = sumByDay(written)
	}
	views := make([]dayMetricsView, 0, len(written))
	for _, m := range written {
		views = append(views, newDayMetricsView(m))
	}
	writeJSON(w, http.StatusOK, views)
	return nil
}

// refreshState is AgentOS's MetricsRefreshStatusResponse: the most recent
// metrics refresh of a database in this process.
type refreshState struct {
	Status     string  `json:"status"` // idle, running, completed or failed
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	Error      *string `json:"error"`
}

// endRefresh records the end of the running refresh of dbID; a failure
// keeps the detail a client would have been answered (statusOf: never the
// database's own error), its cause logged.
func (s *Server) endRefresh(ctx context.Context, dbID string, err error) {
	s.control.mu.Lock()
	st := s.control.refreshStates[dbID]
	s.control.mu.Unlock()
	st.Status, st.FinishedAt = "completed", isoTime(time.Now().Unix())
	if err != nil {
		_, detail := statusOf(err)
		st.Status, st.Error = "failed", &detail
		s.log.ErrorContext(ctx, "metrics refresh failed", "request_id", requestID(ctx), "db_id", dbID, "err", err)
	}
	s.setRefreshState(dbID, st)
}

func (s *Server) setRefreshState(dbID string, st refreshState) {
	s.control.mu.Lock()
	defer s.control.mu.Unlock()
	if s.control.refreshStates == nil {
		s.control.refreshStates = map[string]refreshState{}
	}
	s.control.refreshStates[dbID] = st
}

// metricsRefreshStatus is GET /metrics/refresh/status: the state of the
// database's most recent refresh in this process, "idle" when none ran.
func (s *Server) metricsRefreshStatus(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	s.control.mu.Lock()
	st, ok := s.control.refreshStates[d.ID]
	s.control.mu.Unlock()
	if !ok {
		st = refreshState{Status: "idle"}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// sumByDay folds every user's rows of a day into one, as AgentOS answers an
// unscoped read: counts add up, token counters and model counts merge.
func sumByDay(rows []db.DailyMetrics) []db.DailyMetrics {
	byDay := map[string][]db.DailyMetrics{}
	for _, m := range rows {
		byDay[m.Date] = append(byDay[m.Date], m)
	}
	out := make([]db.DailyMetrics, 0, len(byDay))
	for date, day := range byDay {
		sum := db.DailyMetrics{ID: date, Date: date, AggregationPeriod: db.DailyMetricsPeriod, Completed: true}
		tokens := map[string]any{}
		models := map[[2]string]map[string]any{}
		for _, m := range day {
			sum.AgentRunsCount += m.AgentRunsCount
			sum.TeamRunsCount += m.TeamRunsCount
			sum.WorkflowRunsCount += m.WorkflowRunsCount
			sum.AgentSessionsCount += m.AgentSessionsCount
			sum.TeamSessionsCount += m.TeamSessionsCount
			sum.WorkflowSessionsCount += m.WorkflowSessionsCount
			sum.UsersCount += m.UsersCount
			sum.Completed = sum.Completed && m.Completed
			sum.CreatedAt = cmp.Or(min(sum.CreatedAt, m.CreatedAt), m.CreatedAt)
			sum.UpdatedAt = max(sum.UpdatedAt, m.UpdatedAt)
			var tm map[string]any
			_ = json.Unmarshal(m.TokenMetrics, &tm)
			mergeCounters(tokens, tm)
			var mm []map[string]any
			_ = json.Unmarshal(m.ModelMetrics, &mm)
			for _, e := range mm {
				id, _ := e["model_id"].(string)
				provider, _ := e["model_provider"].(string)
				k := [2]string{id, provider}
				if models[k] == nil {
					models[k] = map[string]any{}
				}
				mergeCounters(models[k], e)
			}
		}
		sum.TokenMetrics, _ = json.Marshal(tokens)
		list := make([]map[string]any, 0, len(models))
		for _, m := range models {
			list = append(list, m)
		}
		slices.SortFunc(list, func(a, b map[string]any) int {
			return cmp.Or(cmp.Compare(a["model_id"].(string), b["model_id"].(string)), cmp.Compare(a["model_provider"].(string), b["model_provider"].(string)))
		})
		sum.ModelMetrics, _ = json.Marshal(list)
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b db.DailyMetrics) int { return cmp.Compare(a.Date, b.Date) })
	return out
}

// mergeCounters adds src into dst: numbers add, objects merge the same way,
// lists concatenate, anything else is kept from the first.
func mergeCounters(dst, src map[string]any) {
	for k, v := range src {
		switch sv := v.(type) {
		case float64:
			dv, _ := dst[k].(float64)
			dst[k] = dv + sv
		case map[string]any:
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
				dst[k] = dm
			}
			mergeCounters(dm, sv)
		case []any:
			dl, _ := dst[k].([]any)
			dst[k] = append(dl, sv...)
		default:
			if _, ok := dst[k]; !ok {
				dst[k] = v
			}
		}
	}
}

// controlPlane is the server's control-plane state.
type controlPlane struct {
	mu sync.Mutex
	// refreshing guards one metrics refresh per database.
	refreshing map[string]*sync.Mutex
	// refreshStates is each database's most recent refresh.
	refreshStates map[string]refreshState
	// background holds the background refreshes (Close waits for them).
	background sync.WaitGroup
}

func (s *Server) metricsRefreshGuard(dbID string) *sync.Mutex {
	s.control.mu.Lock()
	defer s.control.mu.Unlock()
	if s.control.refreshing == nil {
		s.control.refreshing = map[string]*sync.Mutex{}
	}
	m, ok := s.control.refreshing[dbID]
	if !ok {
		m = &sync.Mutex{}
		s.control.refreshing[dbID] = m
	}
	return m
}
