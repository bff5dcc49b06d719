package agentos

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// isolationKey is the RSA key the isolation tests sign with; generating one is
// slow, so it is shared by the test binary.
var isolationKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// rsaAuthenticator verifies RS256 tokens signed by isolationKey.
func rsaAuthenticator(t *testing.T) *auth.Authenticator {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&isolationKey().PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	k, err := auth.ParseKey("", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Keys: []auth.Key{k}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator("", v)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rsToken signs an RS256 token for sub with the given scopes.
func rsToken(t *testing.T, sub string, scopes ...string) string {
	t.Helper()
	c := jwt.MapClaims{"sub": sub, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	if scopes != nil {
		c["scopes"] = scopes
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(isolationKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forgeSub rewrites a signed token's sub claim, keeping the old signature.
func forgeSub(t *testing.T, token, sub string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	claims["sub"] = sub
	payload, _ = json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// Callers of the matrix. alice owns the objects the routes address; bob is
// another user; admin holds agent_os:admin.
const (
	owner     = "owner"
	otherUser = "other user"
	admin     = "admin"
	noToken   = "no token"
	forged    = "forged token"
)

// Markers of alice's and bob's data: each appears in a response only if that
// user's object was read.
func aliceMarkers(f fixture) []string {
	return append([]string{"s-alice", "m-alice", "l-alice", "ap-alice", f.aliceRun, f.aliceTeamRun, f.aliceWorkflowRun, "hello from alice", "green tea"}, append(controlAliceMarkers, traceAliceMarkers...)...)
}

func bobMarkers(f fixture) []string {
	return append([]string{"s-bob", "m-bob", "l-bob", "ap-bob", f.bobRun, f.bobTeamRun, f.bobWorkflowRun, "hello from bob", "Zürich"}, append(controlBobMarkers, traceBobMarkers...)...)
}

// userView renders everything a user's scope can see in the database: their
// sessions, each session's runs and their memories.
func userView(t *testing.T, d *db.DB, user string) string {
	t.Helper()
	ctx := db.WithUserScope(context.Background(), user)
	var b strings.Builder
	sessions, _, err := d.ListSessions(ctx, db.SessionFilter{Limit: 1000, Page: 1, SortOrder: db.Asc})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		fmt.Fprintf(&b, "session %s %s %s %s %s %d\n", s.SessionID, s.UserID, s.SessionData, s.Metadata, s.Summary, s.UpdatedAt)
		runs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: s.SessionID, Limit: 1000, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			fmt.Fprintf(&b, "  run %s %s %s %d %s\n", r.RunID, r.UserID, r.Status, r.UpdatedAt, r.RunData)
		}
	}
	mems, _, err := d.ListMemories(ctx, db.MemoryFilter{Limit: 1000, Page: 1, SortOrder: db.Asc})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		fmt.Fprintf(&b, "memory %s %s %q %v %d\n", m.MemoryID, m.UserID, m.Memory, m.Topics, m.UpdatedAt)
	}
	ls, _, err := d.ListLearnings(ctx, db.LearningFilter{Limit: 1000, Page: 1, SortOrder: db.Asc})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		fmt.Fprintf(&b, "learning %s %s %s %s %d\n", l.LearningID, l.UserID, l.Content, l.Metadata, l.UpdatedAt)
	}
	controlPlaneView(t, d, ctx, &b)
	tracesView(t, d, ctx, &b)
	aps, _, err := d.ListApprovals(ctx, db.ApprovalFilter{Limit: 1000, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range aps {
		fmt.Fprintf(&b, "approval %s %s %s %s %d\n", a.ID, a.UserID, a.Status, a.ResolvedBy, a.UpdatedAt)
	}
	return b.String()
}

// isoCase is one route of the isolation matrix. Object routes address alice's
// object; list routes return collections.
type isoCase struct {
	name         string
	method, path string
	body         string
	// form sends body as application/x-www-form-urlencoded instead of JSON.
	form bool
	// ok is the owner's and admin's status.
	ok int
	// list routes answer the other user with ok too (without alice's data);
	// object routes answer 404, exactly as for a missing object.
	list bool
	// otherStatus, when set, is the other user's status instead of a missing
	// object's (creating a run in alice's session id cannot make a new session).
	otherStatus int
	// effect, when set, checks the database after the owner's or admin's call.
	effect func(t *testing.T, f fixture, caller string, res response)
	// adminStatus and adminEffect, when set, replace ok and effect for the
	// admin: a run is started and continued as its token's user, as in
	// Agno, so an admin token runs as itself, not as alice.
	adminStatus int
	adminEffect func(t *testing.T, f fixture, res response)
	// otherEffect, when set, checks the other user's own writes (alice's data is
	// checked for every case).
	otherEffect func(t *testing.T, f fixture, res response)
}

// missingTwin maps the case's path onto ids that do not exist, to compare the
// other user's answer with a missing object's.
func missingTwin(f fixture, path string) (twin string, back func(string) string) {
	pairs := append([]string{"s-alice", "s-missing", "m-alice", "m-missing", "l-alice", "l-missing", "ap-alice", "ap-missing"}, append(controlMissingTwins, traceMissingTwins...)...)
	for _, id := range []string{f.aliceRun, f.aliceTeamRun, f.aliceWorkflowRun, alicePendingRun, aliceTeamPendingRun, aliceWorkflowPendingRun} {
		if strings.Contains(path, id) {
			pairs = append(pairs, id, "run-missing")
			break
		}
	}
	undo := make([]string, len(pairs))
	for i := 0; i < len(pairs); i += 2 {
		undo[i], undo[i+1] = pairs[i+1], pairs[i]
	}
	return strings.NewReplacer(pairs...).Replace(path), strings.NewReplacer(undo...).Replace
}

func isolationCases(f fixture) []isoCase {
	sessionGone := func(t *testing.T, f fixture, _ string, _ response) {
		t.Helper()
		if _, err := f.db.GetSession(context.Background(), "s-alice"); err == nil {
			t.Error("s-alice still exists")
		}
	}
	memoryGone := func(t *testing.T, f fixture, _ string, _ response) {
		t.Helper()
		if _, err := f.db.GetMemory(context.Background(), "m-alice"); err == nil {
			t.Error("m-alice still exists")
		}
	}
	sessionNamed := func(name string) func(*testing.T, fixture, string, response) {
		return func(t *testing.T, f fixture, _ string, _ response) {
			t.Helper()
			s, err := f.db.GetSession(context.Background(), "s-alice")
			if err != nil || !strings.Contains(string(s.SessionData), name) {
				t.Errorf("s-alice = %+v, %v; want %q in its data", s, err, name)
			}
		}
	}
	ownedBy := func(kind, id, user string) func(*testing.T, fixture, response) {
		return func(t *testing.T, f fixture, _ response) {
			t.Helper()
			var got string
			var err error
			if kind == "session" {
				var s *db.Session
				if s, err = f.db.GetSession(context.Background(), id); err == nil {
					got = s.UserID
				}
			} else {
				var m *db.Memory
				if m, err = f.db.GetMemory(context.Background(), id); err == nil {
					got = m.UserID
				}
			}
			if err != nil || got != user {
				t.Errorf("%s %s owned by %q (%v), want %q", kind, id, got, err, user)
			}
		}
	}
	createdMemoryOwner := func(user string) func(*testing.T, fixture, response) {
		return func(t *testing.T, f fixture, res response) {
			t.Helper()
			var m memoryView
			if err := json.Unmarshal([]byte(res.body), &m); err != nil {
				t.Fatalf("create memory answer %s: %v", res.body, err)
			}
			ownedBy("memory", m.MemoryID, user)(t, f, res)
		}
	}
	cases := []isoCase{
		// Sessions.
		{name: "list sessions", method: "GET", path: "/sessions", ok: 200, list: true},
		{name: "list sessions filtered to alice", method: "GET", path: "/sessions?user_id=alice", ok: 200, list: true},
		{name: "list sessions by component", method: "GET", path: "/sessions?type=agent&component_id=echo&sort_by=updated_at", ok: 200, list: true},
		{name: "get session", method: "GET", path: "/sessions/s-alice", ok: 200},
		{name: "get session as alice", method: "GET", path: "/sessions/s-alice?user_id=alice", ok: 200},
		{name: "create session for alice", method: "POST", path: "/sessions", body: `{"session_id":"s-new","user_id":"alice"}`, ok: 201, list: true,
			effect:      func(t *testing.T, f fixture, _ string, res response) { ownedBy("session", "s-new", "alice")(t, f, res) },
			adminEffect: ownedBy("session", "s-new", "root"),
			otherEffect: ownedBy("session", "s-new", "bob")},
		{name: "patch session", method: "PATCH", path: "/sessions/s-alice", body: `{"session_state":{"patched":true}}`, ok: 200, effect: sessionNamed("patched")},
		{name: "patch session naming alice", method: "PATCH", path: "/sessions/s-alice?user_id=alice", body: `{"session_name":"mine now"}`, ok: 200, effect: sessionNamed("mine now")},
		{name: "rename session", method: "POST", path: "/sessions/s-alice/rename", body: `{"session_name":"renamed"}`, ok: 200, effect: sessionNamed("renamed")},
		{name: "delete session", method: "DELETE", path: "/sessions/s-alice", ok: 204, effect: sessionGone},
		{name: "delete sessions", method: "DELETE", path: "/sessions", body: `{"session_ids":["s-alice"]}`, ok: 204, list: true, effect: sessionGone},
		{name: "list session runs", method: "GET", path: "/sessions/s-alice/runs", ok: 200},
		{name: "get session run", method: "GET", path: "/sessions/s-alice/runs/" + f.aliceRun, ok: 200},
		{name: "get session media", method: "GET", path: "/sessions/s-alice/media/" + aliceMediaName(), ok: 200},

		// Memories.
		{name: "list memories", method: "GET", path: "/memories", ok: 200, list: true},
		{name: "list memories filtered to alice", method: "GET", path: "/memories?user_id=alice&topics=drinks&search_content=tea", ok: 200, list: true},
		{name: "get memory", method: "GET", path: "/memories/m-alice", ok: 200},
		{name: "get memory as alice", method: "GET", path: "/memories/m-alice?user_id=alice", ok: 200},
		{name: "create memory for alice", method: "POST", path: "/memories", body: `{"memory":"planted","user_id":"alice"}`, ok: 200, list: true,
			effect:      func(t *testing.T, f fixture, _ string, res response) { createdMemoryOwner("alice")(t, f, res) },
			otherEffect: createdMemoryOwner("bob")},
		{name: "patch memory", method: "PATCH", path: "/memories/m-alice", body: `{"memory":"changed","topics":["x"]}`, ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if m, err := f.db.GetMemory(context.Background(), "m-alice"); err != nil || m.Memory != "changed" || m.UserID != "alice" {
					t.Errorf("m-alice = %+v, %v", m, err)
				}
			}},
		{name: "patch memory naming alice", method: "PATCH", path: "/memories/m-alice", body: `{"memory":"changed","user_id":"alice"}`, ok: 200},
		{name: "delete memory", method: "DELETE", path: "/memories/m-alice", ok: 204, effect: memoryGone},
		{name: "delete memories naming alice", method: "DELETE", path: "/memories", body: `{"memory_ids":["m-alice"],"user_id":"alice"}`, ok: 204, list: true, effect: memoryGone},
		// The review queue.
		{name: "list approvals", method: "GET", path: "/approvals", ok: 200, list: true},
		{name: "list pending approvals of alice", method: "GET", path: "/approvals?status=pending&user_id=alice&workflow_id=flow", ok: 200, list: true},
		{name: "count pending approvals", method: "GET", path: "/approvals/count", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, caller string, res response) {
				want := `{"count":1}` // alice's own
				if caller == admin {
					want = `{"count":2}` // everyone's
				}
				if strings.TrimSpace(res.body) != want {
					t.Errorf("%s counts %s, want %s", caller, res.body, want)
				}
			},
			otherEffect: func(t *testing.T, _ fixture, res response) {
				if strings.TrimSpace(res.body) != `{"count":1}` {
					t.Errorf("bob counts %s, want his own 1", res.body)
				}
			}},
		{name: "count pending approvals of alice", method: "GET", path: "/approvals/count?user_id=alice", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, caller string, res response) {
				if strings.TrimSpace(res.body) != `{"count":1}` {
					t.Errorf("%s counts %s, want 1", caller, res.body)
				}
			}},
		{name: "get approval", method: "GET", path: "/approvals/ap-alice", ok: 200},
		{name: "resolve approval", method: "POST", path: "/approvals/ap-alice/resolve", body: `{"status":"approved","resolution_data":{"note":"fine"}}`, ok: 200,
			effect: func(t *testing.T, f fixture, caller string, _ response) {
				a, err := f.db.GetApproval(context.Background(), "ap-alice")
				if err != nil || a.Status != db.ApprovalApproved || a.ResolvedBy == "" {
					t.Errorf("ap-alice after resolve = %+v, %v", a, err)
				}
			}},

		{name: "memory topics", method: "GET", path: "/memory_topics", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, _ string, res response) {
				if !strings.Contains(res.body, "drinks") {
					t.Errorf("topics %s lack alice's", res.body)
				}
			}},
		{name: "memory topics of alice", method: "GET", path: "/memory_topics?user_id=alice", ok: 200, list: true},
		// Learnings (l-shared, with no owner, is readable by all and
		// changeable by admins only).
		{name: "list learnings", method: "GET", path: "/learnings", ok: 200, list: true,
			otherEffect: func(t *testing.T, _ fixture, res response) {
				t.Helper()
				if !contains(res.body, "l-bob", "l-shared") {
					t.Errorf("bob's list %s lacks his own or the shared learning", res.body)
				}
			}},
		{name: "list learnings of alice", method: "GET", path: "/learnings?user_id=alice&learning_type=entity_memory", ok: 200, list: true},
		{name: "get learning", method: "GET", path: "/learnings/l-alice", ok: 200},
		{name: "patch learning", method: "PATCH", path: "/learnings/l-alice", body: `{"content":{"facts":["patched"]}}`, ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				t.Helper()
				if l, err := f.db.GetLearning(context.Background(), "l-alice"); err != nil || !strings.Contains(string(l.Content), "patched") || l.UserID != "alice" {
					t.Errorf("l-alice = %+v, %v", l, err)
				}
			}},
		{name: "delete learning", method: "DELETE", path: "/learnings/l-alice", ok: 204,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				t.Helper()
				if _, err := f.db.GetLearning(context.Background(), "l-alice"); err == nil {
					t.Error("l-alice still exists")
				}
			}},
		{name: "create learning for alice", method: "POST", path: "/learnings", ok: 201, list: true,
			body: `{"learning_type":"entity_memory","namespace":"user","entity_type":"company","entity_id":"acme","user_id":"alice","content":{"facts":["new"]}}`,
			effect: func(t *testing.T, f fixture, _ string, res response) {
				t.Helper()
				if !contains(res.body, `"learning_id":"`+db.EntityLearningID("user", "alice", "company", "acme")+`"`, `"user_id":"alice"`) {
					t.Errorf("created %s", res.body)
				}
			},
			otherEffect: func(t *testing.T, f fixture, res response) {
				t.Helper()
				if res.status != 201 || !contains(res.body, `"learning_id":"`+db.EntityLearningID("user", "bob", "company", "acme")+`"`, `"user_id":"bob"`) {
					t.Errorf("bob's create = %d %s", res.status, res.body)
				}
			}},
		{name: "learning users", method: "GET", path: "/learnings/users", ok: 200, list: true,
			otherEffect: func(t *testing.T, _ fixture, res response) {
				t.Helper()
				if strings.Contains(res.body, `"alice"`) || !strings.Contains(res.body, `"user_id":"bob"`) {
					t.Errorf("bob's learning users = %s", res.body)
				}
			}},
		{name: "delete alice's learnings", method: "DELETE", path: "/learnings/users/alice", ok: 204, otherStatus: 404,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				t.Helper()
				ls, _, err := f.db.ListLearnings(context.Background(), db.LearningFilter{Limit: 10, Page: 1})
				if err != nil || len(ls) != 2 {
					t.Errorf("after deleting alice's learnings: %+v, %v (want bob's and the shared one)", ls, err)
				}
			}},
		{name: "optimize alice's memories", method: "POST", path: "/optimize-memories", body: `{"user_id":"alice"}`, ok: 200, list: true,
			effect: func(t *testing.T, f fixture, _ string, res response) {
				t.Helper()
				ms, _, err := f.db.ListMemories(context.Background(), db.MemoryFilter{UserID: "alice", Limit: 10, Page: 1})
				if err != nil || len(ms) != 1 || ms[0].Memory != "one combined memory" || !strings.Contains(res.body, `"user_id":"alice"`) {
					t.Errorf("alice's memories after optimize = %+v, %v; answer %s", ms, err, res.body)
				}
			},
			otherEffect: func(t *testing.T, f fixture, res response) {
				t.Helper()
				ms, _, err := f.db.ListMemories(context.Background(), db.MemoryFilter{UserID: "bob", Limit: 10, Page: 1})
				if err != nil || len(ms) != 1 || ms[0].Memory != "one combined memory" || !strings.Contains(res.body, `"user_id":"bob"`) {
					t.Errorf("bob's own memories after optimize = %+v, %v; answer %s", ms, err, res.body)
				}
			}},
		{name: "user memory stats", method: "GET", path: "/user_memory_stats", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, _ string, res response) {
				if !strings.Contains(res.body, `"user_id":"alice"`) {
					t.Errorf("stats %s lack alice", res.body)
				}
			}},

		// Agent runs.
		{name: "run in alice's session", method: "POST", path: "/agents/echo/runs", form: true,
			body: "message=more&stream=false&session_id=s-alice&user_id=alice", ok: 200, otherStatus: 404, adminStatus: 409,
			effect: func(t *testing.T, f fixture, _ string, res response) { runOwnedBy(t, f, res, "s-alice", "alice") }},
		{name: "run for alice in a new session", method: "POST", path: "/agents/echo/runs", form: true,
			body: "message=more&stream=false&user_id=alice", ok: 200, list: true,
			effect:      func(t *testing.T, f fixture, _ string, res response) { runOwnedBy(t, f, res, "", "alice") },
			adminEffect: func(t *testing.T, f fixture, res response) { runOwnedBy(t, f, res, "", "root") },
			otherEffect: func(t *testing.T, f fixture, res response) { runOwnedBy(t, f, res, "", "bob") }},
		{name: "list agent runs", method: "GET", path: "/agents/echo/runs", ok: 200, list: true},
		{name: "list agent runs of alice's session", method: "GET", path: "/agents/echo/runs?session_id=s-alice&user_id=alice", ok: 200, list: true},
		{name: "get agent run", method: "GET", path: "/agents/echo/runs/" + f.aliceRun, ok: 200},
		{name: "get agent run naming alice", method: "GET", path: "/agents/echo/runs/" + f.aliceRun + "?session_id=s-alice&user_id=alice", ok: 200},
		{name: "cancel agent run", method: "POST", path: "/agents/echo/runs/" + alicePendingRun + "/cancel", ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if r, err := f.db.GetRun(context.Background(), alicePendingRun); err != nil || r.Status != run.StatusCancelled || r.UserID != "alice" {
					t.Errorf("pending run after cancel = %+v, %v", r, err)
				}
			}},
		// Resuming alice's finished run replays its stored events.
		{name: "resume agent run", method: "POST", path: "/agents/echo/runs/" + f.aliceRun + "/resume", form: true, body: "last_event_index=-1", ok: 200},
		{name: "resume agent run (EventSource)", method: "GET", path: "/agents/echo/runs/" + f.aliceRun + "/resume", ok: 200},
		// alice's run is COMPLETED: the owner reaches it and is told it cannot
		// be continued; the other user must not learn even that, and the
		// admin continues as itself, which owns no such run.
		{name: "continue agent run", method: "POST", path: "/agents/echo/runs/" + f.aliceRun + "/continue", form: true,
			body: "stream=false&user_id=alice&session_id=s-alice", ok: 409, adminStatus: 404},
	}
	cases = append(cases, controlPlaneCases(f)...)
	cases = append(cases, traceCases()...)
	cases = append(cases, componentRunCases("team", "/teams/squad", "s-alice-squad", f.aliceTeamRun, aliceTeamPendingRun)...)
	return append(cases, componentRunCases("workflow", "/workflows/flow", "s-alice-flow", f.aliceWorkflowRun, aliceWorkflowPendingRun)...)
}

// componentRunCases are the run routes of a team or workflow (base is its
// path), over alice's session, her COMPLETED run and her PENDING run.
func componentRunCases(kind, base, session, aliceRun, pendingRun string) []isoCase {
	return []isoCase{
		{name: "run " + kind + " in alice's session", method: "POST", path: base + "/runs", form: true,
			body: "message=more&stream=false&session_id=" + session + "&user_id=alice", ok: 200, otherStatus: 404, adminStatus: 409,
			effect: func(t *testing.T, f fixture, _ string, res response) { runOwnedBy(t, f, res, session, "alice") }},
		{name: "run " + kind + " for alice in a new session", method: "POST", path: base + "/runs", form: true,
			body: "message=more&stream=false&user_id=alice", ok: 200, list: true,
			effect:      func(t *testing.T, f fixture, _ string, res response) { runOwnedBy(t, f, res, "", "alice") },
			adminEffect: func(t *testing.T, f fixture, res response) { runOwnedBy(t, f, res, "", "root") },
			otherEffect: func(t *testing.T, f fixture, res response) { runOwnedBy(t, f, res, "", "bob") }},
		{name: "list " + kind + " runs", method: "GET", path: base + "/runs", ok: 200, list: true},
		{name: "list " + kind + " runs of alice's session", method: "GET", path: base + "/runs?session_id=" + session + "&user_id=alice", ok: 200, list: true},
		{name: "get " + kind + " run", method: "GET", path: base + "/runs/" + aliceRun, ok: 200},
		{name: "get " + kind + " run naming alice", method: "GET", path: base + "/runs/" + aliceRun + "?session_id=" + session + "&user_id=alice", ok: 200},
		{name: "cancel " + kind + " run", method: "POST", path: base + "/runs/" + pendingRun + "/cancel", ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if r, err := f.db.GetRun(context.Background(), pendingRun); err != nil || r.Status != run.StatusCancelled || r.UserID != "alice" {
					t.Errorf("pending run after cancel = %+v, %v", r, err)
				}
			}},
		{name: "resume " + kind + " run", method: "POST", path: base + "/runs/" + aliceRun + "/resume", form: true, body: "session_id=" + session, ok: 200},
		{name: "resume " + kind + " run (EventSource)", method: "GET", path: base + "/runs/" + aliceRun + "/resume", ok: 200},
		// Alice's COMPLETED run cannot be continued: 409 for the owner, 404
		// for the other user and for the admin, which continues as itself (a
		// PAUSED team run's continue is in routes_teams_modes_test.go).
		{name: "continue " + kind + " run", method: "POST", path: base + "/runs/" + aliceRun + "/continue", form: true,
			body: "stream=false", ok: 409, adminStatus: 404},
	}
}

// newIsolationFixture is newFixture plus a team "squad" and a workflow "flow"
// (its one step the echo agent) on the same database, each with a COMPLETED
// run for alice and for bob in their own sessions.
func newIsolationFixture(t *testing.T, cfg Config) fixture {
	t.Helper()
	return newIsolationFixtureOn(t, db.New("mem-db", memory.New()), cfg)
}

// newIsolationFixtureOn is newIsolationFixture on the database d.
func newIsolationFixtureOn(t *testing.T, d *db.DB, cfg Config) fixture {
	t.Helper()
	return newFixtureOn(t, d, cfg, func(f *fixture, echo *agent.Agent, cfg *Config) {
		squad, err := team.New(team.Config{ID: "squad", Name: "Squad", Model: scripted.Reply("the team answer"), Members: []*agent.Agent{echo}, DB: f.db})
		if err != nil {
			t.Fatal(err)
		}
		flow, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: f.db, Steps: []workflow.Step{{Name: "echo", Runner: echo}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, c := range []struct {
			target        runTarget
			user, session string
			runID         *string
		}{
			{squad, "alice", "s-alice-squad", &f.aliceTeamRun}, {squad, "bob", "s-bob-squad", &f.bobTeamRun},
			{flow, "alice", "s-alice-flow", &f.aliceWorkflowRun}, {flow, "bob", "s-bob-flow", &f.bobWorkflowRun},
		} {
			out, err := c.target.Run(ctx, run.TextInput("hello from "+c.user), agent.WithSessionID(c.session), agent.WithUserID(c.user))
			if err != nil {
				t.Fatal(err)
			}
			*c.runID = out.RunID
		}
		cfg.Teams, cfg.Workflows = []*team.Team{squad}, []*workflow.Workflow{flow}
		for _, user := range []string{"alice", "bob"} {
			if err := f.db.CreateApproval(ctx, &db.Approval{ID: "ap-" + user, RunID: "run-" + user + "-paused", SessionID: "s-" + user + "-flow",
				SourceType: "workflow", PauseType: "confirmation", WorkflowID: "flow", UserID: user, RunStatus: "PAUSED"}); err != nil {
				t.Fatal(err)
			}
		}
		store, err := local.New(filepath.Join(t.TempDir(), "media"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := media.Put(ctx, store, media.Owner{DB: f.db.ID, User: "alice", Session: "s-alice"}, "image", "image/jpeg", "a.jpg", []byte(aliceMedia)); err != nil {
			t.Fatal(err)
		}
		cfg.MediaStorage = store
		cfg.MemoryModel = scripted.Reply(`{"summary":"one combined memory","topics":[]}`)
	})
}

// aliceMedia is the content of alice's stored image in s-alice.
const aliceMedia = "a picture in s-alice"

// aliceMediaName is its name in the media route.
func aliceMediaName() string {
	h := sha256.Sum256([]byte(aliceMedia))
	return hex.EncodeToString(h[:]) + ".jpg"
}

// alicePendingRun, aliceTeamPendingRun and aliceWorkflowPendingRun are
// PENDING runs of alice's, stored by seedPendingRuns.
const (
	alicePendingRun         = "run-alice-pending"
	aliceTeamPendingRun     = "run-alice-team-pending"
	aliceWorkflowPendingRun = "run-alice-workflow-pending"
)

// seedPendingRuns stores alice's PENDING runs of echo (in s-alice), squad (in
// s-alice-squad) and flow (in s-alice-flow), as background runs left waiting
// for a worker.
func seedPendingRuns(t *testing.T, d *db.DB) {
	t.Helper()
	for _, o := range []run.Output{
		{RunID: alicePendingRun, AgentID: "echo", SessionID: "s-alice"},
		{RunID: aliceTeamPendingRun, TeamID: "squad", SessionID: "s-alice-squad"},
		{RunID: aliceWorkflowPendingRun, WorkflowID: "flow", SessionID: "s-alice-flow"},
	} {
		o.UserID, o.Status, o.CreatedAt = "alice", run.StatusPending, time.Now().Unix()
		row, err := db.RunFromOutput(&o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
}

// runOwnedBy checks that the run a create answered is stored for user (and,
// when session is set, in that session).
func runOwnedBy(t *testing.T, f fixture, res response, session, user string) {
	t.Helper()
	var out struct {
		RunID  string `json:"run_id"`
		UserID string `json:"user_id"`
	}
	if err := json.Unmarshal([]byte(res.body), &out); err != nil || out.RunID == "" {
		t.Fatalf("run answer %s: %v", res.body, err)
	}
	if out.UserID != user {
		t.Errorf("run answered for user %q, want %q", out.UserID, user)
	}
	r, err := f.db.GetRun(context.Background(), out.RunID)
	if err != nil || r.UserID != user || (session != "" && r.SessionID != session) {
		t.Errorf("run %s = %+v, %v; want user %s in session %q", out.RunID, r, err, user, session)
		return
	}
	s, err := f.db.GetSession(context.Background(), r.SessionID)
	if err != nil || s.UserID != user {
		t.Errorf("session %s of the run = %+v, %v; want user %s", r.SessionID, s, err, user)
	}
}

// TestUserIsolation_Matrix calls every route that touches user data as the
// owner, another user, an admin, without a token and with a forged token, over
// real HTTP with RS256 JWTs and user isolation on. The owner and the admin
// reach alice's objects; the other user gets exactly what a missing object
// gets, never sees alice's data in any answer, cannot widen its scope with a
// user_id, and leaves alice's data untouched; no token (or a forged one) is a
// 401 that changes nothing.
func TestUserIsolation_Matrix(t *testing.T) {
	t.Parallel()
	authn := rsaAuthenticator(t)
	aliceTok := rsToken(t, "alice")
	headers := map[string]map[string]string{
		owner: bearer(aliceTok),
		otherUser: bearer(rsToken(t, "bob", "sessions:read", "sessions:write", "sessions:delete", "memories:read", "memories:write", "memories:delete",
			"agents:read", "agents:run", "teams:read", "teams:run", "workflows:read", "workflows:run", "approvals:read", "approvals:write",
			"evals:read", "evals:write", "evals:delete", "metrics:read", "metrics:write", "traces:read", "components:read", "components:write", "components:delete",
			"schedules:read", "schedules:write", "schedules:delete")),
		admin:   bearer(rsToken(t, "root", auth.AdminScope)),
		noToken: nil,
		forged:  bearer(forgeSub(t, rsToken(t, "bob"), "alice")),
	}
	probe := newIsolationFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: authn}})
	for _, c := range isolationCases(probe) {
		for _, caller := range []string{owner, otherUser, admin, noToken, forged} {
			t.Run(c.name+"/"+caller, func(t *testing.T) {
				t.Parallel()
				f := newIsolationFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: authn}})
				seedMemories(t, f.db)
				seedLearnings(t, f.db)
				seedPendingRuns(t, f.db)
				seedControlPlane(t, f.db)
				seedTraces(t, f.db)
				c := isolationCases(f)[indexOfCase(t, f, c.name)]
				aliceBefore, bobBefore := userView(t, f.db, "alice"), userView(t, f.db, "bob")
				send := func(path string) response {
					h := map[string]string{}
					for k, v := range headers[caller] {
						h[k] = v
					}
					var body io.Reader
					if c.body != "" {
						body = strings.NewReader(c.body)
						h["Content-Type"] = "application/json"
						if c.form {
							h["Content-Type"] = "application/x-www-form-urlencoded"
						}
					}
					return do(t, c.method, f.url+path, body, h)
				}
				res := send(c.path)
				// An admin running as itself must leave alice's data alone.
				adminAsItself := caller == admin && (c.adminStatus != 0 || c.adminEffect != nil)

				switch caller {
				case owner, admin:
					if caller == admin && c.adminStatus != 0 {
						c.ok, c.effect = c.adminStatus, nil
					}
					if caller == admin && c.adminEffect != nil {
						c.effect = func(t *testing.T, f fixture, _ string, res response) { c.adminEffect(t, f, res) }
					}
					if res.status != c.ok {
						t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, res.status, res.body, c.ok)
					}
					if c.method == "GET" && !strings.HasPrefix(c.path, "/memory_topics") && !strings.HasPrefix(c.path, "/user_memory_stats") &&
						!strings.HasPrefix(c.path, "/approvals/count") &&
						!contains(res.body, aliceMarkersIn(f, c.path)...) {
						t.Errorf("%s does not see alice's object: %s", caller, res.body)
					}
					if (caller == owner || strings.Contains(c.path, "user_id=alice")) && containsAny(res.body, bobMarkers(f)) {
						t.Errorf("%s sees bob's data: %s", caller, res.body)
					}
					if caller == admin && c.name == "list sessions" && !strings.Contains(res.body, "s-bob") ||
						caller == admin && c.name == "list memories" && !strings.Contains(res.body, "m-bob") ||
						caller == admin && c.name == "list agent runs" && !strings.Contains(res.body, f.bobRun) ||
						caller == admin && c.name == "list team runs" && !strings.Contains(res.body, f.bobTeamRun) ||
						caller == admin && c.name == "list workflow runs" && !strings.Contains(res.body, f.bobWorkflowRun) {
						t.Errorf("admin does not see bob's data: %s", res.body)
					}
					if c.effect != nil {
						c.effect(t, f, caller, res)
					}
				case otherUser:
					if c.otherStatus != 0 {
						if res.status != c.otherStatus {
							t.Errorf("%s %s = %d %s, want %d", c.method, c.path, res.status, res.body, c.otherStatus)
						}
					} else if c.list {
						if res.status != c.ok {
							t.Errorf("%s %s = %d %s, want %d", c.method, c.path, res.status, res.body, c.ok)
						}
					} else {
						twinPath, back := missingTwin(f, c.path)
						twin := send(twinPath)
						if res.status != 404 || twin.status != 404 || res.detail(t) != back(twin.detail(t)) {
							t.Errorf("%s %s = %d %s; a missing object gets %d %s", c.method, c.path, res.status, res.body, twin.status, twin.body)
						}
					}
					// A 404 echoes the requested id, as for a missing object; any
					// other answer must not mention alice's data at all.
					if res.status != 404 && containsAny(res.body, aliceMarkers(f)) {
						t.Errorf("other user sees alice's data: %s", res.body)
					}
					if c.otherEffect != nil {
						c.otherEffect(t, f, res)
					}
				case noToken, forged:
					if res.status != 401 {
						t.Errorf("%s %s = %d %s, want 401", c.method, c.path, res.status, res.body)
					}
					if after := userView(t, f.db, "bob"); after != bobBefore {
						t.Errorf("bob's data changed:\n%s\nwant\n%s", after, bobBefore)
					}
				}
				if caller != owner && (caller != admin || adminAsItself) {
					if after := userView(t, f.db, "alice"); after != aliceBefore {
						t.Errorf("alice's data changed:\n%s\nwant\n%s", after, aliceBefore)
					}
				}
			})
		}
	}
}

func indexOfCase(t *testing.T, f fixture, name string) int {
	t.Helper()
	for i, c := range isolationCases(f) {
		if c.name == name {
			return i
		}
	}
	t.Fatalf("no case %q", name)
	return -1
}

// aliceMarkersIn lists the markers of the alice object a read route addresses.
func aliceMarkersIn(f fixture, path string) []string {
	p, _, _ := strings.Cut(path, "?")
	if m, ok := controlMarkersIn(p); ok {
		return m
	}
	if m, ok := traceMarkersIn(p); ok {
		return m
	}
	switch {
	case strings.HasPrefix(p, "/memories"):
		return []string{"m-alice"}
	case strings.HasPrefix(p, "/learnings/users"):
		return []string{`"user_id":"alice"`}
	case strings.HasPrefix(p, "/learnings"):
		return []string{"l-alice"}
	case strings.HasPrefix(p, "/approvals"):
		return []string{"ap-alice"}
	case strings.HasPrefix(p, "/teams/"):
		return []string{f.aliceTeamRun}
	case strings.HasPrefix(p, "/workflows/"):
		return []string{f.aliceWorkflowRun}
	case strings.Contains(p, "/runs"):
		return []string{f.aliceRun}
	}
	return []string{"s-alice"}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// seedLearnings stores alice's and bob's entity memories and a shared one.
func seedLearnings(t *testing.T, d *db.DB) {
	t.Helper()
	for _, l := range []db.Learning{
		{LearningID: "l-alice", UserID: "alice", EntityID: "tea", EntityType: "drink", Content: json.RawMessage(`{"facts":["green tea"]}`)},
		{LearningID: "l-bob", UserID: "bob", EntityID: "city", EntityType: "place", Content: json.RawMessage(`{"facts":["Zürich"]}`)},
		{LearningID: "l-shared", AgentID: "echo", EntityID: "acme", EntityType: "company", Content: json.RawMessage(`{"facts":["shared fact"]}`)},
	} {
		l.LearningType, l.Namespace = db.EntityLearningType, "user"
		if _, err := d.UpsertLearning(context.Background(), &l); err != nil {
			t.Fatal(err)
		}
	}
}
