package dbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// unicodeSamples are NUL-free strings every backend must keep exactly.
var unicodeSamples = []string{
	"emoji 🚀🧪👩🏽‍💻 flags 🇯🇵",
	"RTL مرحبا بالعالم שלום",
	"CJK 你好，世界 こんにちは",
	"combining e\u0301 and zero-width\u200bjoiner",
	`quotes " ' \ and control	tab`,
}

var dataTests = map[string]func(t *testing.T, d *db.DB){
	"Unicode_RoundTripsInEveryTextAndJSONColumn": func(t *testing.T, d *db.DB) {
		for i, s := range unicodeSamples {
			sid := "sess-" + string(rune('a'+i)) + "-😀"
			name, _ := json.Marshal(map[string]string{"session_name": s})
			mustSession(t, bg, d, db.Session{SessionID: sid, AgentID: s, SessionData: name})
			got, err := d.GetSession(bg, sid)
			noErr(t, err)
			equal(t, "agent_id", got.AgentID, s)
			jsonEqual(t, "session_data", got.SessionData, name)
			r := NewRun(sid, "run-"+sid)
			r.RunData, _ = json.Marshal(map[string]any{"content": s, "messages": []map[string]string{{"role": "user", "content": s}}})
			r.UserID = s
			mustRun(t, bg, d, r)
			gr, err := d.GetRun(bg, r.RunID)
			noErr(t, err)
			jsonEqual(t, "run_data", gr.RunData, r.RunData)
			equal(t, "user_id", gr.UserID, s)
			mustMemory(t, bg, d, db.Memory{MemoryID: "m-" + sid, Memory: s, Topics: []string{s}})
			gm, err := d.GetMemory(bg, "m-"+sid)
			noErr(t, err)
			equal(t, "memory", gm.Memory, s)
			equal(t, "topics", gm.Topics, []string{s})
		}
		list, _, err := d.ListSessions(bg, db.SessionFilter{SessionName: "مرحبا", Limit: 10, Page: 1})
		noErr(t, err)
		equal(t, "search by RTL name", len(list), 1)
	},
	"NULInJSON_StoredWithTheRestIntact": func(t *testing.T, d *db.DB) {
		// A NUL character (a binary file read by a tool, a shell command's
		// output) in a JSON column: every backend stores the row, keeping
		// the NUL or, on Postgres (jsonb holds no U+0000), removing it as
		// Agno's Postgres writer does; the text "\u0000" (an escaped
		// backslash) is kept exactly everywhere.
		nul, literal := "a\x00b", `c\u0000d`
		oneOf := func(what, got string) {
			t.Helper()
			if got != nul && got != "ab" {
				t.Fatalf("%s = %q, want %q or %q", what, got, nul, "ab")
			}
		}
		data, _ := json.Marshal(map[string]string{"session_name": nul, "note": literal})
		mustSession(t, bg, d, db.Session{SessionID: "s", SessionData: data})
		gs, err := d.GetSession(bg, "s")
		noErr(t, err)
		var sd map[string]string
		noErr(t, json.Unmarshal(gs.SessionData, &sd))
		oneOf("session_name", sd["session_name"])
		equal(t, "session_data note", sd["note"], literal)

		r := NewRun("s", "r")
		r.RunData, _ = json.Marshal(map[string]any{"run_id": "r", "content": nul, "note": literal,
			"tools": []map[string]string{{"tool_name": "read_file", "result": nul}}})
		mustRun(t, bg, d, r)
		r2 := NewRun("s", "r2")
		r2.RunData = bytes.Replace(r.RunData, []byte(`"run_id":"r"`), []byte(`"run_id":"r2"`), 1)
		_, _, err = d.SaveRun(bg, &db.Session{SessionID: "s", SessionType: run.TypeAgent, SessionData: data}, r2)
		noErr(t, err)
		for _, id := range []string{"r", "r2"} {
			gr, err := d.GetRun(bg, id)
			noErr(t, err)
			var out struct {
				RunID   string `json:"run_id"`
				Content string `json:"content"`
				Note    string `json:"note"`
				Tools   []struct {
					Result string `json:"result"`
				} `json:"tools"`
			}
			noErr(t, json.Unmarshal(gr.RunData, &out))
			oneOf("content", out.Content)
			oneOf("tool result", out.Tools[0].Result)
			equal(t, "note", out.Note, literal)
			equal(t, "run_id", out.RunID, id)
		}

		mustMemory(t, bg, d, db.Memory{MemoryID: "m", Memory: nul, Topics: []string{nul, literal}})
		gm, err := d.GetMemory(bg, "m")
		noErr(t, err)
		oneOf("memory", gm.Memory)
		oneOf("topic", gm.Topics[0])
		equal(t, "topic", gm.Topics[1], literal)
	},
	"NULInFreeText_StoredWithTheRestIntact": func(t *testing.T, d *db.DB) {
		// A NUL byte in a free-text column (a user's message as a memory's
		// input, an error message from a tool's binary output in a span):
		// Postgres text holds no U+0000 and refused the whole statement (a
		// trace batch with one such span was lost); the row is stored,
		// keeping the NUL or removing it as Agno's Postgres writer does.
		nul := "a\x00b"
		oneOf := func(what, got string) {
			t.Helper()
			if got != nul && got != "ab" {
				t.Fatalf("%s = %q, want %q or %q", what, got, nul, "ab")
			}
		}
		unsupported := func(err error) bool {
			return errors.Is(err, db.ErrUnsupportedDriver) || errors.Is(err, db.ErrUnsupported) || errors.Is(err, db.ErrNoKnowledge)
		}
		mustMemory(t, bg, d, db.Memory{MemoryID: "m", Memory: "likes tea", Input: nul, Feedback: nul, UserID: "u"})
		gm, err := d.GetMemory(bg, "m")
		noErr(t, err)
		oneOf("memory input", gm.Input)
		oneOf("memory feedback", gm.Feedback)
		if _, err := d.CreateEvalRun(bg, &db.EvalRun{RunID: "e", EvalType: "accuracy", EvalData: json.RawMessage(`{}`),
			Name: nul, EvaluatedComponentName: nul}); !unsupported(err) {
			noErr(t, err)
			ge, err := d.GetEvalRun(bg, "e")
			noErr(t, err)
			oneOf("eval name", ge.Name)
			oneOf("evaluated component name", ge.EvaluatedComponentName)
		}
		t0 := time.Unix(1_700_000_000, 0).UTC()
		sp := spanRow("t", "t-root", "", "ERROR", t0)
		sp.StatusMessage = nul
		if err := d.WriteTraces(bg, []db.Trace{traceRow("t", "u", "s", t0, 1)}, []db.Span{sp}); !unsupported(err) {
			noErr(t, err)
			spans, err := d.Spans(bg, "t")
			noErr(t, err)
			equal(t, "spans", len(spans), 1)
			oneOf("span status message", spans[0].StatusMessage)
		}
		if _, err := d.InsertKnowledgeContent(bg, &db.KnowledgeContent{ID: "k", Name: nul, Description: nul, StatusMessage: nul}); !unsupported(err) {
			noErr(t, err)
			gk, err := d.GetKnowledgeContent(bg, "k")
			noErr(t, err)
			oneOf("knowledge name", gk.Name)
			oneOf("knowledge description", gk.Description)
			oneOf("knowledge status message", gk.StatusMessage)
		}
	},
	"LargeRunData_OneMegabyteRoundTrips": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s"})
		msgs := make([]map[string]string, 0, 1100)
		chunk := strings.Repeat("lorem ipsum ✓ ", 70)
		for len(msgs)*len(chunk) < 1<<20 {
			msgs = append(msgs, map[string]string{"role": "assistant", "content": chunk})
		}
		data, _ := json.Marshal(map[string]any{"run_id": "big", "messages": msgs})
		if len(data) < 1<<20 {
			t.Fatalf("fixture is %d bytes, want >= 1 MiB", len(data))
		}
		r := NewRun("s", "big")
		r.RunData = data
		mustRun(t, bg, d, r)
		got, err := d.GetRun(bg, "big")
		noErr(t, err)
		jsonEqual(t, "1 MiB run_data", got.RunData, data)
		page, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 1, Page: 1})
		noErr(t, err)
		equal(t, "via GetRuns", len(page[0].RunData) >= 1<<20-4096, true)
	},
	"Timestamps_AreEpochSecondsSetOnWrite": func(t *testing.T, d *db.DB) {
		before := time.Now().Unix()
		s := mustSession(t, bg, d, db.Session{SessionID: "s"})
		r := mustRun(t, bg, d, NewRun("s", "r"))
		after := time.Now().Unix()
		for what, v := range map[string]int64{"session created_at": s.CreatedAt, "session updated_at": s.UpdatedAt,
			"run created_at": r.CreatedAt, "run updated_at": r.UpdatedAt} {
			if v < before || v > after {
				t.Fatalf("%s = %d, want epoch seconds in [%d, %d]", what, v, before, after)
			}
		}
		got, err := d.GetRun(bg, "r")
		noErr(t, err)
		equal(t, "stored created_at", got.CreatedAt, r.CreatedAt)
	},
	"Run_OutputDecodesAgnoFields": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s"})
		mustRun(t, bg, d, NewRun("s", "r"))
		got, err := d.GetRun(bg, "r")
		noErr(t, err)
		out, err := got.Output()
		noErr(t, err)
		equal(t, "run_id from run_data", out.RunID, "r")
	},
}
