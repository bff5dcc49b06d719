package agentos

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestRunForm_OutputSchemaValidationThatCannotEndIs422: an output_schema
// whose $ref leads back to itself through keywords applying to the same
// value made the validation of a JSON answer recurse until the goroutine's
// stack overflowed, a fatal error that killed the whole server (any caller
// allowed to run an agent could take it down); one whose subschemas double
// at each level validated for ever. Both are 422 before anything runs, and
// recursive schemas that descend into the value still run.
func TestRunForm_OutputSchemaValidationThatCannotEndIs422(t *testing.T) {
	t.Parallel()
	ts, d := schemaServer(t, agent.Config{ID: "json", Name: "JSON", Model: scripted.Reply(`{"name":"a","children":[{"name":"b"}]}`)})

	var doubling strings.Builder
	doubling.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range 40 {
		ref := `{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}`
		doubling.WriteString(`"d` + strconv.Itoa(i) + `":{"allOf":[` + ref + `,` + ref + `]},`)
	}
	doubling.WriteString(`"d40":{"type":"object"}}}`)

	refused := map[string]string{
		"root ref":        `{"$ref":"#"}`,
		"defs cycle":      `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		"through anyOf":   `{"$defs":{"a":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		"through not":     `{"type":"object","not":{"$ref":"#"}}`,
		"anchor":          `{"$defs":{"a":{"$anchor":"loop","oneOf":[{"$ref":"#loop"}]}},"$ref":"#loop"}`,
		"id":              `{"$id":"https://example.com/s.json","allOf":[{"$ref":"https://example.com/s.json"}]}`,
		"dependentSchema": `{"dependentSchemas":{"name":{"$ref":"#"}}}`,
		"doubling":        doubling.String(),
		// jsonschema-go matches keywords case-insensitively: this is its $ref.
		"upper-case ref": `{"$REF":"#"}`,
	}
	for name, schema := range refused {
		res := postForm(t, ts.URL+"/agents/json/runs", map[string]string{"message": "hi", "stream": "false", "output_schema": schema}, nil)
		if res.status != 422 || !strings.Contains(res.detail(t), "output_schema") {
			t.Errorf("%s: %d %s, want 422", name, res.status, res.body)
		}
	}
	if n := countRuns(t, d, db.RunFilter{}); n != 0 {
		t.Fatalf("refused runs stored %d rows", n)
	}

	accepted := map[string]string{
		"tree": `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},` +
			`"children":{"type":"array","items":{"$ref":"#"}}}}`,
		"defs tree": `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},` +
			`"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
		"shared defs": `{"allOf":[{"$ref":"#/$defs/named"},{"$ref":"#/$defs/named"}],"$defs":{"named":{"required":["name"]}}}`,
	}
	for name, schema := range accepted {
		out := decode[run.Output](t, postForm(t, ts.URL+"/agents/json/runs", map[string]string{"message": "hi", "stream": "false", "output_schema": schema}, nil))
		if out.Status != run.StatusCompleted {
			t.Errorf("%s: run %s: %v", name, out.Status, out.Content)
		}
	}
}

// TestRunForm_OutputSchemaWithoutAStrictFormIs422ForAStrictAgent: an agent
// with StrictOutput fails a run whose output_schema has no strict form
// before it starts; the route answered 500 (an internal error) for it, as
// for any run error it did not know, streamed or not. It is 422 naming
// what is wrong, and a schema with a strict form runs. A background run
// was accepted (202) and then stored as failed: it is refused before
// anything is stored, as the others are.
func TestRunForm_OutputSchemaWithoutAStrictFormIs422ForAStrictAgent(t *testing.T) {
	t.Parallel()
	ts, d := schemaServer(t, agent.Config{ID: "json", Model: scripted.Reply(`{"a":"x"}`), StrictOutput: true})
	for _, form := range []map[string]string{{"stream": "false"}, {"stream": "true"}, {"stream": "false", "background": "true"}} {
		form["message"], form["output_schema"] = "hi", `{"type":"object","additionalProperties":{"type":"string"}}`
		res := postForm(t, ts.URL+"/agents/json/runs", form, nil)
		if res.status != 422 || !strings.Contains(res.detail(t), "output_schema") || !strings.Contains(res.detail(t), "no strict form") ||
			strings.Contains(res.detail(t), "WithOutputSchema") {
			t.Errorf("%v: %d %s, want 422", form, res.status, res.body)
		}
	}
	if n := countRuns(t, d, db.RunFilter{}); n != 0 {
		t.Fatalf("refused runs stored %d rows", n)
	}
	out := decode[run.Output](t, postForm(t, ts.URL+"/agents/json/runs", map[string]string{"message": "hi", "stream": "false",
		"output_schema": `{"type":"object","properties":{"a":{"type":"string"}}}`}, nil))
	if out.Status != run.StatusCompleted {
		t.Errorf("strict-able schema: %s %v", out.Status, out.Content)
	}
}

// schemaServer serves the agent of cfg over a SQLite database of its own.
func schemaServer(t *testing.T, cfg agent.Config) (*httptest.Server, *db.DB) {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "test-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cfg.DB = d
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Agents: []*agent.Agent{a}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, d
}
