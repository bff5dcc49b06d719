package agentos

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
)

// route is one row of the API: a method, a literal chi path, the scope a
// caller needs and the handler.
type route struct {
	method  string
	path    string
	scope   scope
	handler handlerFunc
}

// scope is what a route asks of the caller when Auth.Authorization is on:
// action on resource, for the object the URL parameter idParam names ("" for
// the collection), so "agents:<id>:run" grants one agent. admin routes need an
// admin whenever authentication is on, Authorization or not. The zero scope
// is an open route (the probes; see TestRoutes_EveryRouteIsAuthorized).
// perCall routes (the MCP endpoint) need an authenticated caller and check
// each call's scopes themselves. filtered listings (listing) also let in a
// caller granted action on some objects only, and list just those.
type scope struct {
	resource, action, idParam string
	admin                     bool
	perCall                   bool
	filtered                  bool
}

// need is the scope resource:action on the object named by idParam.
func need(resource, action, idParam string) scope {
	return scope{resource: resource, action: action, idParam: idParam}
}

// listing is the scope of the listing of resource (GET /agents, /teams,
// /workflows): as in Agno, a caller granted read on some of its objects only
// (agents:<id>:read) is let in, and the handler lists those (mayRead).
func listing(resource string) scope {
	return scope{resource: resource, action: "read", filtered: true}
}

var (
	open      = scope{}
	adminOnly = scope{admin: true}
	perCall   = scope{perCall: true}
)

// routeTable is the whole API. Run routes are written once against runTarget
// (routes_runs*.go) and listed for each component kind; agents and teams
// continue PAUSED runs, workflows answer continue with 409 (not PAUSED) or
// 501.
func (s *Server) routeTable() []route {
	// Configured components first, then stored ones (server_components.go).
	agentRun := func(h targetHandler) handlerFunc {
		return s.withStored(db.ComponentAgent, "agent_id", "Agent not found", s.agentTarget, h)
	}
	teamRun := func(h targetHandler) handlerFunc {
		return s.withStored(db.ComponentTeam, "team_id", "Team not found", s.teamTarget, h)
	}
	workflowRun := func(h targetHandler) handlerFunc {
		return s.withStored(db.ComponentWorkflow, "workflow_id", "Workflow not found", s.workflowTarget, h)
	}
	return append([]route{
		{"GET", "/health", open, s.getHealth},
		{"GET", "/health/ready", open, s.getReady},

		{"GET", "/", need("config", "read", ""), s.getRoot},
		{"GET", "/config", need("config", "read", ""), s.getConfig},
		{"GET", "/info", need("config", "read", ""), s.getInfo},

		{"GET", "/agents", listing("agents"), s.listAgents},
		{"GET", "/agents/{agent_id}", need("agents", "read", "agent_id"), s.getAgent},
		{"POST", "/agents/{agent_id}/runs", need("agents", "run", "agent_id"), agentRun(s.startRun)},
		{"GET", "/agents/{agent_id}/runs", need("agents", "read", "agent_id"), agentRun(s.listRuns)},
		{"GET", "/agents/{agent_id}/runs/{run_id}", need("agents", "read", "agent_id"), agentRun(s.getRun)},
		{"POST", "/agents/{agent_id}/runs/{run_id}/resume", need("agents", "run", "agent_id"), agentRun(s.resumeRun)},
		{"GET", "/agents/{agent_id}/runs/{run_id}/resume", need("agents", "run", "agent_id"), agentRun(s.resumeRun)},
		{"POST", "/agents/{agent_id}/runs/{run_id}/cancel", need("agents", "run", "agent_id"), agentRun(s.cancelRun)},
		{"POST", "/agents/{agent_id}/runs/{run_id}/continue", need("agents", "run", "agent_id"), agentRun(s.continueAgentRun)},

		{"GET", "/teams", listing("teams"), s.listTeams},
		{"GET", "/teams/{team_id}", need("teams", "read", "team_id"), s.getTeam},
		{"POST", "/teams/{team_id}/runs", need("teams", "run", "team_id"), teamRun(s.startRun)},
		{"GET", "/teams/{team_id}/runs", need("teams", "read", "team_id"), teamRun(s.listRuns)},
		{"GET", "/teams/{team_id}/runs/{run_id}", need("teams", "read", "team_id"), teamRun(s.getRun)},
		{"POST", "/teams/{team_id}/runs/{run_id}/resume", need("teams", "run", "team_id"), teamRun(s.resumeRun)},
		{"GET", "/teams/{team_id}/runs/{run_id}/resume", need("teams", "run", "team_id"), teamRun(s.resumeRun)},
		{"POST", "/teams/{team_id}/runs/{run_id}/cancel", need("teams", "run", "team_id"), teamRun(s.cancelRun)},
		{"POST", "/teams/{team_id}/runs/{run_id}/continue", need("teams", "run", "team_id"), teamRun(s.continueAgentRun)},

		{"GET", "/workflows", listing("workflows"), s.listWorkflows},
		{"GET", "/workflows/{workflow_id}", need("workflows", "read", "workflow_id"), s.getWorkflow},
		{"POST", "/workflows/{workflow_id}/runs", need("workflows", "run", "workflow_id"), workflowRun(s.startRun)},
		{"GET", "/workflows/{workflow_id}/runs", need("workflows", "read", "workflow_id"), workflowRun(s.listRuns)},
		{"GET", "/workflows/{workflow_id}/runs/{run_id}", need("workflows", "read", "workflow_id"), workflowRun(s.getRun)},
		{"POST", "/workflows/{workflow_id}/runs/{run_id}/resume", need("workflows", "run", "workflow_id"), workflowRun(s.resumeRun)},
		{"GET", "/workflows/{workflow_id}/runs/{run_id}/resume", need("workflows", "run", "workflow_id"), workflowRun(s.resumeRun)},
		{"POST", "/workflows/{workflow_id}/runs/{run_id}/cancel", need("workflows", "run", "workflow_id"), workflowRun(s.cancelRun)},
		{"POST", "/workflows/{workflow_id}/runs/{run_id}/continue", need("workflows", "run", "workflow_id"), workflowRun(s.continueWorkflowRun)},

		{"GET", "/sessions", need("sessions", "read", ""), s.listSessions},
		{"POST", "/sessions", need("sessions", "write", ""), s.createSession},
		{"DELETE", "/sessions", need("sessions", "delete", ""), s.deleteSessionList},
		{"GET", "/sessions/{session_id}", need("sessions", "read", "session_id"), s.getSession},
		{"PATCH", "/sessions/{session_id}", need("sessions", "write", "session_id"), s.patchSession},
		{"POST", "/sessions/{session_id}/rename", need("sessions", "write", "session_id"), s.renameSession},
		{"DELETE", "/sessions/{session_id}", need("sessions", "delete", "session_id"), s.deleteSession},
		{"GET", "/sessions/{session_id}/runs", need("sessions", "read", "session_id"), s.listSessionRuns},
		{"GET", "/sessions/{session_id}/runs/{run_id}", need("sessions", "read", "session_id"), s.getSessionRun},
		{"GET", "/sessions/{session_id}/media/{key}", need("sessions", "read", "session_id"), s.getSessionMedia},

		{"GET", "/approvals", need("approvals", "read", ""), s.listApprovals},
		{"GET", "/approvals/count", need("approvals", "read", ""), s.countApprovals},
		{"GET", "/approvals/{approval_id}", need("approvals", "read", "approval_id"), s.getApproval},
		{"POST", "/approvals/{approval_id}/resolve", need("approvals", "write", "approval_id"), s.resolveApproval},
		{"GET", "/memories", need("memories", "read", ""), s.listMemories},
		{"POST", "/memories", need("memories", "write", ""), s.createMemory},
		{"DELETE", "/memories", need("memories", "delete", ""), s.deleteMemories},
		{"GET", "/memories/{memory_id}", need("memories", "read", "memory_id"), s.getMemory},
		{"PATCH", "/memories/{memory_id}", need("memories", "write", "memory_id"), s.patchMemory},
		{"DELETE", "/memories/{memory_id}", need("memories", "delete", "memory_id"), s.deleteMemory},
		{"GET", "/memory_topics", need("memories", "read", ""), s.memoryTopics},
		{"GET", "/user_memory_stats", need("memories", "read", ""), s.userMemoryStats},
		{"POST", "/optimize-memories", need("memories", "write", ""), s.optimizeMemories},

		{"GET", "/learnings", need("learnings", "read", ""), s.listLearnings},
		{"POST", "/learnings", need("learnings", "write", ""), s.createLearning},
		{"GET", "/learnings/users", need("learnings", "read", ""), s.listLearningUsers},
		{"DELETE", "/learnings/users/{user_id}", need("learnings", "delete", ""), s.deleteLearningUser},
		{"GET", "/learnings/{learning_id}", need("learnings", "read", "learning_id"), s.getLearning},
		{"PATCH", "/learnings/{learning_id}", need("learnings", "write", "learning_id"), s.patchLearning},
		{"DELETE", "/learnings/{learning_id}", need("learnings", "delete", "learning_id"), s.deleteLearning},

		{"GET", "/queue/jobs", need("queue", "read", ""), s.listQueueJobs},
		{"GET", "/queue/jobs/{job_id}", need("queue", "read", "job_id"), s.getQueueJob},
		{"POST", "/queue/jobs/{job_id}/requeue", adminOnly, s.requeueQueueJob},
		{"GET", "/queue/stats", need("queue", "read", ""), s.queueStats},
		// Issue 17: control plane (evals, metrics, traces, components). Keep
		// these rows together.
		{"GET", "/eval-runs", need("evals", "read", ""), s.listEvalRuns},
		{"POST", "/eval-runs", need("evals", "write", ""), s.createEvalRun},
		{"DELETE", "/eval-runs", need("evals", "delete", ""), s.deleteEvalRuns},
		{"GET", "/eval-runs/{eval_run_id}", need("evals", "read", "eval_run_id"), s.getEvalRun},
		{"PATCH", "/eval-runs/{eval_run_id}", need("evals", "write", "eval_run_id"), s.renameEvalRun},
		{"GET", "/metrics", need("metrics", "read", ""), s.getMetrics},
		{"POST", "/metrics/refresh", need("metrics", "write", ""), s.refreshMetrics},
		{"GET", "/metrics/refresh/status", need("metrics", "read", ""), s.metricsRefreshStatus},
		{"GET", "/schedules", need("schedules", "read", ""), s.listSchedules},
		{"POST", "/schedules", need("schedules", "write", ""), s.createSchedule},
		{"GET", "/schedules/{schedule_id}", need("schedules", "read", "schedule_id"), s.getSchedule},
		{"PATCH", "/schedules/{schedule_id}", need("schedules", "write", "schedule_id"), s.updateSchedule},
		{"DELETE", "/schedules/{schedule_id}", need("schedules", "delete", "schedule_id"), s.deleteSchedule},
		{"POST", "/schedules/{schedule_id}/enable", need("schedules", "write", "schedule_id"), s.setScheduleEnabled(true)},
		{"POST", "/schedules/{schedule_id}/disable", need("schedules", "write", "schedule_id"), s.setScheduleEnabled(false)},
		{"POST", "/schedules/{schedule_id}/trigger", need("schedules", "write", "schedule_id"), s.triggerSchedule},
		{"GET", "/schedules/{schedule_id}/runs", need("schedules", "read", "schedule_id"), s.listScheduleRuns},
		{"GET", "/schedules/{schedule_id}/runs/{run_id}", need("schedules", "read", "schedule_id"), s.getScheduleRun},
		{"GET", "/components", need("components", "read", ""), s.listComponents},
		{"POST", "/components", need("components", "write", ""), s.createComponent},
		{"GET", "/components/{component_id}", need("components", "read", "component_id"), s.getComponent},
		{"PATCH", "/components/{component_id}", need("components", "write", "component_id"), s.patchComponent},
		{"DELETE", "/components/{component_id}", need("components", "delete", "component_id"), s.deleteComponent},
		{"POST", "/components/{component_id}/restore", need("components", "write", "component_id"), s.restoreComponent},
		{"GET", "/components/{component_id}/configs", need("components", "read", "component_id"), s.listConfigs},
		{"POST", "/components/{component_id}/configs", need("components", "write", "component_id"), s.createConfig},
		{"GET", "/components/{component_id}/configs/current", need("components", "read", "component_id"), s.getCurrentConfig},
		{"GET", "/components/{component_id}/configs/{version}", need("components", "read", "component_id"), s.getConfigVersion},
		{"PATCH", "/components/{component_id}/configs/{version}", need("components", "write", "component_id"), s.patchConfig},
		{"DELETE", "/components/{component_id}/configs/{version}", need("components", "delete", "component_id"), s.deleteConfig},
		{"POST", "/components/{component_id}/configs/{version}/set-current", need("components", "write", "component_id"), s.setCurrentConfig},
		{"GET", "/components/{component_id}/configs/{version}/links", need("components", "read", "component_id"), s.getConfigLinks},
		// Operators' Prometheus scrape (not /metrics: that is Agno's JSON).
		{"GET", "/prometheus", adminOnly, s.getPrometheus},
		{"GET", "/traces", need("traces", "read", ""), s.listTraces},
		{"GET", "/traces/filter-schema", need("traces", "read", ""), s.traceFilterSchema},
		{"POST", "/traces/search", need("traces", "read", ""), s.searchTraces},
		{"GET", "/traces/{trace_id}", need("traces", "read", "trace_id"), s.getTrace},
		{"GET", "/trace_session_stats", need("traces", "read", ""), s.traceSessionStats},
		{"GET", "/knowledge/content", need("knowledge", "read", ""), s.listContent},
		{"POST", "/knowledge/content", need("knowledge", "write", ""), s.uploadContent},
		{"DELETE", "/knowledge/content", need("knowledge", "delete", ""), s.deleteAllContent},
		{"GET", "/knowledge/content/{content_id}", need("knowledge", "read", ""), s.getContent},
		{"PATCH", "/knowledge/content/{content_id}", need("knowledge", "write", ""), s.patchContent},
		{"DELETE", "/knowledge/content/{content_id}", need("knowledge", "delete", ""), s.deleteContent},
		{"GET", "/knowledge/content/{content_id}/status", need("knowledge", "read", ""), s.contentStatus},
		{"POST", "/knowledge/search", need("knowledge", "read", ""), s.searchKnowledge},
		{"GET", "/knowledge/config", need("knowledge", "read", ""), s.knowledgeConfig},

		// Migrations change every user's data.
		{"POST", "/databases/all/migrate", adminOnly, s.migrateAll},
		{"POST", "/databases/{db_id}/migrate", adminOnly, s.migrateOne},
	}, s.mcpRows()...)
}

// routes mounts the route table, each handler behind its URL parameters'
// decoding and its scope's check.
func (s *Server) routes(r chi.Router) {
	for _, rt := range s.routeTable() {
		h := s.handle(rt.handler)
		switch sc := rt.scope; {
		case sc.admin:
			r.With(decodeURLParams, s.requireAdmin).Method(rt.method, rt.path, h)
		case sc.filtered:
			r.With(decodeURLParams, s.requireSomeScope(sc.resource, sc.action)).Method(rt.method, rt.path, h)
		case sc.resource != "":
			r.With(decodeURLParams, s.requireScope(sc.resource, sc.action, sc.idParam)).Method(rt.method, rt.path, h)
		default: // open and perCall: authentication (outside the table) still applies to perCall
			r.With(decodeURLParams).Method(rt.method, rt.path, h)
		}
	}
}

// decodeURLParams percent-decodes the route's URL parameters when chi
// matched the raw path. chi routes on r.URL.RawPath whenever the client's
// escaping differs from Go's own (user%3A1 for user:1, a%2Bb, a%40b,
// a%2Fb, lowercase %c3%a9), and then hands handlers the parameters still
// escaped: an object whose id holds such a character was a 404 to clients
// that encode path segments as encodeURIComponent does. Routing stays on
// the raw path, so an id holding an escaped '/' is still one parameter.
func decodeURLParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx := chi.RouteContext(r.Context()); rctx != nil && r.URL.RawPath != "" {
			for i, v := range rctx.URLParams.Values {
				if d, err := url.PathUnescape(v); err == nil {
					rctx.URLParams.Values[i] = d
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// domainTables are the tables a data route's table query parameter may
// name, as Agno's get_db checks it: each database holds all of them (under
// these names; Agentry has no per-database table names).
var domainTables = []string{"agno_sessions", "agno_memories", "agno_learnings", "agno_metrics", "agno_eval_runs", "agno_knowledge"}

// database resolves the db_id query parameter: empty means the default
// database; an unknown id is a 404. A table parameter (Agno's) needs db_id
// (400 without it) and must name one of the database's tables (404).
func (s *Server) database(r *http.Request) (*db.DB, error) {
	q := r.URL.Query()
	id, table := q.Get("db_id"), q.Get("table")
	if table != "" {
		if id == "" {
			return nil, errorf(http.StatusBadRequest, "The db_id query parameter is required when passing a table")
		}
		if _, ok := s.dbByID[id]; ok && !slices.Contains(domainTables, table) {
			return nil, errorf(http.StatusNotFound, "No database with id '%s' has table '%s'", id, table)
		}
	}
	if id == "" {
		if len(s.dbs) == 0 {
			return nil, errorf(http.StatusNotFound, "No database is configured")
		}
		return s.dbs[0], nil
	}
	d, ok := s.dbByID[id]
	if !ok {
		return nil, errorf(http.StatusNotFound, "Database with ID %s not found", id)
	}
	return d, nil
}

// isoTime renders epoch seconds as AgentOS's ISO-8601 UTC timestamps; zero is null.
func isoTime(sec int64) *string {
	if sec == 0 {
		return nil
	}
	t := time.Unix(sec, 0).UTC().Format(time.RFC3339)
	return &t
}
