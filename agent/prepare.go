package agent

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// prepared holds what every run needs and New deliberately does not compute.
type prepared struct {
	// comp is the identity runs are stamped with (Config.Component or the
	// agent's own); id is comp.ID.
	comp      run.Component
	id        string
	model     model.Model
	reasoning model.Model
	fallback  *model.FallbackConfig
	info      model.Info
	// toolIndex holds Config.Tools; a run with ToolProviders uses its own.
	*toolIndex
	setErr error
	// system is the static part of the system message.
	system    string
	agentData json.RawMessage
	schema    *compiledSchema
	// Controls, prepared (controls.go).
	inputSchema *inputSchema
	parserModel model.Model
	outputModel model.Model
	exec        ToolHandler
	timezone    *time.Location
	// runContext: tools or hooks may read FromContext.
	runContext bool
	history    historyCache
	// storedComponent: the session's agent_data or team_data as the store
	// gives it back, known to equal agentData (persist.go).
	storedComponent jsonMemo
}

func (a *Agent) prep() *prepared {
	a.once.Do(func() { a.p = a.prepare() })
	return a.p
}

func (a *Agent) prepare() *prepared {
	c := a.conf()
	comp := c.Component
	if comp.Type == "" {
		comp = run.Component{Type: run.TypeAgent, ID: DefaultID(c.ID, c.Name), Name: c.Name}
	}
	p := &prepared{comp: comp, id: comp.ID, model: c.Model, reasoning: c.ReasoningModel}
	if c.ModelRetry != nil {
		p.model = model.WithRetry(p.model, *c.ModelRetry)
		if p.reasoning != nil {
			p.reasoning = model.WithRetry(p.reasoning, *c.ModelRetry)
		}
	}
	p.info = p.model.Info()
	switch {
	case c.FallbackConfig != nil:
		fc := *c.FallbackConfig
		p.fallback = &fc
	case len(c.FallbackModels) > 0:
		p.fallback = &model.FallbackConfig{OnError: c.FallbackModels}
	}
	if p.fallback != nil && c.ModelRetry != nil {
		for _, list := range []*[]model.Model{&p.fallback.OnError, &p.fallback.OnRateLimit, &p.fallback.OnContextOverflow} {
			wrapped := make([]model.Model, len(*list))
			for i, m := range *list {
				wrapped[i] = model.WithRetry(m, *c.ModelRetry)
			}
			*list = wrapped
		}
	}
	p.toolIndex, p.setErr = newToolIndex(a.runTools())
	p.system = a.staticSystem()
	if a.off != nil {
		p.system = strings.TrimSpace(p.system + "\n\n" + offload.SystemPrompt)
	}
	data := map[string]any{comp.IDField(): p.id, "model": map[string]string{"id": p.info.ID, "name": p.info.Name, "provider": p.info.Provider}}
	if comp.Name != "" {
		data["name"] = comp.Name
	}
	p.agentData, _ = json.Marshal(data)
	p.schema = a.outputSchema
	a.prepareControls(p)
	return p
}

// toolIndex is a run's tools: their definitions, the specs sent to the
// model and the Set executing them.
type toolIndex struct {
	tools  []tool.Tool
	defs   []tool.Definition
	specs  []model.ToolSpec
	byName map[string]int // only for many tools; small sets are scanned
	set    *tool.Set
	hitl   bool
}

// newToolIndex indexes tools. An invalid set is returned with its error
// (and an empty Set), so a run reports it when it starts.
func newToolIndex(tools []tool.Tool) (*toolIndex, error) {
	p := &toolIndex{}
	var err error
	if n := len(tools); n > 0 {
		p.tools = tools
		p.defs = make([]tool.Definition, n)
		p.specs = make([]model.ToolSpec, n)
		for i, t := range tools {
			d := t.Definition()
			p.defs[i] = d
			p.specs[i] = d.Spec()
			if d.RequiresConfirmation || d.RequiresUserInput || d.ExternalExecution {
				p.hitl = true
			}
		}
		p.set, err = tool.NewSet(tools)
		if n > 8 {
			p.byName = make(map[string]int, n)
			for i, d := range p.defs {
				p.byName[d.Name] = i
			}
		}
	}
	if p.set == nil {
		p.set, _ = tool.NewSet(nil)
	}
	return p, err
}

// lookup returns the index of the tool named name, or -1.
func (p *toolIndex) lookup(name string) int {
	if p.byName != nil {
		if i, ok := p.byName[name]; ok {
			return i
		}
		return -1
	}
	for i := range p.defs {
		if p.defs[i].Name == name {
			return i
		}
	}
	return -1
}

// staticSystem builds the parts of the system message that do not change
// between runs, in Agno's layout.
func (a *Agent) staticSystem() string {
	c := a.conf()
	if c.SystemMessage != "" {
		return c.SystemMessage
	}
	var b strings.Builder
	if c.Description != "" {
		b.WriteString(c.Description)
		b.WriteString("\n")
	}
	switch len(c.Instructions) {
	case 0:
	case 1:
		b.WriteString(c.Instructions[0])
		b.WriteString("\n")
	default:
		b.WriteString("<instructions>\n")
		for _, in := range c.Instructions {
			b.WriteString("- ")
			b.WriteString(in)
			b.WriteString("\n")
		}
		b.WriteString("</instructions>\n")
	}
	if c.ExpectedOutput != "" {
		b.WriteString("\n<expected_output>\n")
		b.WriteString(c.ExpectedOutput)
		b.WriteString("\n</expected_output>\n")
	}
	if c.AdditionalContext != "" {
		b.WriteString("\n")
		b.WriteString(c.AdditionalContext)
		b.WriteString("\n")
	}
	if c.Markdown && len(c.OutputSchema) == 0 {
		b.WriteString("\n<additional_information>\n- Use markdown to format your answers.\n</additional_information>\n")
	}
	return strings.TrimSpace(b.String())
}
