package dbtest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// exactUserTests run UserExactness on every driver with user ids that
// differ only in a trailing space and only in case. MySQL compares VARCHAR
// with PAD SPACE collations ('alice' = 'alice ', even under utf8mb4_bin)
// and Agno's own MySQL tables case-insensitively; a user scope must still
// match its user byte for byte.
var exactUserTests = map[string]func(t *testing.T, d *db.DB){
	"Scope_TrailingSpaceIsAnotherUser": func(t *testing.T, d *db.DB) { UserExactness(t, d, "alice", "alice ") },
	"Scope_CaseIsAnotherUser":          func(t *testing.T, d *db.DB) { UserExactness(t, d, "alice", "Alice") },
	"Scope_CaseIsAnotherUserReversed":  func(t *testing.T, d *db.DB) { UserExactness(t, d, "Alice", "alice") },
	// A schedule's name is unique per owner, compared exactly: another
	// user may take it.
	"Schedules_NameIsUniquePerExactUser": func(t *testing.T, d *db.DB) {
		_, err := d.CreateSchedule(db.WithUserScope(bg, "alice"), schedule("sch1", "nightly", "", 100))
		if errors.Is(err, db.ErrUnsupportedDriver) || errors.Is(err, db.ErrUnsupported) {
			return // the driver does not store schedules
		}
		noErr(t, err)
		_, err = d.CreateSchedule(db.WithUserScope(bg, "Alice"), schedule("sch2", "nightly", "", 100))
		noErr(t, err)
		_, err = d.CreateSchedule(db.WithUserScope(bg, "alice"), schedule("sch3", "nightly", "", 100))
		wantErr(t, err, db.ErrExists)
	},
	// MySQL would take a key ending in a space for the key without it (one
	// primary key, one owner in a unique key): such keys are refused on
	// every backend, so rows written on one can move to another.
	"Keys_EndingInASpaceAreRefused": func(t *testing.T, d *db.DB) {
		padded := db.WithUserScope(bg, "alice ")
		refused := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, db.ErrInvalidRecord) {
				t.Errorf("%s: error = %v, want ErrInvalidRecord", what, err)
			}
		}
		unsupported := func(err error) bool {
			return errors.Is(err, db.ErrUnsupportedDriver) || errors.Is(err, db.ErrUnsupported) || errors.Is(err, db.ErrNoKnowledge)
		}
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		_, err := d.UpsertSession(bg, &db.Session{SessionID: "s1 ", SessionType: "agent"})
		refused("session id", err)
		_, err = d.UpsertSession(bg, &db.Session{SessionID: "s2", SessionType: "agent", UserID: "alice "})
		refused("session user", err)
		_, err = d.UpsertSession(padded, &db.Session{SessionID: "s2", SessionType: "agent"})
		refused("session in a padded scope", err)
		_, err = d.UpsertRun(bg, NewRun("s1", "r1 "))
		refused("run id", err)
		_, err = d.UpsertRun(bg, NewRun("s1 ", "r1"))
		refused("run's session id", err)
		_, _, err = d.SaveRun(padded, &db.Session{SessionID: "s3", SessionType: "agent"}, NewRun("s3", "r3"))
		refused("SaveRun in a padded scope", err)
		_, err = d.UpsertMemory(bg, &db.Memory{MemoryID: "m1 ", Memory: "x"})
		refused("memory id", err)
		_, err = d.UpsertMemory(padded, &db.Memory{MemoryID: "m1", Memory: "x"})
		refused("memory in a padded scope", err)
		err = d.ApplyMemoryChanges(bg, &db.MemoryChanges{UserID: "u", Adds: []db.Memory{{MemoryID: "m2 ", Memory: "x"}}})
		refused("added memory id", err)
		if _, err := d.UpsertLearning(bg, &db.Learning{LearningID: "l1 ", LearningType: db.EntityLearningType, Content: []byte(`{}`)}); !unsupported(err) {
			refused("learning id", err)
		}
		if _, err := d.CreateEvalRun(bg, &db.EvalRun{RunID: "e1 ", EvalType: "reliability", EvalData: []byte(`{}`)}); !unsupported(err) {
			refused("eval run id", err)
		}
		if _, err := d.InsertKnowledgeContent(padded, &db.KnowledgeContent{ID: "k1", Name: "doc"}); !unsupported(err) {
			refused("knowledge in a padded scope", err)
		}
		if err := d.CreateApproval(bg, approval("ap1 ", "r1", "alice", 100)); !unsupported(err) {
			refused("approval id", err)
		}
		if err := d.UpsertToolResult(bg, toolResult("res1 ", "s1", "alice")); !unsupported(err) {
			refused("tool result id", err)
		}
		if _, err := d.CreateSchedule(padded, schedule("sch1", "nightly", "", 100)); !unsupported(err) {
			refused("schedule in a padded scope", err)
		}
		list, _, err := d.ListSessions(bg, db.SessionFilter{Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "sessions stored", sessionIDs(list), []string{"s1"})
	},
}

// UserExactness checks that a caller scoped as other, a user id that a
// backend's collation could take for owner's (a trailing space, another
// case), neither reads, lists, changes nor deletes owner's sessions, runs,
// memories, learnings, knowledge, eval runs, approvals, tool results,
// schedules and traces, and that a user_id filter naming other lists none of
// them. Kinds the driver does not store are left out. Drivers' own tests call
// it on tables with other collations (db/mysql: Agno's utf8mb4_general_ci).
func UserExactness(t *testing.T, d *db.DB, owner, other string) {
	t.Helper()
	own, them := db.WithUserScope(bg, owner), db.WithUserScope(bg, other)
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%q %s of %q's: error = %v, want ErrNotFound", other, what, owner, err)
		}
	}
	none := func(what string, n int, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%q %s: %v", other, what, err)
		} else if n != 0 {
			t.Errorf("%q %s: %d of %q's rows, want none", other, what, n, owner)
		}
	}
	// A write as other finds nothing of owner's, or is refused (a user id
	// ending in a space).
	notWritten := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, db.ErrNotFound) && !errors.Is(err, db.ErrInvalidRecord) {
			t.Errorf("%q %s of %q's: error = %v, want ErrNotFound or ErrInvalidRecord", other, what, owner, err)
		}
	}
	unsupported := func(err error) bool {
		return errors.Is(err, db.ErrUnsupportedDriver) || errors.Is(err, db.ErrUnsupported) || errors.Is(err, db.ErrNoKnowledge)
	}

	// Sessions and runs.
	mustSession(t, own, d, db.Session{SessionID: "s1"})
	mustRun(t, own, d, NewRun("s1", "r1"))
	_, err := d.GetSession(them, "s1")
	notFound("GetSession", err)
	_, _, err = d.SessionHistory(them, db.HistoryQuery{SessionID: "s1", Limit: 5})
	notFound("SessionHistory", err)
	ss, _, err := d.ListSessions(them, db.SessionFilter{Limit: 10, Page: 1})
	none("ListSessions", len(ss), err)
	ss, _, err = d.ListSessions(bg, db.SessionFilter{Limit: 10, Page: 1, UserID: other})
	none("ListSessions filter", len(ss), err)
	_, err = d.GetRun(them, "r1")
	notFound("GetRun", err)
	rs, _, err := d.GetRuns(them, db.RunFilter{SessionID: "s1", Limit: 10, Page: 1})
	none("GetRuns", len(rs), err)
	rs, _, err = d.GetRuns(them, db.RunFilter{Limit: 10, Page: 1})
	none("GetRuns (no session)", len(rs), err)
	rs, _, err = d.GetRuns(bg, db.RunFilter{UserID: other, Limit: 10, Page: 1})
	none("GetRuns filter", len(rs), err)
	rs, err = d.HistoryRuns(them, db.HistoryQuery{SessionID: "s1", Limit: 5})
	none("HistoryRuns", len(rs), err)
	first, err := d.FirstRuns(them, []db.Session{{SessionID: "s1", SessionType: "agent"}})
	none("FirstRuns", len(first), err)
	_, err = d.UpsertSession(them, &db.Session{SessionID: "s1", SessionType: "agent"})
	notWritten("UpsertSession", err)
	_, err = d.UpsertRun(them, NewRun("s1", "r1"))
	notWritten("UpsertRun", err)
	notFound("DeleteRun", d.DeleteRun(them, "r1"))
	noErr(t, d.DeleteSessions(them, "s1"))
	s, err := d.GetSession(own, "s1")
	if err != nil || s.UserID != owner {
		t.Errorf("%q's session after %q's writes and delete: %+v, %v", owner, other, s, err)
	}
	r, err := d.GetRun(own, "r1")
	if err != nil || r.UserID != owner {
		t.Errorf("%q's run after %q's writes and delete: %+v, %v", owner, other, r, err)
	}

	// Memories.
	mustMemory(t, own, d, db.Memory{MemoryID: "m1", Memory: "likes tea", Topics: []string{"drinks"}})
	_, err = d.GetMemory(them, "m1")
	notFound("GetMemory", err)
	ms, _, err := d.ListMemories(them, db.MemoryFilter{Limit: 10, Page: 1})
	none("ListMemories", len(ms), err)
	ms, _, err = d.ListMemories(bg, db.MemoryFilter{UserID: other, Limit: 10, Page: 1})
	none("ListMemories filter", len(ms), err)
	topics, err := d.MemoryTopics(them)
	none("MemoryTopics", len(topics), err)
	stats, _, err := d.UserMemoryStats(them, 10, 1)
	none("UserMemoryStats", len(stats), err)
	_, err = d.UpsertMemory(them, &db.Memory{MemoryID: "m1", Memory: "stolen"})
	notWritten("UpsertMemory", err)
	err = d.ApplyMemoryChanges(them, &db.MemoryChanges{UserID: other, Updates: []db.Memory{{MemoryID: "m1", Memory: "changed"}}})
	notWritten("ApplyMemoryChanges update", err)
	err = d.ApplyMemoryChanges(them, &db.MemoryChanges{UserID: other, Deletes: []string{"m1"}})
	notWritten("ApplyMemoryChanges delete", err)
	noErr(t, d.DeleteMemories(them, "m1"))
	m, err := d.GetMemory(own, "m1")
	if err != nil || m.Memory != "likes tea" || m.UserID != owner {
		t.Errorf("%q's memory after %q's writes and delete: %+v, %v", owner, other, m, err)
	}

	// Learnings.
	if _, err := d.UpsertLearning(bg, &db.Learning{LearningID: "l1", LearningType: db.EntityLearningType, UserID: owner,
		Content: []byte(`{"facts":["x"]}`)}); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetLearning(them, "l1")
		notFound("GetLearning", err)
		ls, _, err := d.ListLearnings(them, db.LearningFilter{Limit: 10, Page: 1})
		none("ListLearnings", len(ls), err)
		ls, _, err = d.ListLearnings(bg, db.LearningFilter{UserID: other, Limit: 10, Page: 1})
		none("ListLearnings filter", len(ls), err)
		us, _, err := d.LearningUsers(them, "", "", 10, 1)
		none("LearningUsers", len(us), err)
		_, err = d.UpsertLearning(them, &db.Learning{LearningID: "l1", LearningType: db.EntityLearningType, Content: []byte(`{"facts":["y"]}`)})
		notWritten("UpsertLearning", err)
		notFound("DeleteLearning", d.DeleteLearning(them, "l1"))
		noErr(t, d.DeleteUserLearnings(them, other, ""))
		noErr(t, d.DeleteUserLearnings(bg, other, ""))
		if l, err := d.GetLearning(own, "l1"); err != nil || l.UserID != owner || !bytes.Contains(l.Content, []byte(`"x"`)) {
			t.Errorf("%q's learning after %q's writes and deletes: %+v, %v", owner, other, l, err)
		}
	}

	// Knowledge.
	if _, err := d.InsertKnowledgeContent(own, &db.KnowledgeContent{ID: "k1", Name: "doc"}); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetKnowledgeContent(them, "k1")
		notFound("GetKnowledgeContent", err)
		ks, _, err := d.ListKnowledgeContents(them, db.KnowledgeFilter{Limit: 10, Page: 1})
		none("ListKnowledgeContents", len(ks), err)
		notFound("UpdateKnowledgeContent", d.UpdateKnowledgeContent(them, &db.KnowledgeContent{ID: "k1", Name: "stolen"}))
		err = d.DeleteKnowledgeContent(them, "k1")
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%q DeleteKnowledgeContent: %v", other, err)
		}
		if k, err := d.GetKnowledgeContent(own, "k1"); err != nil || k.Name != "doc" {
			t.Errorf("%q's knowledge after %q's writes and delete: %+v, %v", owner, other, k, err)
		}
	}

	// Eval runs.
	if _, err := d.CreateEvalRun(bg, &db.EvalRun{RunID: "e1", EvalType: "reliability", UserID: owner,
		EvalData: []byte(`{"eval_status":"PASSED"}`)}); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetEvalRun(them, "e1")
		notFound("GetEvalRun", err)
		es, _, err := d.ListEvalRuns(them, db.EvalFilter{Limit: 10, Page: 1})
		none("ListEvalRuns", len(es), err)
		es, _, err = d.ListEvalRuns(bg, db.EvalFilter{UserID: other, Limit: 10, Page: 1})
		none("ListEvalRuns filter", len(es), err)
		_, err = d.RenameEvalRun(them, "e1", "stolen")
		notFound("RenameEvalRun", err)
		noErr(t, d.DeleteEvalRuns(them, "e1"))
		if e, err := d.GetEvalRun(own, "e1"); err != nil || e.Name == "stolen" {
			t.Errorf("%q's eval run after %q's writes and delete: %+v, %v", owner, other, e, err)
		}
	}

	// Approvals.
	if err := d.CreateApproval(bg, approval("ap1", "r1", owner, 100)); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetApproval(them, "ap1")
		notFound("GetApproval", err)
		as, _, err := d.ListApprovals(them, db.ApprovalFilter{Limit: 10, Page: 1})
		none("ListApprovals", len(as), err)
		as, _, err = d.ListApprovals(bg, db.ApprovalFilter{UserID: other, Limit: 10, Page: 1})
		none("ListApprovals filter", len(as), err)
		_, err = d.ResolveApproval(them, "ap1", db.ApprovalApproved, other, nil)
		notFound("ResolveApproval", err)
		if a, err := d.GetApproval(own, "ap1"); err != nil || a.Status != db.ApprovalPending {
			t.Errorf("%q's approval after %q's resolve: %+v, %v", owner, other, a, err)
		}
	}

	// Tool results.
	if err := d.UpsertToolResult(bg, toolResult("res1", "s1", owner)); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetToolResult(them, "res1")
		notFound("GetToolResult", err)
		trs, err := d.ListToolResults(them, "s1", 10)
		none("ListToolResults", len(trs), err)
		err = d.DeleteToolResult(them, "res1")
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%q DeleteToolResult: %v", other, err)
		}
		if _, err := d.GetToolResult(own, "res1"); err != nil {
			t.Errorf("%q's tool result after %q's delete: %v", owner, other, err)
		}
	}

	// Schedules.
	if _, err := d.CreateSchedule(own, schedule("sch1", "nightly", owner, 100)); !unsupported(err) {
		noErr(t, err)
		_, err = d.GetSchedule(them, "sch1")
		notFound("GetSchedule", err)
		scs, _, err := d.ListSchedules(them, db.ScheduleFilter{Limit: 10, Page: 1})
		none("ListSchedules", len(scs), err)
		err = d.DeleteSchedule(them, "sch1")
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%q DeleteSchedule: %v", other, err)
		}
		if _, err := d.GetSchedule(own, "sch1"); err != nil {
			t.Errorf("%q's schedule after %q's delete: %v", owner, other, err)
		}
	}

	// Traces.
	if d.StoresTraces() {
		noErr(t, d.WriteTraces(bg, []db.Trace{traceRow("t1", owner, "s1", t0, 10)}, []db.Span{spanRow("t1", "t1-root", "", "OK", t0)}))
		_, err = d.GetTrace(them, "t1", "")
		notFound("GetTrace", err)
		ts, _, err := d.ListTraces(them, db.TraceFilter{Limit: 10, Page: 1})
		none("ListTraces", len(ts), err)
		ts, _, err = d.ListTraces(bg, db.TraceFilter{UserID: other, Limit: 10, Page: 1})
		none("ListTraces filter", len(ts), err)
		st, _, err := d.TraceSessionStats(them, db.TraceStatsFilter{Limit: 10, Page: 1})
		none("TraceSessionStats", len(st), err)
	}
}
