package peers

import (
	"context"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/tools"
)

// lcgModel adapts Mock to LangChainGo's llms.Model.
type lcgModel struct{ m *Mock }

func (l lcgModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	users, afterTool := 0, false
	for _, mc := range msgs {
		switch mc.Role {
		case llms.ChatMessageTypeHuman:
			users++
		case llms.ChatMessageTypeSystem:
			for _, p := range mc.Parts {
				if t, ok := p.(llms.TextContent); ok {
					users += countHuman(t.Text)
				}
			}
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == llms.ChatMessageTypeTool {
		afterTool = true
	}
	text, call := l.m.decide(users-1, afterTool)
	choice := &llms.ContentChoice{Content: text}
	if call {
		choice.ToolCalls = []llms.ToolCall{{ID: "call_1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: ToolName, Arguments: ToolArgs}}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

func (l lcgModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, opts...)
}

// lcgTool is the weather tool; LangChainGo tools take the raw argument string.
type lcgTool struct{}

func (lcgTool) Name() string        { return ToolName }
func (lcgTool) Description() string { return ToolDesc }
func (lcgTool) Call(_ context.Context, input string) (string, error) {
	return weatherJSON(input)
}

// LCGTools is the tool list.
func LCGTools() []tools.Tool { return []tools.Tool{lcgTool{}} }

// LCGExecutor builds LangChainGo's function-calling agent and executor;
// history is 0 (none), -1 (whole conversation buffer) or n (window of n runs).
func LCGExecutor(m *Mock, ts []tools.Tool, history int) *agents.Executor {
	opts := []agents.Option{agents.NewOpenAIOption().WithSystemMessage(Instruction)}
	var exec []agents.Option
	if history != 0 {
		opts = append(opts, agents.NewOpenAIOption().WithExtraMessages([]prompts.MessageFormatter{
			prompts.NewSystemMessagePromptTemplate("{{.history}}", []string{"history"}),
		}))
		if history < 0 {
			exec = append(exec, agents.WithMemory(memory.NewConversationBuffer()))
		} else {
			exec = append(exec, agents.WithMemory(memory.NewConversationWindowBuffer(history)))
		}
	}
	return agents.NewExecutor(agents.NewOpenAIFunctionsAgent(lcgModel{m}, ts, opts...), exec...)
}

// LCGAsk runs one turn.
func LCGAsk(ctx context.Context, e *agents.Executor, text string) (string, error) {
	out, err := chains.Call(ctx, e, map[string]any{"input": text})
	if err != nil {
		return "", err
	}
	s, _ := out["output"].(string)
	return s, nil
}

// LCGConversation runs the 25 turns with a fresh executor and memory.
func LCGConversation(ctx context.Context, m *Mock, ts []tools.Tool, inputs []string, history int) (string, error) {
	e := LCGExecutor(m, ts, history)
	var last string
	for _, in := range inputs {
		ans, err := LCGAsk(ctx, e, in)
		if err != nil {
			return "", err
		}
		last = ans
	}
	return last, nil
}
