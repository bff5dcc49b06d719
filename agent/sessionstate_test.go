package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A session state Python stored with numbers float64 cannot hold (a 64-bit
// id, a magnitude beyond float64's range) is read, merged with the run's
// state and stored again with those numbers as they were written. Before,
// the id was rounded (…993 stored back as …992), and a number beyond
// float64's range made the whole stored state unreadable, so the run
// replaced it with its own: every other key was lost.
func TestRun_SessionStateKeepsNumbersFloat64CannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, stored := range map[string]string{
		"big id":  `{"id":9007199254740993,"n":1,"nested":{"ids":[18446744073709551615]}}`,
		"huge":    `{"id":9007199254740993,"n":1,"huge":1e400}`,
		"precise": `{"pi":3.14159265358979323846264338327950288,"n":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := openSQLite(t)
			sid := "s-" + name
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: sid, SessionType: run.TypeAgent, AgentID: "a1",
				SessionData: json.RawMessage(`{"session_state":` + stored + `,"session_name":"kept"}`)}); err != nil {
				t.Fatal(err)
			}
			a := mustAgent(t, Config{ID: "a1", Model: scripted.Reply("ok"), DB: d})
			out, err := a.Run(ctx, run.TextInput("hi"), WithSessionID(sid), WithSessionState(map[string]any{"x": true}))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]json.RawMessage
			if err := json.Unmarshal([]byte(stored), &want); err != nil {
				t.Fatal(err)
			}
			want["x"] = json.RawMessage(`true`)
			wantState, _ := json.Marshal(want)
			s, err := d.GetSession(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			var data struct {
				State json.RawMessage `json:"session_state"`
				Name  string          `json:"session_name"`
			}
			if err := json.Unmarshal(s.SessionData, &data); err != nil {
				t.Fatal(err)
			}
			if diff := jsontest.Diff(wantState, data.State); diff != "" || !jsonTextHas(data.State, stored) || data.Name != "kept" {
				t.Fatalf("stored session_data %s: %s", s.SessionData, diff)
			}
			// The run's own record of the state holds the same numbers.
			row, err := d.GetRun(ctx, out.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var rd struct {
				State json.RawMessage `json:"session_state"`
			}
			if err := json.Unmarshal(row.RunData, &rd); err != nil || !jsonTextHas(rd.State, stored) {
				t.Fatalf("run_data session_state %s (%v)", rd.State, err)
			}
		})
	}
}

// jsonTextHas reports whether every number literal of want's text appears
// in got's text as written (a rounded or reformatted number would not).
func jsonTextHas(got []byte, want string) bool {
	var nums []string
	for i := 0; i < len(want); i++ {
		if c := want[i]; c == '-' || c >= '0' && c <= '9' {
			j := i
			for j < len(want) && (want[j] >= '0' && want[j] <= '9' || want[j] == '.' || want[j] == 'e' || want[j] == '-') {
				j++
			}
			nums = append(nums, want[i:j])
			i = j
		}
	}
	for _, n := range nums {
		if !containsToken(string(got), n) {
			return false
		}
	}
	return true
}

func containsToken(s, tok string) bool {
	for i := 0; i+len(tok) <= len(s); i++ {
		if s[i:i+len(tok)] == tok && (i+len(tok) == len(s) || !isNumByte(s[i+len(tok)])) && (i == 0 || !isNumByte(s[i-1])) {
			return true
		}
	}
	return false
}

func isNumByte(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == '-' }
