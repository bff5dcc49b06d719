package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// TestSameJSON_PostgresNormalisedAgentData: Postgres stores agent_data as
// JSONB and gives it back normalised; the agent's unchanged-session check
// must still see it as unchanged (else it rewrites the row every turn).
func TestSameJSON_PostgresNormalisedAgentData(t *testing.T) {
	t.Parallel()
	d := testdbs.Postgres(t)
	data, err := json.Marshal(map[string]any{"name": "Bench", "model": map[string]any{"id": "scripted", "provider": "scripted"}, "agent_id": "bench"})
	if err != nil {
		t.Fatal(err)
	}
	s := &db.Session{SessionID: "s-jsonb", SessionType: run.TypeAgent, AgentID: "bench", AgentData: data, CreatedAt: 1}
	if _, err := d.UpsertSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetSession(context.Background(), "s-jsonb")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got.AgentData, data) {
		t.Fatalf("Postgres gave agent_data back byte for byte (%s): this test no longer covers normalisation", got.AgentData)
	}
	if !db.SameJSON(got.AgentData, data) {
		t.Fatalf("agent_data %s read back as %s is not the same JSON", data, got.AgentData)
	}
}

// TestJSONMemo: the memo answers only for the exact pair it saw equal; a
// change on either side, or to the caller's bytes afterwards, is compared
// again.
func TestJSONMemo(t *testing.T) {
	var m jsonMemo
	mine := []byte(`{"b":2,"a":1}`)
	stored := []byte(`{"a": 1, "b": 2}`)
	for _, c := range []struct {
		name         string
		stored, mine string
		want         bool
	}{
		{"normalised", string(stored), string(mine), true},
		{"again", string(stored), string(mine), true},
		{"stored changed", `{"a": 1, "b": 3}`, string(mine), false},
		{"mine changed", string(stored), `{"b":3,"a":1}`, false},
		{"back to the pair", string(stored), string(mine), true},
	} {
		if got := m.same([]byte(c.stored), []byte(c.mine)); got != c.want {
			t.Errorf("%s: same(%s, %s) = %v, want %v", c.name, c.stored, c.mine, got, c.want)
		}
	}
	// The memo keeps its own copy: the caller's buffer may be reused.
	var fresh jsonMemo
	buf := bytes.Clone(stored)
	if !fresh.same(buf, mine) {
		t.Fatal("same pair not equal")
	}
	buf[len(buf)-2] = '3'
	if fresh.same(buf, mine) {
		t.Errorf("same(%s, %s) = true after the caller changed its bytes", buf, mine)
	}
}

// TestJSONMemo_Concurrent: runs of one agent share the memo; pairs that
// replace each other in it never get another pair's answer.
func TestJSONMemo_Concurrent(t *testing.T) {
	t.Parallel()
	var m jsonMemo
	pairs := []struct {
		stored, mine []byte
		want         bool
	}{
		{[]byte(`{"a": 1}`), []byte(`{"a":1}`), true},
		{[]byte(`{"a": 2, "b": 1}`), []byte(`{"b":1,"a":2}`), true},
		{[]byte(`{"a": 1}`), []byte(`{"b":1,"a":2}`), false},
		{[]byte(`{"a": 2, "b": 1}`), []byte(`{"a":1}`), false},
	}
	done := make(chan string, 8)
	for g := range 8 {
		go func() {
			for i := range 200 {
				p := pairs[(g+i)%len(pairs)]
				if got := m.same(p.stored, p.mine); got != p.want {
					done <- fmt.Sprintf("same(%s, %s) = %v", p.stored, p.mine, got)
					return
				}
			}
			done <- ""
		}()
	}
	for range 8 {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}
