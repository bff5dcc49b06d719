package agentos

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agentos/auth"
)

// openRoutes are the routes without a scope: the liveness and readiness
// probes, which authentication skips by default. Every other route must
// answer 403 to a caller without its scope.
var openRoutes = []string{"GET /health", "GET /health/ready"}

// outsideIsolationMatrix are the routes that read or change no user's data,
// with the reason. Every other route needs a row in isolationCases
// (isolation_test.go).
var outsideIsolationMatrix = map[string]string{
	"GET /":                           "describes the OS",
	"GET /config":                     "describes the OS",
	"GET /info":                       "describes the OS",
	"GET /agents":                     "describes the agents",
	"GET /agents/{agent_id}":          "describes an agent",
	"GET /teams":                      "describes the teams",
	"GET /teams/{team_id}":            "describes a team",
	"GET /workflows":                  "describes the workflows",
	"GET /workflows/{workflow_id}":    "describes a workflow",
	"POST /databases/all/migrate":     "admin only: migrates the tables of every user at once",
	"POST /databases/{db_id}/migrate": "admin only: migrates the tables of every user at once",
	// The durable queue needs a SQL database; the matrix fixture is in memory.
	"GET /queue/jobs":                   "durable queue: isolated per user in TestDurableQueue_RoutesAreIsolatedPerUser",
	"GET /queue/jobs/{job_id}":          "durable queue: isolated per user in TestDurableQueue_RoutesAreIsolatedPerUser",
	"POST /queue/jobs/{job_id}/requeue": "admin only (TestDurableQueue_RoutesAreIsolatedPerUser)",
	"GET /queue/stats":                  "durable queue: isolated per user in TestDurableQueue_RoutesAreIsolatedPerUser",
	"GET /prometheus":                   "admin only: process-wide operator metrics, no user's data",
	"GET /traces/filter-schema":         "describes the search filter's fields, no user's data",
	"GET /metrics/refresh/status":       "the state of the process's last metrics refresh, no user's data",
	// The knowledge routes have their own matrix (owner, other user, admin,
	// shared rows, no token): TestKnowledgeRoutes_IsolationMatrix.
	"GET /knowledge/content":                     "knowledge: routes_knowledge_test.go matrix",
	"POST /knowledge/content":                    "knowledge: routes_knowledge_test.go matrix",
	"DELETE /knowledge/content":                  "knowledge: routes_knowledge_test.go matrix",
	"GET /knowledge/content/{content_id}":        "knowledge: routes_knowledge_test.go matrix",
	"PATCH /knowledge/content/{content_id}":      "knowledge: routes_knowledge_test.go matrix",
	"DELETE /knowledge/content/{content_id}":     "knowledge: routes_knowledge_test.go matrix",
	"GET /knowledge/content/{content_id}/status": "knowledge: routes_knowledge_test.go matrix",
	"POST /knowledge/search":                     "knowledge: routes_knowledge_test.go matrix",
	"GET /knowledge/config":                      "knowledge: routes_knowledge_test.go matrix",
	// The MCP endpoint's isolation is per tool call: TestMCP_UsersAreIsolated.
	"POST /mcp":   "MCP: isolated per tool call (mcp_test.go)",
	"GET /mcp":    "MCP: isolated per tool call (mcp_test.go)",
	"DELETE /mcp": "MCP: isolated per tool call (mcp_test.go)",
}

// walkRoutes lists the routes the server's router serves as "METHOD /path".
func walkRoutes(t *testing.T, s *Server) []string {
	t.Helper()
	var keys []string
	err := chi.Walk(s.router, func(method, path string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		keys = append(keys, method+" "+path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("the router serves no route")
	}
	return keys
}

// tableRows indexes the route table by "METHOD /path".
func tableRows(s *Server) map[string]route {
	rows := map[string]route{}
	for _, rt := range s.routeTable() {
		rows[rt.method+" "+rt.path] = rt
	}
	return rows
}

// concrete fills a chi pattern's parameters with "x".
func concrete(pattern string) string {
	return regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(pattern, "x")
}

// TestRoutes_EveryRouteIsAuthorized walks the router with authorization on:
// every route is a row of the route table; every route but openRoutes
// answers 403 to a token without scopes and lets through a token holding
// exactly the row's scope (for the object the URL names, so a wrong id
// parameter fails too); admin routes let through only admins. A route
// mounted outside the table, or a row without a scope, fails.
func TestRoutes_EveryRouteIsAuthorized(t *testing.T) {
	t.Parallel()
	var s *Server
	ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t), Authorization: true},
		MCP: MCP{Enabled: true}}, func(srv *Server) { s = srv })
	rows := tableRows(s)
	noScopes := bearer(rsToken(t, "mallory"))
	admin := bearer(rsToken(t, "root", auth.AdminScope))
	for _, key := range walkRoutes(t, s) {
		rt, ok := rows[key]
		if !ok {
			t.Errorf("%s is mounted outside the route table: add it as a row in routes.go", key)
			continue
		}
		url := ts.URL + concrete(rt.path)
		switch sc := rt.scope; {
		case sc == perCall:
			// Authenticated; the scopes are checked per tool (TestMCP_ScopesPerTool).
			if res := do(t, rt.method, url, nil, nil); res.status != http.StatusUnauthorized {
				t.Errorf("per-call route %s without a token = %d, want 401", key, res.status)
			}
			if res := do(t, rt.method, url, nil, noScopes); res.status == http.StatusUnauthorized || res.status == http.StatusForbidden {
				t.Errorf("per-call route %s with a token = %d %s, want past authentication", key, res.status, res.body)
			}
		case sc == open:
			if !slices.Contains(openRoutes, key) {
				t.Errorf("%s has no scope: give its row one in routes.go (or, for a probe, list it in openRoutes)", key)
				continue
			}
			if res := do(t, rt.method, url, nil, nil); res.status == http.StatusUnauthorized || res.status == http.StatusForbidden {
				t.Errorf("open route %s without a token = %d %s", key, res.status, res.body)
			}
		case sc.admin:
			if res := do(t, rt.method, url, nil, noScopes); res.status != http.StatusForbidden {
				t.Errorf("admin route %s as a user = %d %s, want 403", key, res.status, res.body)
			}
			if res := do(t, rt.method, url, nil, admin); res.status == http.StatusForbidden || res.status == http.StatusUnauthorized {
				t.Errorf("admin route %s as an admin = %d %s", key, res.status, res.body)
			}
		default:
			if slices.Contains(openRoutes, key) {
				t.Errorf("%s is listed in openRoutes but has the scope %+v", key, sc)
			}
			if res := do(t, rt.method, url, nil, noScopes); res.status != http.StatusForbidden ||
				res.detail(t) != "Insufficient permissions: requires "+sc.resource+":"+sc.action {
				t.Errorf("%s without scopes = %d %s, want 403 naming %s:%s", key, res.status, res.body, sc.resource, sc.action)
			}
			grant := sc.resource + ":" + sc.action
			if sc.idParam != "" {
				grant = sc.resource + ":x:" + sc.action
			}
			if res := do(t, rt.method, url, nil, bearer(rsToken(t, "mallory", grant))); res.status == http.StatusForbidden || res.status == http.StatusUnauthorized {
				t.Errorf("%s with %s = %d %s, want past the scope check", key, grant, res.status, res.body)
			}
		}
	}
	for _, key := range openRoutes {
		if rt, ok := rows[key]; !ok || rt.scope != open {
			t.Errorf("openRoutes lists %s, which is not an open route of the table", key)
		}
	}
}

// patternMatcher matches concrete paths against a chi pattern.
func patternMatcher(pattern string) *regexp.Regexp {
	parts := regexp.MustCompile(`\{[^}]+\}`).Split(pattern, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^/]+") + "$")
}

// TestIsolationMatrix_CoversEveryRoute walks the router: every route but
// openRoutes and outsideIsolationMatrix has at least one row in the user
// isolation matrix, so a new route that touches user data fails here until
// the matrix proves that one user cannot reach another's data through it.
func TestIsolationMatrix_CoversEveryRoute(t *testing.T) {
	t.Parallel()
	s, err := New(Config{MCP: MCP{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{aliceRun: "run-a", bobRun: "run-b", aliceTeamRun: "run-at", bobTeamRun: "run-bt",
		aliceWorkflowRun: "run-aw", bobWorkflowRun: "run-bw"}
	cases := isolationCases(f)
	routes := walkRoutes(t, s)
	for _, key := range routes {
		if slices.Contains(openRoutes, key) || outsideIsolationMatrix[key] != "" {
			continue
		}
		method, pattern, _ := strings.Cut(key, " ")
		m := patternMatcher(pattern)
		if !slices.ContainsFunc(cases, func(c isoCase) bool {
			p, _, _ := strings.Cut(c.path, "?")
			return c.method == method && m.MatchString(p)
		}) {
			t.Errorf("%s has no row in the isolation matrix: add one to isolationCases (isolation_test.go), "+
				"or list it in outsideIsolationMatrix with the reason it touches no user's data", key)
		}
	}
	for key := range outsideIsolationMatrix {
		if !slices.Contains(routes, key) {
			t.Errorf("outsideIsolationMatrix lists %s, which the router does not serve", key)
		}
	}
}
