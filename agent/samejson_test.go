package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

func TestSameJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"a":1,"b":[true,null]}`, true},
		{`{"b":[true,null],"a":1}`, `{"a": 1, "b": [true, null]}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":9007199254740993}`, `{"a":9007199254740992}`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`{"a":1}`, ``, false},
		{``, ``, true},
		{`{"a":`, `{"a":1}`, false},
	} {
		if got := sameJSON([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

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
	if !sameJSON(got.AgentData, data) {
		t.Fatalf("agent_data %s read back as %s is not the same JSON", data, got.AgentData)
	}
}
