package peers

import (
	"context"
	"errors"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// einoModel adapts Mock to Eino's ToolCallingChatModel.
type einoModel struct{ m *Mock }

func (e einoModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	users := 0
	for _, msg := range in {
		if msg.Role == schema.User {
			users++
		}
	}
	last := len(in) > 0 && in[len(in)-1].Role == schema.Tool
	text, call := e.m.decide(users-1, last)
	if call {
		return schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function",
			Function: schema.FunctionCall{Name: ToolName, Arguments: ToolArgs}}}), nil
	}
	return schema.AssistantMessage(text, nil), nil
}

func (e einoModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := e.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (e einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return e, nil }

// EinoTool is the weather tool as an Eino InvokableTool (arguments decoded by
// Eino's InferTool).
func EinoTool() (tool.BaseTool, error) {
	return utils.InferTool(ToolName, ToolDesc, func(_ context.Context, in WeatherArgs) (string, error) {
		return Weather(in), nil
	})
}

// EinoReact builds Eino's react agent.
func EinoReact(ctx context.Context, m *Mock, tools []tool.BaseTool) (*react.Agent, error) {
	return react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: einoModel{m},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: tools},
		MessageModifier:  react.NewPersonaModifier(Instruction),
	})
}

// EinoADK builds Eino's ADK ChatModelAgent and its runner.
func EinoADK(ctx context.Context, m *Mock, tools []tool.BaseTool) (*adk.Runner, error) {
	a, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "Bench", Description: "benchmark agent", Instruction: Instruction,
		Model:       einoModel{m},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
	})
	if err != nil {
		return nil, err
	}
	return adk.NewRunner(ctx, adk.RunnerConfig{Agent: a}), nil
}

// EinoRunner is one way of asking an Eino agent (react or ADK).
type EinoRunner func(ctx context.Context, msgs []*schema.Message) (*schema.Message, error)

// ReactRunner asks the react agent.
func ReactRunner(a *react.Agent) EinoRunner {
	return func(ctx context.Context, msgs []*schema.Message) (*schema.Message, error) {
		return a.Generate(ctx, msgs)
	}
}

// ADKRunner asks the ADK runner and returns the last assistant message.
func ADKRunner(r *adk.Runner) EinoRunner {
	return func(ctx context.Context, msgs []*schema.Message) (*schema.Message, error) {
		it := r.Run(ctx, msgs)
		var last *schema.Message
		for {
			ev, ok := it.Next()
			if !ok {
				break
			}
			if ev.Err != nil {
				return nil, ev.Err
			}
			if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Role == schema.Assistant {
				msg, err := ev.Output.MessageOutput.GetMessage()
				if err != nil {
					return nil, err
				}
				last = msg
			}
		}
		if last == nil {
			return nil, errors.New("adk: no assistant message")
		}
		return last, nil
	}
}

// EinoConversation runs the 25 turns holding the history in a slice (Eino
// has no session store; this is how its users keep one): history -1 sends the
// whole history, n the last n runs (user message and answer each).
func EinoConversation(ctx context.Context, ask EinoRunner, inputs []string, history int) (string, error) {
	var hist []*schema.Message
	var last string
	for _, in := range inputs {
		window := hist
		if history > 0 && len(window) > 2*history {
			window = window[len(window)-2*history:]
		}
		msgs := make([]*schema.Message, 0, len(window)+1)
		msgs = append(msgs, window...)
		user := schema.UserMessage(in)
		msgs = append(msgs, user)
		out, err := ask(ctx, msgs)
		if err != nil {
			return "", err
		}
		hist = append(hist, user, out)
		last = out.Content
	}
	return last, nil
}
