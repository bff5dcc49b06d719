package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// SearchKnowledgeToolName is the tool SearchKnowledge gives the model (Agno's name).
const SearchKnowledgeToolName = "search_knowledge_base"

func checkKnowledgeConfig(cfg *Config) error {
	if cfg.Knowledge == nil && (cfg.SearchKnowledge || cfg.AddKnowledgeToContext || len(cfg.KnowledgeFilters) > 0) {
		return errors.New("agent: SearchKnowledge, AddKnowledgeToContext and KnowledgeFilters need Config.Knowledge")
	}
	if cfg.SearchKnowledge {
		for _, t := range cfg.Tools {
			if t != nil && t.Definition().Name == SearchKnowledgeToolName {
				return fmt.Errorf("agent: a tool is named %q, which SearchKnowledge adds", SearchKnowledgeToolName)
			}
		}
	}
	return nil
}

// runTools is the agent's own tools, the offload tools and the knowledge
// search tool.
func (a *Agent) runTools() []tool.Tool {
	tools := a.toolsWithOffload()
	if a.conf().Knowledge != nil && a.conf().SearchKnowledge {
		tools = append(slices.Clip(tools), a.knowledgeTool())
	}
	return tools
}

// messageReferences is Agno's MessageReferences: the query, the documents
// found (Document.to_dict) and the seconds the search took.
type messageReferences struct {
	Query      string           `json:"query"`
	References []map[string]any `json:"references"`
	Time       float64          `json:"time"`
}

// referenceLog is a run's knowledge state: the references its searches
// found, and the filters they use.
type referenceLog struct {
	// filters are Config.KnowledgeFilters with WithKnowledgeFilters over
	// them; read-only once the run started.
	filters map[string]any
	mu      sync.Mutex
	refs    []messageReferences
}

type referenceLogKey struct{}

func (st *state) withReferenceLog(ctx context.Context) context.Context {
	if st.a.conf().Knowledge == nil {
		return ctx
	}
	filters := st.a.conf().KnowledgeFilters
	if over := st.opts.get().knowledgeFilters; len(over) > 0 {
		filters = maps.Clone(filters)
		if filters == nil {
			filters = make(map[string]any, len(over))
		}
		maps.Copy(filters, over)
	}
	return context.WithValue(ctx, referenceLogKey{}, &referenceLog{filters: filters})
}

// knowledgeFilters are the filters of ctx's run (Config.KnowledgeFilters
// outside a run).
func (a *Agent) knowledgeFilters(ctx context.Context) map[string]any {
	if l, ok := ctx.Value(referenceLogKey{}).(*referenceLog); ok {
		return l.filters
	}
	return a.conf().KnowledgeFilters
}

func record(ctx context.Context, query string, docs []knowledge.Document, took time.Duration) {
	l, ok := ctx.Value(referenceLogKey{}).(*referenceLog)
	if !ok || len(docs) == 0 {
		return
	}
	refs := make([]map[string]any, len(docs))
	for i, d := range docs {
		refs[i] = d.Reference()
	}
	l.mu.Lock()
	l.refs = append(l.refs, messageReferences{Query: query, References: refs, Time: float64(took.Microseconds()) / 1e6})
	l.mu.Unlock()
}

// applyReferences stores the run's references in Agno's shape.
func (st *state) applyReferences(out *run.Output) {
	l, ok := st.ctx.Value(referenceLogKey{}).(*referenceLog)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refs) > 0 {
		out.References, _ = json.Marshal(l.refs)
	}
}

// searchAsRunUser searches with the run's user scope: the user's content
// and shared content; a run without a user sees shared content only.
func (a *Agent) searchAsRunUser(ctx context.Context, query string) ([]knowledge.Document, time.Duration, error) {
	if _, scoped := db.UserScope(ctx); !scoped {
		rc, _ := FromContext(ctx)
		ctx = db.WithUserScope(ctx, rc.UserID)
	}
	start := time.Now()
	docs, err := a.conf().Knowledge.Search(ctx, query, a.knowledgeFilters(ctx), 0)
	return docs, time.Since(start), err
}

type knowledgeQuery struct {
	Query string `json:"query" jsonschema:"the query to search for"`
}

func (a *Agent) knowledgeTool() tool.Tool {
	t, err := tool.Func(tool.FuncConfig{Name: SearchKnowledgeToolName,
		Description: "Use this function to search the knowledge base for information about a query."},
		func(ctx context.Context, in knowledgeQuery) (string, error) {
			docs, took, err := a.searchAsRunUser(ctx, in.Query)
			if err != nil {
				return "", fmt.Errorf("searching the knowledge base: %w", err)
			}
			if len(docs) == 0 {
				return "No documents found", nil
			}
			record(ctx, in.Query, docs, took)
			return referencesJSON(docs), nil
		})
	if err != nil {
		panic(err) // a fixed, valid definition
	}
	return t
}

func referencesJSON(docs []knowledge.Document) string {
	refs := make([]map[string]any, len(docs))
	for i, d := range docs {
		refs[i] = d.Reference()
	}
	b, _ := json.MarshalIndent(refs, "", "  ")
	return string(b)
}

// addKnowledgeToUser searches with the user's input and appends the hits to
// the user message, as Agno's add_knowledge_to_context does. A failed
// search leaves the message as it is (logged).
func (st *state) addKnowledgeToUser(input string) {
	a := st.a
	if a.conf().Knowledge == nil || !a.conf().AddKnowledgeToContext || strings.TrimSpace(input) == "" {
		return
	}
	docs, took, err := a.searchAsRunUser(st.ctx, input)
	if err != nil {
		slog.WarnContext(st.ctx, "agent: knowledge search for the context failed", "run_id", st.out.RunID, "err", err)
		return
	}
	if len(docs) == 0 {
		return
	}
	record(st.ctx, input, docs, took)
	for i := len(st.msgs) - 1; i >= 0; i-- {
		if st.msgs[i].Role == model.RoleUser {
			st.msgs[i].Content += "\n\nUse the following references from the knowledge base if it helps:\n<references>\n" +
				referencesJSON(docs) + "\n</references>"
			return
		}
	}
}
