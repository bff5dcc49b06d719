package team

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// TestStream_TeamRunNotStoredNeverSaysItCompleted: the team's database
// fails during the run (a member's tool closes it); the stream ends with a
// StorageError TeamRunError and an error wrapping agent.ErrStorage, never
// with TeamRunCompleted.
func TestStream_TeamRunNotStoredNeverSaysItCompleted(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	closeDB := tool.MustFunc(tool.FuncConfig{Name: "close_db", Description: "Closes the database."},
		func(context.Context, struct{}) (string, error) { return "closed", d.Close() })
	w, err := agent.New(agent.Config{ID: "writer", Tools: []tool.Tool{closeDB},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "close_db"}}}, {Content: "hello"}}})})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := New(Config{ID: "t1", Model: leaderScript("writer"), Members: []*agent.Agent{w}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var evs []run.Event
	var streamErr error
	for ev, err := range tm.Stream(context.Background(), run.TextInput("greet")) {
		if err != nil {
			streamErr = err
			continue
		}
		evs = append(evs, ev)
	}
	if !errors.Is(streamErr, agent.ErrStorage) {
		t.Fatalf("stream error %v, want agent.ErrStorage", streamErr)
	}
	for _, e := range evs {
		if e.Event == run.TeamEvent(run.EventRunCompleted) {
			t.Fatal("TeamRunCompleted for a team run that was not stored")
		}
	}
	last := evs[len(evs)-1]
	if last.Event != run.TeamEvent(run.EventRunError) || last.ErrorType != "StorageError" || last.TeamID != "t1" {
		t.Fatalf("last event %+v, want TeamRunError StorageError", last)
	}
	if _, err := tm.Run(context.Background(), run.TextInput("again")); !errors.Is(err, agent.ErrStorage) {
		t.Fatalf("Run on the closed database: %v, want agent.ErrStorage", err)
	}
}

// TestDelegate_MemberStorageErrorNamesNoDatabase: a member whose session
// cannot be read fails the delegation with a generic text; the database's
// error never reaches the leader's model.
func TestDelegate_MemberStorageErrorNamesNoDatabase(t *testing.T) {
	t.Parallel()
	closed := openDB(t)
	w, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("hello"), DB: closed})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Model: leaderScript("writer")}
	tm, err := New(Config{ID: "t1", Model: rec, Members: []*agent.Agent{w}})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := tm.Run(context.Background(), run.TextInput("greet")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	last := reqs[len(reqs)-1]
	tool := last[len(last)-1]
	if !strings.Contains(tool.Content, "member writer could not run: storage error") || strings.Contains(tool.Content, "database is closed") {
		t.Fatalf("the leader's model read %q", tool.Content)
	}
}
