package agent

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/embedder/local"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/vectordb/embedded"
)

// taggedKnowledge holds three shared documents tagged by planet and language.
func taggedKnowledge(t *testing.T) *knowledge.Knowledge {
	t.Helper()
	d := testdbs.SQLite(t)
	e := local.New(local.Config{Dimensions: 64})
	vs, err := embedded.Open(context.Background(), embedded.Config{Path: filepath.Join(t.TempDir(), "v.db"), Dimensions: 64, EmbedderID: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, err := knowledge.New(knowledge.Config{Name: "kb", DB: d, Vectors: vs, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text         string
		planet, lang string
	}{
		{"Mars moons: Phobos and Deimos.", "mars", "en"},
		{"Venus moons: none at all.", "venus", "en"},
		{"Lunes de Mars : Phobos et Deimos.", "mars", "fr"},
	} {
		if _, err := k.Insert(context.Background(), knowledge.Content{Text: c.text, Metadata: map[string]any{"planet": c.planet, "lang": c.lang}}); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// The run's knowledge_filters are merged over the agent's: a key of the run
// replaces the agent's value, the agent's other keys still apply.
func TestWithKnowledgeFilters_MergedOverTheAgentsFilters(t *testing.T) {
	t.Parallel()
	k := taggedKnowledge(t)
	tests := []struct {
		name      string
		opts      []RunOption
		want, not []string
	}{
		{"agent filters only", nil, []string{"Mars moons", "Venus moons"}, []string{"Lunes"}},
		{"run adds a key", []RunOption{WithKnowledgeFilters(map[string]any{"planet": "venus"})}, []string{"Venus moons"}, []string{"Mars moons", "Lunes"}},
		{"run replaces a key", []RunOption{WithKnowledgeFilters(map[string]any{"lang": "fr"})}, []string{"Lunes"}, []string{"Mars moons", "Venus moons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &recorder{Model: script(t, scripted.Turn{Content: "ok"})}
			a := mustAgent(t, Config{Knowledge: k, AddKnowledgeToContext: true, KnowledgeFilters: map[string]any{"lang": "en"}, Model: m})
			if _, err := a.Run(context.Background(), run.TextInput("moons of the planets"), tt.opts...); err != nil {
				t.Fatal(err)
			}
			var seen string
			for _, msg := range m.requests()[0] {
				if msg.Role == model.RoleUser {
					seen = msg.Content
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(seen, w) {
					t.Errorf("user message lacks %q: %s", w, seen)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(seen, n) {
					t.Errorf("user message has %q: %s", n, seen)
				}
			}
			if got := a.Config().KnowledgeFilters; len(got) != 1 || got["lang"] != "en" {
				t.Errorf("the agent's filters changed: %v", got)
			}
		})
	}
}

// WithAddHistoryToContext turns the session's history on or off for one run,
// whatever the agent's config says.
func TestWithAddHistoryToContext_OverridesTheConfigForOneRun(t *testing.T) {
	t.Parallel()
	for _, configured := range []bool{false, true} {
		m := &recorder{Model: script(t, scripted.Turn{Content: "first"}, scripted.Turn{Content: "second"}, scripted.Turn{Content: "third"})}
		a := mustAgent(t, Config{DB: testdbs.SQLite(t), AddHistoryToContext: configured, Model: m})
		ctx := context.Background()
		if _, err := a.Run(ctx, run.TextInput("one"), WithSessionID("s")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(ctx, run.TextInput("two"), WithSessionID("s"), WithAddHistoryToContext(!configured)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(ctx, run.TextInput("three"), WithSessionID("s")); err != nil {
			t.Fatal(err)
		}
		reqs := m.requests()
		has := func(i int) bool {
			for _, msg := range reqs[i] {
				if msg.Role == model.RoleUser && msg.Content == "one" {
					return true
				}
			}
			return false
		}
		if has(1) != !configured {
			t.Errorf("configured %v: the overriding run saw history %v", configured, has(1))
		}
		if has(2) != configured {
			t.Errorf("configured %v: the next run saw history %v", configured, has(2))
		}
	}
}
