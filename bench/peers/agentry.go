package peers

import (
	"context"
	"iter"
	"strconv"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// agentryModel adapts Mock to Agentry's model.Model.
type agentryModel struct{ m *Mock }

func (a agentryModel) Info() model.Info {
	return model.Info{ID: "mock", Name: "mock", Provider: "mock"}
}

func (a agentryModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	text, call := a.decideReq(req)
	msg := model.Message{Role: model.RoleAssistant, Content: text}
	if call {
		msg.ToolCalls = []model.ToolCall{{ID: "call_1", Name: ToolName, Arguments: ToolArgs}}
	}
	return &model.Response{Message: msg}, nil
}

func (a agentryModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	text, call := a.decideReq(req)
	return func(yield func(*model.Chunk, error) bool) {
		c := &model.Chunk{Content: text}
		if call {
			c.ToolCalls = []model.ToolCallDelta{{ID: "call_1", Name: ToolName, Arguments: ToolArgs}}
		}
		yield(c, nil)
	}
}

// ReadsHistory: the mock reads the whole request through All
// (model.HistoryReader), as Agentry's providers do.
func (a agentryModel) ReadsHistory() bool { return true }

func (a agentryModel) decideReq(req *model.Request) (string, bool) {
	users, last := 0, false
	for _, msg := range req.All() {
		if msg.Role == model.RoleUser {
			users++
		}
		last = msg.Role == model.RoleTool
	}
	return a.m.decide(users-1, last)
}

func agentryTool() tool.Tool {
	return tool.MustFunc(tool.FuncConfig{Name: ToolName, Description: ToolDesc},
		func(_ context.Context, in WeatherArgs) (string, error) { return Weather(in), nil })
}

// AgentryAgent builds an Agentry agent on m with the tool; history is 0 (none),
// -1 (whole history) or n (last n runs), kept in the in-memory driver.
func AgentryAgent(m *Mock, tools []tool.Tool, history int) (*agent.Agent, error) {
	cfg := agent.Config{Name: "Bench", Instructions: agent.Instructions{Instruction}, Model: agentryModel{m}, Tools: tools}
	if history != 0 {
		cfg.DB = db.New("", memory.New())
		cfg.AddHistoryToContext = true
		cfg.NumHistoryRuns = history
		if history < 0 {
			cfg.NumHistoryRuns = Turns + 1
		}
	}
	return agent.New(cfg)
}

// AgentryAsk runs one turn and returns the answer.
func AgentryAsk(ctx context.Context, a *agent.Agent, text, session string) (string, error) {
	var opts []agent.RunOption
	if session != "" {
		opts = append(opts, agent.WithSessionID(session))
	}
	out, err := a.Run(ctx, run.TextInput(text), opts...)
	if err != nil {
		return "", err
	}
	return out.ContentString(), nil
}

// AgentryConversation runs the 25 turns in a new session, then deletes the
// session with its runs: the peers drop their history with the conversation,
// and a store that kept every conversation of a benchmark would grow with
// b.N (see the package doc).
func AgentryConversation(ctx context.Context, a *agent.Agent, n int, inputs []string) (string, error) {
	sid := "peers-" + strconv.Itoa(n)
	var last string
	for _, in := range inputs {
		ans, err := AgentryAsk(ctx, a, in, sid)
		if err != nil {
			return "", err
		}
		last = ans
	}
	if err := a.DB().DeleteSessions(ctx, sid); err != nil {
		return "", err
	}
	return last, nil
}
