package agentos

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge"
)

// TestRoutes_EveryRouteRefusesBadInputAsAnotherUser walks the router (so a
// new route is covered too) on a SQLite database with user isolation on,
// as bob holding every scope, against alice's objects: plain, with
// out-of-range, malformed, repeated and unknown query parameters, with
// malformed bodies of every content type, and with odd path ids. No answer
// is a 5xx or a 403 (admin routes aside), every error is {"detail": ...}
// (the MCP endpoint speaks its own protocol), and no answer shows alice's
// data.
func TestRoutes_EveryRouteRefusesBadInputAsAnotherUser(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	k := testKnowledge(t, d, 0)
	aliceContent, err := k.Insert(context.Background(), knowledge.Content{Text: "alice notes: green tea brewing", UserID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var s *Server
	f := newIsolationFixtureOn(t, d, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, MCP: MCP{Enabled: true},
		Knowledge: []*knowledge.Knowledge{k}})
	seedMemories(t, f.db)
	seedLearnings(t, f.db)
	seedPendingRuns(t, f.db)
	seedControlPlane(t, f.db)
	seedTraces(t, f.db)
	s, err = New(Config{MCP: MCP{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, rt := range s.routeTable() {
		if rt.scope.resource != "" && !slices.Contains(scopes, rt.scope.resource+":"+rt.scope.action) {
			scopes = append(scopes, rt.scope.resource+":"+rt.scope.action)
		}
	}
	bob := bearer(rsToken(t, "bob", scopes...))
	// The content's id is no marker: its status route answers a missing
	// content 200 "failed" with the id, as Agno (its text is one).
	markers := append(aliceMarkers(f), aliceMediaName())
	fill := func(pattern string) string {
		run := f.aliceRun
		switch {
		case strings.HasPrefix(pattern, "/teams"):
			run = f.aliceTeamRun
		case strings.HasPrefix(pattern, "/workflows"):
			run = f.aliceWorkflowRun
		case strings.HasPrefix(pattern, "/schedules"):
			run = "sr-alice"
		}
		return strings.NewReplacer("{agent_id}", "echo", "{team_id}", "squad", "{workflow_id}", "flow", "{run_id}", run,
			"{session_id}", "s-alice", "{key}", aliceMediaName(), "{approval_id}", "ap-alice", "{memory_id}", "m-alice",
			"{learning_id}", "l-alice", "{user_id}", "alice", "{job_id}", "job-missing", "{eval_run_id}", "e-alice",
			"{schedule_id}", "sch-alice", "{component_id}", "c-alice", "{version}", "1", "{trace_id}", "tr-alice",
			"{content_id}", aliceContent.Content.ID, "{db_id}", d.ID).Replace(pattern)
	}
	rows := tableRows(s)
	check := func(key, method, path, body, contentType string) {
		t.Helper()
		req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for h, v := range bob {
			req.Header.Set(h, v)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		data, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		short := string(data)
		if len(short) > 300 {
			short = short[:300] + "…"
		}
		rt := rows[key]
		switch {
		case res.StatusCode >= 500:
			t.Errorf("%s %s (%s) = %d %s, want a 4xx or a success", method, path, contentType, res.StatusCode, short)
		case res.StatusCode == http.StatusForbidden && !rt.scope.admin:
			t.Errorf("%s %s (%s) = 403 %s: another user's object must be a 404", method, path, contentType, short)
		case res.StatusCode >= 400 && rt.scope != perCall && method != http.MethodHead:
			var v struct {
				Detail any `json:"detail"`
			}
			if json.Unmarshal(data, &v) != nil || v.Detail == nil {
				t.Errorf("%s %s (%s) = %d %s, want {\"detail\": ...}", method, path, contentType, res.StatusCode, short)
			}
		case res.StatusCode < 400 && rt.scope != perCall && containsAny(string(data), markers):
			t.Errorf("%s %s (%s) = %d shows alice's data: %s", method, path, contentType, res.StatusCode, short)
		}
	}
	queries := []string{"limit=-1", "limit=0", "limit=99999999999999999999", "limit=abc", "page=0", "page=-3", "page=99999999999",
		"sort_by=nope", "sort_order=sideways", "user_id=alice", "user_id=bob&user_id=alice", "limit=1&limit=2",
		"start_time=yesterday", "end_time=-1", "status=WEIRD", "type=nope", "session_id=s-alice", "component_id=echo&type=agent",
		"db_id=nope", "table=agno_sessions", "knowledge_id=nope", "unknown_filter=1"}
	bodies := []struct{ body, contentType string }{
		{"{", "application/json"}, {"[]", "application/json"}, {"null", "application/json"}, {`"text"`, "application/json"},
		{"{\"a\":1}\x00", "application/json"}, {"{}", "text/plain"}, {"{}", ""},
		{"message=hi&user_id=alice&session_id=s-alice", "application/x-www-form-urlencoded"},
		{"message=hi&message=ho", "application/x-www-form-urlencoded"},
		{`{"user_id":"alice","session_id":"s-alice","session_ids":["s-alice"],"memory_ids":["m-alice"],"run_ids":["e-alice"],"content_ids":["` +
			aliceContent.Content.ID + `"],"limit":-5,"page":-1}`, "application/json"},
		{"--b\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--b\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nho\r\n--b--\r\n", "multipart/form-data; boundary=b"},
		{"--b\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n", "multipart/form-data; boundary=b"},
		{"junk", "multipart/form-data"},
	}
	oddIDs := []string{"a%2Fb", "a%00b", strings.Repeat("x", 4096), "%25", "..", "a%20b", "%E2%80%AE", "%ff"}
	aliceIDs := []string{"s-alice", "m-alice", "l-alice", "ap-alice", "e-alice", "sch-alice", "c-alice", "tr-alice", "job-missing", aliceContent.Content.ID}
	for _, key := range walkRoutes(t, s) {
		method, pattern, _ := strings.Cut(key, " ")
		path := fill(pattern)
		check(key, method, path, "", "")
		for _, q := range queries {
			check(key, method, path+"?"+q, "", "")
		}
		if method != http.MethodGet {
			for _, b := range bodies {
				check(key, method, path, b.body, b.contentType)
			}
		}
		for _, odd := range oddIDs {
			for _, id := range aliceIDs {
				if strings.Contains(path, "/"+id) {
					check(key, method, strings.Replace(path, "/"+id, "/"+odd, 1), "", "")
					break
				}
			}
		}
	}
	for _, method := range []string{http.MethodHead, http.MethodOptions, http.MethodPut, "TRACE", "PROPFIND"} {
		for _, path := range []string{"/sessions", "/sessions/s-alice", "/memories/m-alice", "/knowledge/content/" + aliceContent.Content.ID} {
			check(method+" "+path, method, path, "", "")
		}
	}
	if v := userView(t, f.db, "alice"); !strings.Contains(v, "s-alice") || !strings.Contains(v, "m-alice") {
		t.Errorf("alice's data after bob's calls:\n%s", v)
	}
	if c, err := f.db.GetKnowledgeContent(context.Background(), aliceContent.Content.ID); err != nil || c.UserID != "alice" {
		t.Errorf("alice's content after bob's calls = %+v, %v", c, err)
	}
}
